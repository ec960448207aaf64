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
               line, values | stats
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
               into the grad, its name in source), line, source
optimizer_step optimizer, tids, line
alloc          device, bytes              (CUDA allocator's ``memory_allocated``, on change)
error          type, message, traceback [{file, line, func, text}...], line, vid, bid,
               limit (bool: torch refused something graphview needs to record; message says what)
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

#: Version of the event vocabulary and of the trace file layout.
SCHEMA_VERSION = 1

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


class SchemaError(ValueError):
    """An event that breaks the schema; the message names the field and what is wrong."""


def _is_int(v: object) -> bool:
    return type(v) is int


def _is_num(v: object) -> bool:
    return type(v) in (int, float) or v in ("nan", "inf", "-inf")


def _is_seconds(v: object) -> bool:  # a duration: finite, not negative, under a year
    return type(v) in (int, float) and 0 <= v < 3.2e7


def _is_value(v: object) -> bool:  # one tensor element: a number, a bool, or a [real, imag] pair
    return _is_num(v) or type(v) is bool or (type(v) is list and len(v) == 2 and all(map(_is_num, v)))


def _depth_ok(v: object, depth: int = 0) -> bool:
    if depth > MAX_DEPTH:
        return False
    if isinstance(v, dict):
        return all(isinstance(k, str) and _depth_ok(x, depth + 1) for k, x in v.items())
    if isinstance(v, list):
        return all(_depth_ok(x, depth + 1) for x in v)
    return v is None or isinstance(v, (str, int, float))


def _list_of(check):
    return lambda v: type(v) is list and all(map(check, v))


def _maybe(check):
    return lambda v: v is None or check(v)


def _is_shape(v: object) -> bool:
    if type(v) is not list or len(v) > MAX_DIMS:
        return False
    if not v:
        return True
    # every size an int (one C pass over the types), then the range from the extremes
    return _only(v, _INT_TYPE) and min(v) >= 0 and max(v) < 1 << 48


_INT_TYPE = frozenset({int})
#: the types of a tensor element that pass :func:`_is_value` by their type alone
_PLAIN_VALUE_TYPES = frozenset({int, float, bool})


def _only(items: list, types: frozenset) -> bool:
    """Every item's type is one of ``types`` (the set of types is made in C, not item by item in Python)."""
    return set(map(type, items)) <= types


_STATS_FIELDS = {"min": _is_num, "max": _is_num, "mean": _is_num, "norm": _is_num, "numel": _is_int,
                 "nan": _is_int, "inf": _is_int, "hist": _list_of(_is_int), "hist_of": _is_int, "sampled": _is_int,
                 "nnz": _is_int,
                 "of": lambda v: isinstance(v, str)}


def _values_problem(holder: dict) -> str | None:
    """What is wrong with the ``shape`` / ``values`` / ``stats`` of a summary or tensor event."""
    if not _is_shape(holder.get("shape")):
        return "shape is not a list of sizes"
    if "values" in holder:
        values = holder["values"]
        if (type(values) is not list or len(values) > FULL_VALUES_MAX
                or not (_only(values, _PLAIN_VALUE_TYPES) or all(map(_is_value, values)))):
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
                return f"stats.{key} has the wrong type"
    return None


def _is_summary(v: object) -> bool:
    return v is None or (type(v) is dict and _values_problem(v) is None)


_INT, _STR, _BOOL = _is_int, (lambda v: isinstance(v, str)), (lambda v: type(v) is bool)
_OINT, _OSTR = _maybe(_is_int), _maybe(lambda v: isinstance(v, str))
_INTS = _list_of(_is_int)
_REF = lambda v: type(v) is list and len(v) == 2 and all(map(_is_int, v))  # noqa: E731 - [tid, version]
_FRAME = lambda v: (type(v) is dict and type(v.get("file")) is str and _is_int(v.get("line"))  # noqa: E731
                    and type(v.get("func")) is str and _OSTR(v.get("text")))
_ANY = _depth_ok

_OPTION_FIELDS = {"retain_graph": _BOOL, "create_graph": _BOOL, "detach_at": _list_of(_STR), "grad_mode": _STR,
                  "accumulate": _BOOL, "device": _OSTR, "steps": _INT, "args": _list_of(_STR),
                  "checkpoint": _list_of(_STR), "autocast": _OSTR, "save_on_cpu": _BOOL}


def is_options(v: object) -> bool:
    """A dict of run options (``RunOptions.to_dict()``) whose known fields have their types."""
    return (type(v) is dict and _depth_ok(v)
            and all(check(v[key]) for key, check in _OPTION_FIELDS.items() if key in v))


#: kind -> {field: check}; a field name ending in ``?`` may be missing.
SCHEMA: dict[str, dict] = {
    "run_start": {"script": _OSTR, "mode": _STR, "torch": _OSTR, "python": _OSTR, "devices": _list_of(_STR),
                  "options": is_options, "notes": _list_of(_STR), "source?": _OSTR,
                  "argv?": _list_of(_STR), "rank?": _OINT, "world_size?": _OINT},
    "run_end": {"status": _STR, "exit_code": _INT, "message": _STR},
    "step_start": {"step": _INT},
    "step_end": {"step": _INT, "result": _is_summary, "tid?": _OINT, "seconds?": _is_seconds},
    "stdout": {"text": _STR, "native?": _BOOL},
    "stderr": {"text": _STR, "native?": _BOOL},
    "output_capped": {"stream": _STR, "bytes": _INT},
    "tensor": {"tid": _INT, "version": _INT, "name": _OSTR, "kind": _STR, "shape": _is_shape, "dtype": _STR,
               "device": _STR, "requires_grad": _BOOL, "is_leaf": _BOOL, "grad_fn": _OINT, "base": _OINT,
               "line": _OINT, "new?": _BOOL},
    "name": {"tid": _INT, "name": _STR, "also?": _list_of(_STR)},
    "value": {"tid": _INT, "version?": _INT, "reason?": _STR, "shape": _is_shape},
    "op": {"oid": _INT, "op": _STR, "line": _OINT, "module": _OSTR, "module_type?": _OSTR,
           "inputs": _list_of(_REF), "outputs": _list_of(_REF), "grad_fn": _OINT, "mode": _STR, "inplace": _BOOL,
           "recompute?": _OINT},
    "node": {"vid": _INT, "name": _STR, "seq": _OINT, "leaf": _OINT, "custom": _BOOL, "line?": _OINT,
             "module?": _OSTR,
             "next": _list_of(lambda v: type(v) is list and len(v) == 2 and _OINT(v[0]) and _is_int(v[1]))},
    "saved": {"sid": _INT, "bytes": _INT, "storage": _STR, "device": _STR, "kind": _STR, "shape": _is_shape,
              "dtype": _STR, "owner": _OINT, "attr": _OSTR, "recompute?": _OINT, "src?": _INT},
    "own": {"sid": _INT, "owner": _INT, "attr": _OSTR},
    "node_dead": {"vid": _INT},
    "tensor_dead": {"tid": _INT},
    "release": {"sid": _INT},
    "module_enter": {"path": _STR, "type": _STR},
    "module_exit": {"path": _STR},
    "module_mode": {"type": _STR, "training": _BOOL, "line": _OINT},
    "mode": {"mode": _STR, "line": _OINT},
    "detach": {"src": _INT, "dst": _INT, "line": _OINT, "forced": _BOOL},
    "retain_grad": {"tid": _INT, "line": _OINT},
    "grad_read": {"tid": _INT, "none": _BOOL, "line": _OINT},
    "backward_start": {"bid": _INT, "api": _STR, "roots": _list_of(_OINT), "root_tensors": _INTS,
                       "seeds": _list_of(_is_summary), "retain_graph": _BOOL, "create_graph": _BOOL,
                       "inputs": _INTS, "forced": _list_of(_STR), "line": _OINT},
    "bw_node": {"bid": _INT, "vid": _INT, "grads_in": _maybe(_list_of(_is_summary)),
                "from_edge?": lambda v: type(v) is list and len(v) == 2 and all(_is_int(x) and x >= 0 for x in v)},
    "bw_node_done": {"bid": _INT, "vid": _INT, "grads_out": _list_of(_is_summary)},
    "accumulate": {"bid": _OINT, "tid": _INT, "vid": _OINT, "increment?": _is_summary, "grad?": _is_summary,
                   "first?": _BOOL},
    "tensor_grad": {"bid": _OINT, "tid": _INT, "grad": _is_summary},
    "grad_result": {"bid": _INT, "tid": _INT, "grad": _is_summary},
    "backward_end": {"bid": _INT, "ok": _BOOL, "freed?": _BOOL},
    "grad_reset": {"tids": _INTS, "how": _STR, "line": _OINT, "source?": _OSTR, "value?": _is_summary},
    "optimizer_step": {"optimizer": _STR, "tids": _INTS, "line": _OINT},
    "alloc": {"device": _STR, "bytes": _INT},
    "error": {"type": _STR, "message": _STR, "traceback": _list_of(_FRAME), "line": _OINT, "vid": _OINT,
              "bid": _OINT, "limit?": _BOOL},
    "paused": {"line": _OINT},
    "resumed": {"line": _OINT},
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
    "error": {"vid": ("vid", "one"), "bid": ("bid", "one")},
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


#: checks that pass every value of these types without being called (the checks of a plain int,
#: string or bool field, or of one that may also be null): the checker tests the type instead
_SURE_TYPES = {_INT: frozenset({int}), _STR: frozenset({str}), _BOOL: frozenset({bool}),
               _OINT: frozenset({int, type(None)}), _OSTR: frozenset({str, type(None)})}
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
    introduces. Written out field by field for the kind, without a loop over the plan: reading a
    big trace checks a million events."""
    fields, carries_values, references = _PLANS[kind]
    env: dict = {"_MISSING": _MISSING, "_values_problem": _values_problem}
    body = ["def passes(event, known):", "    get = event.get"]
    for i, (name, optional, sure, check) in enumerate(fields):
        env[f"check{i}"] = check
        body.append(f"    v = get({name!r}, _MISSING)")
        indent = "    "
        if sure:
            names = []
            for j, t in enumerate(sorted(sure, key=lambda t: t.__name__)):
                env[f"type{i}_{j}"] = t
                names.append(f"type(v) is not type{i}_{j}")
            body.append(f"    if {' and '.join(names)}:")
            indent = "        "
        if optional:
            body.append(f"{indent}if v is not _MISSING and not check{i}(v):")
        else:
            body.append(f"{indent}if v is _MISSING or not check{i}(v):")
        body.append(f"{indent}    return False")
    if carries_values:
        body.append('    if ("values" in event or "stats" in event) and _values_problem(event) is not None:')
        body.append("        return False")
    for name, what, how in references:
        body.append(f"    v = get({name!r})")
        body.append(f"    ids = known[{what!r}]")
        if how == "one":
            body.append("    if v is not None and v not in ids:")
            body.append("        return False")
        else:
            body.append("    if v is not None:")
            if how in ("refs", "next"):
                body.append("        for item in v:")
                body.append("            if item[0] is not None and item[0] not in ids:")
                body.append("                return False")
            elif how == "edge":
                body.append("        if v and v[0] is not None and v[0] not in ids:")
                body.append("            return False")
            else:  # a list of ids
                body.append("        for item in v:")
                body.append("            if item is not None and item not in ids:")
                body.append("                return False")
    introduced = INTRODUCES.get(kind)
    if introduced is not None:
        body.append(f"    known[{introduced[0]!r}].add(event[{introduced[1]!r}])")
    body.append("    return True")
    exec("\n".join(body), env)  # noqa: S102 - code written here, from the schema: no input in it
    return env["passes"]


#: kind -> its compiled check (see _compile)
_PASSES = {kind: _compile(kind) for kind in SCHEMA}


class EventChecker:
    """Checks events in stream order: schema and references to earlier events."""

    def __init__(self) -> None:
        self.known: dict[str, set] = {"tid": set(), "vid": set(), "sid": set(), "bid": set()}

    def check(self, event: object) -> None:
        """Raise :class:`SchemaError` naming what is wrong with ``event``."""
        kind = event.get("ev") if type(event) is dict else None
        passes = _PASSES.get(kind) if type(kind) is str else None
        if passes is not None and passes(event, self.known):
            return
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
        if introduced is not None:
            known[introduced[0]].add(event[introduced[1]])

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
                raise SchemaError(f"{kind} event with a bad '{name}' field ({_short(event[name])})")
        if kind in ("tensor", "value"):
            problem = _values_problem(event) if ("values" in event or "stats" in event) else None
            if problem:
                raise SchemaError(f"{kind} event: {problem}")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
