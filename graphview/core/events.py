"""The event vocabulary shared by the runner and every view.

An event is a plain ``dict`` of numbers, strings, lists and ``None`` with the key ``"ev"``
naming its kind. Events are the only thing that crosses the process boundary: never a tensor,
never an autograd node. The position of an event in its run's stream is its *index*; every
view shows the state "at an index".

Identifiers are small integers assigned by the runner:

``tid``  a tensor (one Python tensor object; ``(tid, version)`` names a state of it)
``vid``  an autograd node (``grad_fn`` or ``AccumulateGrad``), stamped into ``node.metadata``
``sid``  one saved tensor (a ``SavedVariable`` packed by autograd)
``oid``  a recorded op, numbered in execution order (stable across re-runs of one script)
``bid``  a backward / ``autograd.grad`` call

Value summaries (``values`` / ``stats`` fields) are either the full flat list of values for
tensors of at most :data:`FULL_VALUES_MAX` elements or a dict of statistics
(``min, max, mean, norm, numel, nan, inf``).

The kinds, with their fields (``line`` is a line of the user's script, ``None`` when the
event did not come from it):

run_start      script, mode ("plain" | "step"), torch, python, devices, options, notes
run_end        status ("ok" | "error" | "exit" | "stopped" | "timeout" | "crashed"),
               exit_code, message
step_start     step                       (step scripts: one per call of ``step()``)
step_end       step, result (summary of what step() returned, or None)
stdout/stderr  text                       (the script's output, capped per run)
output_capped  stream, bytes              (output beyond the cap was dropped)
tensor         tid, version, name, kind ("param" | "buffer" | "input" | "activation" | "grad"), shape,
               dtype, device, requires_grad, is_leaf, grad_fn (vid | None), base (tid | None),
               line, values | stats
name           tid, name                  (the script bound the tensor to a variable)
value          tid, version, values | stats, reason   (new values after an update)
op             oid, op, line, module, module_type, inputs [[tid, version]...],
               outputs [[tid, version]...], grad_fn (vid | None), mode, inplace,
               recompute (bid, only for ops a checkpoint recomputes inside that backward)
node           vid, name, next [[vid | None, input_nr]...], seq, leaf (tid | None), custom
saved          sid, bytes, storage, device, kind, shape, dtype, owner (vid | None), attr,
               recompute (bid, only for tensors a checkpoint recompute saves)
own            sid, owner (vid), attr     (the node that holds a saved tensor became known)
node_dead      vid                        (autograd destroyed the node: nothing references it)
release        sid                        (autograd dropped the saved tensor)
module_enter   path, type                 module_exit  path
module_mode    type, training, line       (the script called model.train() / model.eval())
mode           mode ("grad" | "no_grad" | "inference_mode"), line
detach         src (tid), dst (tid), line, forced
retain_grad    tid, line
grad_read      tid, none (bool), line     (the script read ``.grad``)
backward_start bid, api ("backward" | "grad"), roots [vid...], root_tensors [tid...],
               seeds [summary | None...], retain_graph, create_graph, inputs [tid...],
               forced [option names], line
bw_node        bid, vid, grads_in [summary | None...]   (a node starts executing)
               or grads_in None and from_edge [consumer vid, i]: the node is fed by that one
               edge, so its incoming gradient is the consumer's grads_out[i]
bw_node_done   bid, vid, grads_out [summary | None...]  (one per next edge)
accumulate     bid, tid, vid, increment, grad (new value of ``.grad``), first (bool)
tensor_grad    bid, tid, grad             (``.grad`` of a tensor that called retain_grad)
grad_result    bid, tid, grad             (a result of ``autograd.grad`` for input tid)
backward_end   bid, ok, freed (saved tensors released, i.e. no retain_graph)
grad_reset     tids, how ("set_to_none" | "zero" | "assign_none" | "assign"), line, source
optimizer_step optimizer, tids, line
alloc          device, bytes              (CUDA allocator's ``memory_allocated``, on change)
error          type, message, traceback [{file, line, func, text}...], line, vid, bid,
               limit (bool: torch refused something graphview needs to record; message says what)
gradcheck      tensor, shape, autograd [...], numeric [...], max_abs_error, max_rel_error, eps
               (a gradient check run: central differences in float64)
"""

from __future__ import annotations

#: Version of the event vocabulary and of the trace file layout.
SCHEMA_VERSION = 1

#: Characters of each of the script's output streams a run keeps (``output_capped`` says how many more came).
OUTPUT_CAP = 1 << 20

#: Tensors with at most this many elements carry their full values.
FULL_VALUES_MAX = 64

#: Every kind of event, for validation and documentation.
EVENT_KINDS = frozenset(
    {
        "run_start", "run_end", "step_start", "step_end", "stdout", "stderr", "output_capped",
        "tensor", "name", "value", "op", "node", "node_dead", "saved", "own", "release", "module_enter",
        "module_exit", "module_mode", "mode", "detach", "retain_grad", "grad_read", "backward_start",
        "bw_node", "bw_node_done", "accumulate", "tensor_grad", "grad_result", "backward_end",
        "grad_reset", "optimizer_step", "alloc", "error", "gradcheck",
    }
)

#: Statuses of ``run_end`` that mean the script did not finish normally.
FAILED_STATUSES = frozenset({"error", "exit", "stopped", "timeout", "crashed"})


def summary_text(summary: object, limit: int | None = None) -> str:
    """A short human-readable form of a value summary.

    A summary is ``None`` (no tensor) or a dict with ``shape`` and either ``values`` (the flat
    list of all values; ``[real, imag]`` pairs when ``complex``) or ``stats`` (``min, max,
    mean, norm, numel, nan, inf``; of the magnitudes for complex tensors; for parameters,
    inputs and ``.grad`` also ``hist``: counts in equal bins from min to max).
    """
    if summary is None:
        return "None"
    if not isinstance(summary, dict):
        return _num(summary)
    if "values" in summary:
        vals = summary["values"]
        if summary.get("complex"):
            vals = [_Complex(v) for v in vals]
        if not summary.get("shape"):
            return _num(vals[0]) if vals else "[]"
        if limit is not None and len(vals) > limit:  # at most ``limit`` values, then how many more
            return "[" + ", ".join(_num(v) for v in vals[:limit]) + f", … {len(vals) - limit} more]"
        return "[" + ", ".join(_num(v) for v in vals) + "]"
    stats = summary.get("stats") or {}
    parts = [f"{k}={_num(stats[k])}" for k in ("min", "max", "mean", "norm") if stats.get(k) is not None]
    if stats.get("nan"):
        parts.append(f"nan={stats['nan']}")
    if stats.get("inf"):
        parts.append(f"inf={stats['inf']}")
    return f"[{stats.get('numel', '?')} values: " + ", ".join(parts) + "]"


def summary_scalar(summary: object) -> float | None:
    """The single value of a one-element summary, else ``None``."""
    if isinstance(summary, dict) and len(summary.get("values") or ()) == 1:
        return summary["values"][0]
    return None


def _num(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


class _Complex:
    def __init__(self, pair: list) -> None:
        self.pair = pair

    def __str__(self) -> str:
        re_, im = self.pair
        if isinstance(re_, float) and isinstance(im, float):
            return f"{re_:.6g}{im:+.6g}j"
        return f"{re_}+{im}j"
