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

run_start      script, mode ("plain" | "step" | "inprocess"), torch, python, devices, options, notes,
               argv (the script's ``sys.argv``), rank and world_size (a process of a distributed job)
run_end        status ("ok" | "error" | "exit" | "stopped" | "timeout" | "crashed"),
               exit_code, message
step_start     step                       (step scripts: one per call of ``step()``)
step_end       step, result (summary of what step() returned, or None),
               tid (the returned tensor, when the recorder saw it),
               seconds (the step's wall time, recording included)
stdout/stderr  text                       (the script's output, capped per run)
output_capped  stream, bytes              (output beyond the cap was dropped)
tensor         tid, version, name, kind ("param" | "buffer" | "input" | "activation" | "grad"), shape,
               dtype, device, requires_grad, is_leaf, grad_fn (vid | None), base (tid | None),
               line, values | stats (version-1 traces also have new: whether it was first seen
               there, which no view reads)
name           tid, name [, kind, also]   (the script bound the tensor to a variable, or the tensor's
                                          model was first called: its qualified name; kind "buffer"
                                          for a buffer recorded before that as an input; also: the
                                          model's other names for it, a tied weight's)
value          tid, version, values | stats, reason   (new values after an update)
op             oid, op, line, module, module_type, inputs [[tid, version]...],
               outputs [[tid, version]...], grad_fn (vid | None), mode, inplace,
               recompute (bid, only for ops a checkpoint recomputes inside that backward)
node           vid, name, next [[vid | None, input_nr]...], seq, leaf (tid | None), custom
saved          sid, bytes, storage, device, kind, shape, dtype, owner (vid | None), attr,
               recompute (bid, only for tensors a checkpoint recompute saves)
own            sid, owner (vid), attr     (the node that holds a saved tensor became known)
node_dead      vid                        (autograd destroyed the node: nothing references it)
tensor_dead    tid                        (torch freed the tensor: nothing references it)
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
accumulate     bid, tid, vid, increment, grad (new value of ``.grad``), first (bool);
               increment is left out when it is the gradient the node's bw_node showed arriving,
               grad when it equals the increment (``.grad`` was None and is now that tensor):
               ``Run.accumulation`` gives both
tensor_grad    bid, tid, grad             (``.grad`` of a tensor that called retain_grad)
grad_result    bid, tid, grad             (a result of ``autograd.grad`` for input tid)
backward_end   bid, ok, freed (saved tensors released, i.e. no retain_graph)
grad_reset     tids, how ("set_to_none" | "zero" | "assign_none" | "assign" | "in_place": an op wrote
               into the grad, its name in source), line, source, value (summary of the new .grad,
               for "assign" and "in_place")
optimizer_step optimizer, tids, line
alloc          device, bytes              (CUDA allocator's ``memory_allocated``, on change)
error          type, message, traceback [{file, line, func, text}...], line, vid, bid,
               limit (bool: torch refused something graphview needs to record; message says what),
               op, inputs [tid...], module (where an op the script called raised in forward: its
               name, the recorded tensors it took, the module it ran in; absent elsewhere)
gradcheck      tensor, shape, autograd [...], numeric [...], max_abs_error, max_rel_error, eps
               (a gradient check run: central differences in float64)
paused         line                       (in-process: ``rec.pause()``; nothing is recorded until
resumed        line                        ``rec.resume()``, but nodes and saved tensors the paused
                                           code frees are)
phase          phase ("torch": the runner is importing torch)   what the runner is doing before
               ``run_start``; news for the window's status bar, not part of the run: the app
               hands it to the status bar, and traces never hold it
"""

from __future__ import annotations

import math
import re

#: Version of the event vocabulary and of the trace file layout. Version 3: a summary's full values
#: may be packed (base64 of their bytes, graphview/core/records.py); version 2: a line after the
#: header is a record (graphview/core/records.py), which may carry several events, or an event;
#: version 1: an event a line. The events are the same.
SCHEMA_VERSION = 3

#: Characters of each of the script's output streams a run keeps (``output_capped`` says how many more came).
OUTPUT_CAP = 1 << 20

#: Tensors with at most this many elements carry their full values.
FULL_VALUES_MAX = 64

#: What the statistics of a large tensor are (``stats["sampled"]``), for views that explain them.
SAMPLE_NOTE = ("values marked ≈ come from a sample: to keep recording fast, an activation or a gradient on its "
               "way of more than 262,144 values is summarized from 65,536 evenly spaced ones. The sample's min and "
               "max are shown, mean and norm are estimates, and what lies outside the sample (a NaN, a few large "
               "values) is not seen. Parameters, inputs, .grad and the gradient on its way into a .grad (also through "
               "a weight's .t()) are always exact")

#: Statuses of ``run_end`` that mean the script did not finish normally.
FAILED_STATUSES = frozenset({"error", "exit", "stopped", "timeout", "crashed"})


def summary_text(summary: object, limit: int | None = None) -> str:
    """A short human-readable form of a value summary.

    A summary is ``None`` (no tensor) or a dict with ``shape`` and either ``values`` (the flat
    list of all values; ``[real, imag]`` pairs when ``complex``) or ``stats`` (``min, max,
    mean, norm, numel, nan, inf``; of the magnitudes for complex tensors; for parameters,
    inputs and ``.grad`` also ``hist``: counts in equal bins from min to max; with ``sampled``
    when they are of that many evenly spaced values, not all ``numel``; with ``nnz`` for a sparse
    tensor: how many of them it stores, the others being zeros).
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
    sampled = stats.get("sampled")
    # statistics of a sample (see summaries.py, NOTE [Sampled statistics]): its own min and max,
    # estimates of the whole tensor's mean and norm
    forms = _SAMPLE_FORMS if sampled else _EXACT_FORMS
    parts = [forms[k] + _num(stats[k]) for k in ("min", "max", "mean", "norm") if stats.get(k) is not None]
    if stats.get("nan"):
        parts.append(f"nan={stats['nan']}" + (" in the sample" if sampled else ""))
    if stats.get("inf"):
        parts.append(f"inf={stats['inf']}" + (" in the sample" if sampled else ""))
    head = f"[{stats.get('numel', '?')} values" + (f", a sample of {sampled}" if sampled else "") + (
        f", sparse: {stats['nnz']} stored" if stats.get("nnz") is not None else "")
    return head + ": " + ", ".join(parts) + "]"


_EXACT_FORMS = {"min": "min=", "max": "max=", "mean": "mean=", "norm": "norm="}
_SAMPLE_FORMS = {"min": "sample min=", "max": "sample max=", "mean": "mean≈", "norm": "norm≈"}


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


# --------------------------------------------------------------------------- the schema
# Every kind's fields and their types, as the runner writes them. A trace reader checks each
# event against this table (:func:`check_event`) before any view sees it, so views may rely on
# it: a new kind or field of the recorder goes here too (a test records every sample and checks
# it). Fields not listed are allowed and passed on; listed fields with ``?`` may be missing.

#: How deeply a free-form value (``options``, a ``result``) may nest.
MAX_DEPTH = 16
#: Dimensions of a shape, and the largest size of one.
MAX_DIMS = 64

# The limits a trace's numbers and strings are held to (see docs/safety.md). Whoever wrote a trace
# chose them: a reader that took any integer JSON can spell (10**4000) or any string length on
# trust would overflow the model's int64 arrays, or spend seconds and gigabytes drawing one name.

#: The largest count an event may hold (bytes, elements, ids, versions, steps, line numbers): every
#: such number lies in 0..MAX_COUNT (a signed one, an exit code, in -MAX_COUNT..MAX_COUNT), and
#: a float holds each of them exactly. Ids count up from 1 in the recorder.
MAX_COUNT = 1 << 53
#: The largest magnitude of a tensor element written as an integer (an int64 or uint64 tensor's).
MAX_ELEMENT = 1 << 64
#: The most elements a shape may describe (torch counts them in an int64).
MAX_NUMEL = 1 << 63
#: The most bins a value histogram may have (the recorder writes 24).
MAX_BINS = 1024
#: The most bytes all saved tensors of a trace may add up to (each one's bytes counted once, when it
#: is saved): every memory figure graphview derives from them then fits an int64, and a float exactly.
MAX_SAVED_TOTAL = MAX_COUNT
#: Characters of a string in an event (a name, a type, a path, a dtype): a longer one is cut there
#: and ends in :data:`CUT_MARK`. The free text of the fields in :data:`TEXT_CAPS` may be longer.
STRING_CAP = 4096
#: Characters of a message or a traceback line.
TEXT_CAP = 64 << 10
#: kind -> {top-level field: cap for every string inside it}: the fields that hold free text.
TEXT_CAPS: dict[str, dict[str, int]] = {
    "stdout": {"text": OUTPUT_CAP}, "stderr": {"text": OUTPUT_CAP},  # what the run itself keeps
    "run_start": {"source": 4 << 20, "notes": TEXT_CAP},  # the script's source (graphview.record())
    "run_end": {"message": TEXT_CAP},
    "error": {"message": TEXT_CAP, "traceback": TEXT_CAP},
}
#: What ends a string that was cut.
CUT_MARK = "…(cut)"


class SchemaError(ValueError):
    """An event that breaks the schema; the message names the field and what is wrong."""


def _is_int(v: object) -> bool:  # a signed number (an exit code, a traceback's line)
    return type(v) is int and -MAX_COUNT <= v <= MAX_COUNT


def _is_count(v: object) -> bool:  # bytes, elements, an id, a version, a step, a line number
    return type(v) is int and 0 <= v <= MAX_COUNT


def _is_num(v: object) -> bool:  # a statistic or an element: a float, an int64's or uint64's value, nan or inf
    t = type(v)
    return t is float or (t is int and -MAX_ELEMENT <= v <= MAX_ELEMENT) or (t is str and v in ("nan", "inf", "-inf"))


def _is_finite(v: object) -> bool:
    return type(v) is int and -MAX_ELEMENT <= v <= MAX_ELEMENT or type(v) is float and math.isfinite(v)


def _is_seconds(v: object) -> bool:  # a duration: finite, not negative, under a year
    return type(v) in (int, float) and 0 <= v < 3.2e7


def _is_value(v: object) -> bool:  # one tensor element: a number, a bool, or a [real, imag] pair
    return _is_num(v) or type(v) is bool or (type(v) is list and len(v) == 2 and all(map(_is_num, v)))


def _depth_ok(v: object) -> bool:
    """A free-form JSON value no deeper than :data:`MAX_DEPTH`, its integers within ±MAX_ELEMENT."""
    stack = [(v, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                return False
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)
        elif type(v) is int:
            if not -MAX_ELEMENT <= v <= MAX_ELEMENT:
                return False
        elif not (v is None or isinstance(v, (str, int, float))):
            return False
    return True


def _list_of(check):
    return lambda v: type(v) is list and all(map(check, v))


def _maybe(check):
    return lambda v: v is None or check(v)


def _is_shape(v: object) -> bool:
    if type(v) is not list or len(v) > MAX_DIMS:
        return False
    if not v:
        return True
    # every size an int (one C pass over the types), then the range from the extremes and the product
    return _only(v, _INT_TYPE) and min(v) >= 0 and max(v) < 1 << 48 and (len(v) == 1 or math.prod(v) <= MAX_NUMEL)


_INT_TYPE = frozenset({int})
#: the types of a tensor element that pass :func:`_is_value` by their type alone
_PLAIN_VALUE_TYPES = frozenset({int, float, bool})


def _only(items: list, types: frozenset) -> bool:
    """Every item's type is one of ``types`` (the set of types is made in C, not item by item in Python)."""
    return set(map(type, items)) <= types


def _elements_ok(values: list) -> bool:
    """Every element of a ``values`` list is one tensor element (:func:`_is_value`)."""
    types = set(map(type, values))
    if types <= _PLAIN_VALUE_TYPES:  # (one C pass over the types; the integers' range after)
        return int not in types or all(-MAX_ELEMENT <= x <= MAX_ELEMENT for x in values if type(x) is int)
    return all(map(_is_value, values))


_STATS_FIELDS = {"min": _is_num, "max": _is_num, "mean": _is_num, "norm": _is_num, "numel": _is_count,
                 "nan": _is_count, "inf": _is_count,
                 "hist": lambda v: type(v) is list and 0 < len(v) <= MAX_BINS and all(map(_is_count, v)),
                 "hist_of": _is_count, "sampled": _is_count, "nnz": _is_count,
                 "of": lambda v: isinstance(v, str)}


def _values_problem(holder: dict) -> str | None:
    """What is wrong with the ``shape`` / ``values`` / ``stats`` of a summary or tensor event."""
    if not _is_shape(holder.get("shape")):
        return "shape is not a list of sizes"
    if "values" in holder:
        values = holder["values"]
        if type(values) is not list or len(values) > FULL_VALUES_MAX or not _elements_ok(values):
            return f"values is not a list of at most {FULL_VALUES_MAX} numbers"
        numel = 1
        for d in holder["shape"]:
            numel *= d
        if numel != len(values):
            return f"values holds {len(values)} numbers for a shape of {numel}"
    elif "stats" in holder:
        stats = holder["stats"]
        if type(stats) is not dict:
            return "stats is not an object"
        for key, check in _STATS_FIELDS.items():
            if key in stats and stats[key] is not None and not check(stats[key]):
                return f"stats.{key} has the wrong type or is out of range"
        if stats.get("hist") is not None:  # bins from min to max: both finite numbers, in order
            low, high = stats.get("min"), stats.get("max")
            if not (_is_finite(low) and _is_finite(high) and low <= high):
                return "stats.hist without a finite min and max (min at most max) to bin from"
    return None


def _is_summary(v: object) -> bool:
    return v is None or (type(v) is dict and _values_problem(v) is None)


_INT, _STR, _BOOL = _is_int, (lambda v: isinstance(v, str)), (lambda v: type(v) is bool)
_COUNT = _ID = _is_count
_OSTR = _maybe(lambda v: isinstance(v, str))
_OCOUNT = _OID = _maybe(_is_count)
_IDS = _list_of(_ID)
_REF = lambda v: type(v) is list and len(v) == 2 and _ID(v[0]) and _COUNT(v[1])  # noqa: E731 - [tid, version]
_REFS = _list_of(_REF)  # an op's inputs and outputs
_EDGES = _list_of(lambda v: type(v) is list and len(v) == 2 and _OID(v[0]) and _COUNT(v[1]))  # a node's next
_FRAME = lambda v: (type(v) is dict and type(v.get("file")) is str and _is_int(v.get("line"))  # noqa: E731
                    and type(v.get("func")) is str and _OSTR(v.get("text")))
_ANY = _depth_ok

_OPTION_FIELDS = {"retain_graph": _BOOL, "create_graph": _BOOL, "detach_at": _list_of(_STR), "grad_mode": _STR,
                  "accumulate": _BOOL, "device": _OSTR, "steps": _COUNT, "args": _list_of(_STR),
                  "checkpoint": _list_of(_STR), "autocast": _OSTR, "save_on_cpu": _BOOL}


def is_options(v: object) -> bool:
    """A dict of run options (``RunOptions.to_dict()``) whose known fields have their types."""
    return (type(v) is dict and _depth_ok(v)
            and all(check(v[key]) for key, check in _OPTION_FIELDS.items() if key in v))


#: kind -> {field: check}; a field name ending in ``?`` may be missing.
SCHEMA: dict[str, dict] = {
    "run_start": {"script": _OSTR, "mode": _STR, "torch": _OSTR, "python": _OSTR, "devices": _list_of(_STR),
                  "options": is_options, "notes": _list_of(_STR), "source?": _OSTR,
                  "argv?": _list_of(_STR), "rank?": _OCOUNT, "world_size?": _OCOUNT},
    "run_end": {"status": _STR, "exit_code": _INT, "message": _STR},
    "step_start": {"step": _COUNT},
    "step_end": {"step": _COUNT, "result": _is_summary, "tid?": _OID, "seconds?": _is_seconds},
    "stdout": {"text": _STR, "native?": _BOOL},
    "stderr": {"text": _STR, "native?": _BOOL},
    "output_capped": {"stream": _STR, "bytes": _COUNT},
    "tensor": {"tid": _ID, "version": _COUNT, "name": _OSTR, "kind": _STR, "shape": _is_shape, "dtype": _STR,
               "device": _STR, "requires_grad": _BOOL, "is_leaf": _BOOL, "grad_fn": _OID, "base": _OID,
               "line": _OCOUNT, "new?": _BOOL},
    "name": {"tid": _ID, "name": _STR, "also?": _list_of(_STR)},
    "value": {"tid": _ID, "version?": _COUNT, "reason?": _STR, "shape": _is_shape},
    "op": {"oid": _ID, "op": _STR, "line": _OCOUNT, "module": _OSTR, "module_type?": _OSTR,
           "inputs": _REFS, "outputs": _REFS, "grad_fn": _OID, "mode": _STR, "inplace": _BOOL,
           "recompute?": _OID},
    "node": {"vid": _ID, "name": _STR, "seq": _OCOUNT, "leaf": _OID, "custom": _BOOL, "line?": _OCOUNT,
             "module?": _OSTR,
             "next": _EDGES},
    "saved": {"sid": _ID, "bytes": _COUNT, "storage": _STR, "device": _STR, "kind": _STR, "shape": _is_shape,
              "dtype": _STR, "owner": _OID, "attr": _OSTR, "recompute?": _OID, "src?": _ID},
    "own": {"sid": _ID, "owner": _ID, "attr": _OSTR},
    "node_dead": {"vid": _ID},
    "tensor_dead": {"tid": _ID},
    "release": {"sid": _ID},
    "module_enter": {"path": _STR, "type": _STR},
    "module_exit": {"path": _STR},
    "module_mode": {"type": _STR, "training": _BOOL, "line": _OCOUNT},
    "mode": {"mode": _STR, "line": _OCOUNT},
    "detach": {"src": _ID, "dst": _ID, "line": _OCOUNT, "forced": _BOOL},
    "retain_grad": {"tid": _ID, "line": _OCOUNT},
    "grad_read": {"tid": _ID, "none": _BOOL, "line": _OCOUNT},
    "backward_start": {"bid": _ID, "api": _STR, "roots": _list_of(_OID), "root_tensors": _IDS,
                       "seeds": _list_of(_is_summary), "retain_graph": _BOOL, "create_graph": _BOOL,
                       "inputs": _IDS, "forced": _list_of(_STR), "line": _OCOUNT},
    "bw_node": {"bid": _ID, "vid": _ID, "grads_in": _maybe(_list_of(_is_summary)),
                "from_edge?": lambda v: type(v) is list and len(v) == 2 and _ID(v[0]) and _COUNT(v[1])},
    "bw_node_done": {"bid": _ID, "vid": _ID, "grads_out": _list_of(_is_summary)},
    "accumulate": {"bid": _OID, "tid": _ID, "vid": _OID, "increment?": _is_summary, "grad?": _is_summary,
                   "first?": _BOOL},
    "tensor_grad": {"bid": _OID, "tid": _ID, "grad": _is_summary},
    "grad_result": {"bid": _ID, "tid": _ID, "grad": _is_summary},
    "backward_end": {"bid": _ID, "ok": _BOOL, "freed?": _BOOL},
    "grad_reset": {"tids": _IDS, "how": _STR, "line": _OCOUNT, "source?": _OSTR, "value?": _is_summary},
    "optimizer_step": {"optimizer": _STR, "tids": _IDS, "line": _OCOUNT},
    "alloc": {"device": _STR, "bytes": _COUNT},
    "error": {"type": _STR, "message": _STR, "traceback": _list_of(_FRAME), "line": _OCOUNT, "vid": _OID,
              "bid": _OID, "limit?": _BOOL, "op?": _STR, "inputs?": _IDS, "module?": _OSTR},
    "paused": {"line": _OCOUNT},
    "resumed": {"line": _OCOUNT},
    "phase": {"phase": _STR},
    "gradcheck": {"tensor": _STR, "shape": _is_shape, "autograd": _list_of(_is_num), "numeric": _list_of(_is_num),
                  "max_abs_error": _is_num, "max_rel_error": _is_num, "eps": _is_num},
}

#: Every kind of event, for validation and documentation.
EVENT_KINDS = frozenset(SCHEMA)

#: kind -> {field: (what it refers to, how)}: ids an event names, which an earlier event must have
#: introduced ("one" a single id or null, "list" a list of them, "refs" [id, version] pairs,
#: "next" a node's [vid or null, input_nr] edges, "edge" bw_node's [consumer vid, i]).
REFERENCES: dict[str, dict] = {
    "tensor": {"grad_fn": ("vid", "one"), "base": ("tid", "one")},
    "name": {"tid": ("tid", "one")},
    "step_end": {"tid": ("tid", "one")},
    "value": {"tid": ("tid", "one")},
    "op": {"inputs": ("tid", "refs"), "outputs": ("tid", "refs"), "grad_fn": ("vid", "one"),
           "recompute": ("bid", "one")},
    "node": {"next": ("vid", "next"), "leaf": ("tid", "one")},
    "saved": {"owner": ("vid", "one"), "recompute": ("bid", "one"), "src": ("vid", "one")},
    "own": {"sid": ("sid", "one"), "owner": ("vid", "one")},
    "release": {"sid": ("sid", "one")},
    "node_dead": {"vid": ("vid", "one")},
    "tensor_dead": {"tid": ("tid", "one")},
    "detach": {"src": ("tid", "one"), "dst": ("tid", "one")},
    "retain_grad": {"tid": ("tid", "one")},
    "grad_read": {"tid": ("tid", "one")},
    "backward_start": {"roots": ("vid", "list"), "root_tensors": ("tid", "list"), "inputs": ("tid", "list")},
    "bw_node": {"bid": ("bid", "one"), "vid": ("vid", "one"), "from_edge": ("vid", "edge")},
    "bw_node_done": {"bid": ("bid", "one"), "vid": ("vid", "one")},
    "accumulate": {"bid": ("bid", "one"), "tid": ("tid", "one"), "vid": ("vid", "one")},
    "tensor_grad": {"bid": ("bid", "one"), "tid": ("tid", "one")},
    "grad_result": {"bid": ("bid", "one"), "tid": ("tid", "one")},
    "backward_end": {"bid": ("bid", "one")},
    "grad_reset": {"tids": ("tid", "list")},
    "optimizer_step": {"tids": ("tid", "list")},
    "error": {"vid": ("vid", "one"), "bid": ("bid", "one"), "inputs": ("tid", "list")},
}


def _ids(value: object, how: str) -> "list | tuple":
    if how == "one":
        return (value,)
    if how == "refs" or how == "next":
        return [item[0] for item in value]
    if how == "edge":
        return [value[0]] if value else []
    return list(value)


#: kind -> (id kind, field): the ids an event introduces.
INTRODUCES = {"tensor": ("tid", "tid"), "node": ("vid", "vid"), "saved": ("sid", "sid"),
              "backward_start": ("bid", "bid")}
#: the kinds whose id is introduced once: the recorder numbers each autograd node, saved tensor and
#: backward call afresh (a tensor is introduced again at each new version of it). A node introduced
#: again could make an edge to itself or a cycle, which autograd's graph never has.
INTRODUCED_ONCE = frozenset({"node", "saved", "backward_start"})


#: checks that pass every value of these types without being called (the checks of a plain string
#: or bool field, or of one that may also be null): the checker tests the type instead
_SURE_TYPES = {_STR: frozenset({str}), _BOOL: frozenset({bool}), _OSTR: frozenset({str, type(None)})}
#: checks of an integer in a range (a count, an id, a signed number) and whether null passes too:
#: the checker tests the type and the range inline, which is the whole check
_RANGES = {_COUNT: (0, MAX_COUNT, False), _OCOUNT: (0, MAX_COUNT, True), _INT: (-MAX_COUNT, MAX_COUNT, False)}
#: checks of a list of ``[id, count]`` pairs, and whether the id may be null: tested inline, item by item
_PAIR_LISTS = {_REFS: False, _EDGES: True}
_UNSURE: frozenset = frozenset()
_MISSING = object()  # what a missing field reads as (its type is in no set of sure types)


def _plan(kind: str) -> tuple:
    """What :meth:`EventChecker.check` tests of an event of ``kind``: its fields as
    ``(name, optional, types that surely pass, check)``, whether it carries values, and its
    references as ``(field, id kind, how)``, all in the order of :data:`SCHEMA` and :data:`REFERENCES`."""
    fields = tuple((name.rstrip("?"), name.endswith("?"), _SURE_TYPES.get(check, _UNSURE), check)
                   for name, check in SCHEMA[kind].items())
    references = tuple((name, what, how) for name, (what, how) in REFERENCES.get(kind, {}).items())
    return fields, kind in ("tensor", "value"), references


_PLANS = {kind: _plan(kind) for kind in SCHEMA}


def _compile(kind: str):
    """One function that tests an event of ``kind`` as :meth:`EventChecker.check` does (its fields,
    its values, its references to earlier events) and returns True if it passes, else False (then
    the checker goes through it again to say what is wrong); on True it has noted the ids the event
    introduces. Written out field by field for the kind, without a loop over the plan and without a
    call where a test fits on a line (a required field read by subscript: a missing one fails the
    test): reading a big trace checks a million events."""
    fields, carries_values, references = _PLANS[kind]
    env: dict = {"_MISSING": _MISSING, "_values_problem": _values_problem, "_elements_ok": _elements_ok,
                 "_prod": math.prod}
    body = ["def passes(event, known):", "    get = event.get", "    try:"]
    # (a required list of pairs has its references tested in the loop that tests its items)
    merged = {name: (what, how) for name, what, how in references if SCHEMA[kind].get(name) in _PAIR_LISTS}
    for i, field in enumerate(fields):
        body.extend("    " + line for line in _field_test(i, field, env, merged.get(field[0])))
    if carries_values:
        body.extend("    " + line for line in _VALUES_TEST)
    for name, what, how in references:
        if name not in merged:
            body.extend("    " + line for line in _reference_test(name, what, how))
    body.extend("    " + line for line in _introduction(kind))
    body.extend(["    except KeyError:", "        return False", "    return True"])
    exec("\n".join(body), env)  # noqa: S102 - code written here, from the schema: no input in it
    return env["passes"]


#: the compiled test of a tensor's or a value's full values or statistics (its shape is tested before:
#: what :func:`_values_problem` tests, the values inline)
_VALUES_TEST = (
    '    if "values" in event:',
    '        v = event["values"]',
    f'        if type(v) is not list or len(v) > {FULL_VALUES_MAX} or not _elements_ok(v) '
    'or _prod(event["shape"]) != len(v):',
    '            return False',
    '    elif "stats" in event and _values_problem(event) is not None:',
    '        return False',
)


def _field_test(i: int, field: tuple, env: dict, reference: tuple | None) -> list[str]:
    """The lines of the compiled check that test field ``i`` of the plan, ``(name, optional, types
    that surely pass, check)``: a type and range test inline where it can be, the check itself
    only where that fails. ``reference``: ``(id kind, how)`` of a list of pairs whose ids an earlier
    event must have introduced, tested in the same loop. The names the lines use go into ``env``."""
    name, optional, sure, check = field
    env[f"check{i}"] = check
    if optional:
        lines, absent = [f"    v = get({name!r}, _MISSING)"], "v is not _MISSING and "
    else:
        lines, absent = [f"    v = event[{name!r}]"], ""
    if check in _RANGES:
        low, high, null = _RANGES[check]
        null_passes = "v is not None and " if null else ""
        return lines + [f"    if {absent}{null_passes}(type(v) is not int or not {low} <= v <= {high}):",
                        "        return False"]
    if check is _is_shape and not optional:
        return lines + _SHAPE_TEST
    if check in _PAIR_LISTS and not optional:
        return lines + _pair_list_test(_PAIR_LISTS[check], reference)
    if sure:
        names = []
        for j, t in enumerate(sorted(sure, key=lambda t: t.__name__)):
            env[f"type{i}_{j}"] = t
            names.append(f"type(v) is not type{i}_{j}")
        return lines + [f"    if {' and '.join(names)} and {absent}not check{i}(v):", "        return False"]
    return lines + [f"    if {absent}not check{i}(v):", "        return False"]


#: the compiled test of a required shape (what :func:`_is_shape` tests, size by size)
_SHAPE_TEST = [
    f"    if type(v) is not list or len(v) > {MAX_DIMS}:",
    "        return False",
    "    for d in v:",
    f"        if type(d) is not int or not 0 <= d < {1 << 48}:",
    "            return False",
    f"    if len(v) > 1 and _prod(v) > {MAX_NUMEL}:",
    "        return False",
]


def _pair_list_test(null: bool, reference: tuple | None) -> list[str]:
    """The lines of the compiled check that test a required list of ``[id, count]`` pairs, the id
    null too where ``null`` says so, and, with ``reference`` (``(id kind, how)``), that an earlier
    event introduced each id (what the check of :data:`_REFS` or :data:`_EDGES` and the reference
    test of the field do, in one loop)."""
    null_passes = "a is not None and " if null else ""
    lines = ["    if type(v) is not list:", "        return False"]
    if reference is not None:
        lines.append(f"    ids = known[{reference[0]!r}]")
    lines += ["    for item in v:",
              "        if type(item) is not list or len(item) != 2:",
              "            return False",
              "        a, b = item",
              f"        if {null_passes}(type(a) is not int or not 0 <= a <= {MAX_COUNT}):",
              "            return False",
              f"        if type(b) is not int or not 0 <= b <= {MAX_COUNT}:",
              "            return False"]
    if reference is not None:
        lines += ["        if a is not None and a not in ids:", "            return False"]
    return lines


def _reference_test(name: str, what: str, how: str) -> list[str]:
    """The lines of the compiled check that test the ids field ``name`` refers to (``what``: tid,
    vid, ...; ``how``: as in :data:`REFERENCES`) were introduced by earlier events."""
    lines = [f"    v = get({name!r})", f"    ids = known[{what!r}]"]
    if how == "one":
        lines.append("    if v is not None and v not in ids:")
        lines.append("        return False")
        return lines
    lines.append("    if v is not None:")
    if how in ("refs", "next"):
        lines.append("        for item in v:")
        lines.append("            if item[0] is not None and item[0] not in ids:")
        lines.append("                return False")
    elif how == "edge":
        lines.append("        if v and v[0] is not None and v[0] not in ids:")
        lines.append("            return False")
    else:  # a list of ids
        lines.append("        for item in v:")
        lines.append("            if item is not None and item not in ids:")
        lines.append("                return False")
    return lines


def _introduction(kind: str) -> list[str]:
    """The lines of the compiled check that note the id an event of ``kind`` introduces (failing
    one introduced twice where :data:`INTRODUCED_ONCE` says so) and, for a saved tensor, add its
    bytes to the trace's total (failing past :data:`MAX_SAVED_TOTAL`)."""
    lines = []
    introduced = INTRODUCES.get(kind)
    if kind == "saved":
        lines.append("    total = known['saved_bytes'][0] + event['bytes']")
        lines.append(f"    if total > {MAX_SAVED_TOTAL}:")
        lines.append("        return False")
    if introduced is not None:
        lines.append(f"    v = event[{introduced[1]!r}]")
        lines.append(f"    ids = known[{introduced[0]!r}]")
        if kind in INTRODUCED_ONCE:
            lines.append("    if v in ids:")
            lines.append("        return False")
        lines.append("    ids.add(v)")
    if kind == "saved":
        lines.append("    known['saved_bytes'][0] = total")
    return lines


#: kind -> its compiled check (see _compile)
_PASSES = {kind: _compile(kind) for kind in SCHEMA}


class EventChecker:
    """Checks events in stream order: schema and references to earlier events."""

    def __init__(self) -> None:
        # the ids introduced so far, and (saved_bytes) the bytes of all saved tensors so far
        self.known: dict = {"tid": set(), "vid": set(), "sid": set(), "bid": set(), "saved_bytes": [0]}

    def check(self, event: object) -> None:
        """Raise :class:`SchemaError` naming what is wrong with ``event``."""
        kind = event.get("ev") if type(event) is dict else None
        passes = _PASSES.get(kind) if type(kind) is str else None
        if passes is not None and passes(event, self.known):
            return
        self.check_slowly(event)  # says what is wrong

    def check_all(self, events: list[dict]) -> None:
        """:meth:`check` of each of ``events`` (dicts, as a record expands into), in order."""
        known, passes_of = self.known, _PASSES.get
        for event in events:
            kind = event.get("ev")
            passes = passes_of(kind) if type(kind) is str else None
            if passes is None or not passes(event, known):
                self.check_slowly(event)  # says what is wrong

    def check_slowly(self, event: object) -> None:
        """:meth:`check` field by field and reference by reference, the first fault raised as a
        :class:`SchemaError` that names it (what :meth:`check` does when its compiled test fails)."""
        self._check_fields(event)
        kind = event["ev"]
        plan = _PLANS[kind]
        known = self.known
        for name, what, how in plan[2]:
            if name not in event:
                continue
            ids = known[what]
            for ident in _ids(event[name], how):
                if ident is not None and ident not in ids:
                    raise SchemaError(f"{kind} event refers to {what} {ident}, which no earlier event introduced")
        introduced = INTRODUCES.get(kind)
        if kind == "saved":
            total = known["saved_bytes"][0] + event["bytes"]
            if total > MAX_SAVED_TOTAL:
                raise SchemaError(f"saved event: the saved tensors add up to more than 2**53 bytes ({total:,})")
        if introduced is not None:
            what, name = introduced
            if kind in INTRODUCED_ONCE and event[name] in known[what]:
                raise SchemaError(f"{kind} event introduces {what} {event[name]} again "
                                  "(an earlier event introduced it)")
            known[what].add(event[name])
        if kind == "saved":
            known["saved_bytes"][0] = total

    @staticmethod
    def _check_fields(event: object) -> None:
        """Every field of ``event`` tested in the schema's order, the first fault raised as a
        :class:`SchemaError` that names it (the references are :meth:`check`'s)."""
        if type(event) is not dict:
            raise SchemaError("not an event (a JSON object)")
        kind = event.get("ev")
        if type(kind) is not str:
            raise SchemaError("no 'ev' naming its kind")
        fields = SCHEMA.get(kind)
        if fields is None:
            raise SchemaError(f"unknown kind of event {kind[:40]!r}")
        for name, check in fields.items():
            optional = name.endswith("?")
            name = name.rstrip("?")
            if name not in event:
                if optional:
                    continue
                raise SchemaError(f"{kind} event without its '{name}' field")
            if not check(event[name]):
                value = event[name]
                reason = ": out of range" if type(value) is int else ""
                raise SchemaError(f"{kind} event with a bad '{name}' field ({_short(value)}{reason})")
        if kind in ("tensor", "value"):
            problem = _values_problem(event) if ("values" in event or "stats" in event) else None
            if problem:
                raise SchemaError(f"{kind} event: {problem}")


# --------------------------------------------------------------------------- strings
#: a UTF-16 surrogate: in a decoded string, one without its pair (JSON's "\ud800"), which no
#: encoder writes out and no view can show
_SURROGATE = re.compile("[\ud800-\udfff]")
#: what in a line of JSON may decode to one: an escape of a surrogate, or its bytes encoded as UTF-8
SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def tidy_text(text: str, cap: int = STRING_CAP) -> str:
    """``text`` cut to ``cap`` characters (ending in :data:`CUT_MARK`), lone surrogates replaced by
    U+FFFD; ``text`` itself when it needs neither."""
    if len(text) > cap:
        text = text[:cap] + CUT_MARK
    if _SURROGATE.search(text) is not None:
        text = _SURROGATE.sub("\ufffd", text)
    return text


def _tidy_tree(value: object, cap: int) -> object:
    """``value`` with every string in it (keys too) tidied (:func:`tidy_text`); lists and dicts in
    it are changed in place, walked with a stack of their own (no recursion)."""
    if type(value) is str:
        return tidy_text(value, cap)
    stack = [value] if isinstance(value, (list, dict)) else []
    while stack:
        container = stack.pop()
        if isinstance(container, list):
            for i, item in enumerate(container):
                if type(item) is str:
                    tidied = tidy_text(item, cap)
                    if tidied is not item:
                        container[i] = tidied
                elif isinstance(item, (list, dict)):
                    stack.append(item)
            continue
        for key in list(container):
            item = container[key]
            if type(item) is str:
                tidied = tidy_text(item, cap)
                if tidied is not item:
                    container[key] = item = tidied
            elif isinstance(item, (list, dict)):
                stack.append(item)
            if type(key) is str:
                tidied = tidy_text(key, cap)
                if tidied is not key:
                    del container[key]
                    container[tidied] = item
    return value


def tidy_event(event: dict) -> dict:
    """``event`` (a checked one, or a trace's header) with its strings held to the limits: each cut
    to :data:`STRING_CAP` characters (the free text of :data:`TEXT_CAPS` to its own cap) with a
    visible :data:`CUT_MARK`, and lone surrogates replaced by U+FFFD. Changed in place."""
    caps = TEXT_CAPS.get(event.get("ev"), {}) if type(event.get("ev")) is str else {}
    for key in list(event):
        cap = caps.get(key, STRING_CAP)
        item = event[key]
        tidied = _tidy_tree(item, cap)
        if tidied is not item:
            event[key] = tidied
        if type(key) is str:
            short = tidy_text(key)
            if short is not key:
                event[short] = event.pop(key)
    return event


def needs_tidying(line: bytes) -> bool:
    """Whether the JSON text ``line`` may hold a string :func:`tidy_event` would change: one longer
    than :data:`STRING_CAP` (:func:`may_hold_long_string`) or a surrogate."""
    return may_hold_long_string(line) or may_hold_surrogate(line)


def may_hold_surrogate(data: bytes) -> bool:
    """Whether the JSON text ``data`` may decode to a lone surrogate (:data:`SURROGATE_BYTES`). The
    pattern is looked for only where an escape (``\\u``) or the byte 0xED is: a plain search for
    those takes a fifth of the pattern's time on a trace without them (most traces). A search for
    a backslash alone comes first: one byte is found by ``memchr`` (a 256 KB piece without one in
    microseconds), the two of ``\\u`` by a search some 80 times slower (an 18 MB trace: 0.03-0.05 s)."""
    return (b"\\" in data and b"\\u" in data or b"\xed" in data) and SURROGATE_BYTES.search(data) is not None


def may_hold_long_string(line: bytes) -> bool:
    """Whether the JSON text ``line`` may hold a string (or key) longer than :data:`STRING_CAP`: a
    string is never longer than its JSON text, which lies between two quotes and holds none but
    escaped ones, so only a line with a stretch that long between quotes, or with an escaped
    quote, may. Looked at in C: a version-2 line of a thousand short events is not walked."""
    return len(line) > STRING_CAP and (b'\\"' in line or max(map(len, line.split(b'"'))) > STRING_CAP)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
