"""Mutated real recordings for the fuzz suite (tests/app/test_fuzz_app.py).

The traces are recordings of bundled sample models (made once per test session, in this
process), mutated mostly in ways that keep to the schema: a value replaced by another of its
type (an id of another event, a count at a limit, a float that is NaN, a string holding markup,
terminal escapes or another kind's word), an event dropped, doubled, moved or rewritten with
hostile strings, the trace cut short. Such a trace passes the reader, so it reaches every view of
the window and every command: that is where the fuzzing looks. A few mutations break the schema
too (a field retyped), to check that the refusal is the same in the window and on the command line.
"""

from __future__ import annotations

import json
import math

from hypothesis import strategies as st

from graphview.core.records import RecordBuffer

from tests.conftest import lesson, model
from tests.hostile import HOSTILE

#: the recordings: (sample, options), chosen for what their events hold between them: modules and
#: optimizer steps, a checkpoint's recompute, a custom Function, NaN statistics, a failed run, a
#: tied weight, an in-place op on a saved tensor
SAMPLES = (
    (lesson("chain_rule"), {}),
    (model("mlp_optimizer"), {"steps": 2}),
    (model("checkpointing"), {"steps": 1}),
    (model("custom_function"), {"steps": 1}),
    (model("weight_sharing"), {"steps": 1}),
    ("sample_models/pitfalls/nan_gradient.py", {}),
    (lesson("error_backward_twice"), {}),
    ("sample_models/pitfalls/inplace_on_saved.py", {}),
)

#: words other events use in the same place (an enum a view might look up), words no event uses
WORDS = ("param", "buffer", "input", "activation", "grad", "ok", "error", "exit", "stopped", "timeout", "crashed",
         "plain", "step", "inprocess", "backward", "no_grad", "inference_mode", "set_to_none", "zero", "assign",
         "in_place", "stdout", "stderr", "cpu", "cuda:0", "cuda:7", "meta", "mps", "float16", "bfloat16", "int64",
         "bool", "complex64", "torch::autograd::AccumulateGrad", "AddBackward0", "weight", "fc1.weight", "",
         " ", ".", "..", "a.b..c.", "nan", "-inf", "op1", "t1", "0", "\n", "\t", "\u202eevil", "\U0001f600",
         "x" * 5000, HOSTILE, HOSTILE * 3)
#: integers at the limits the reader holds, and ordinary ones
INTS = (0, 1, 2, 3, -1, 7, 100, 2**31, 2**32 + 1, 2**53 - 1, 2**53, -2**53, 2**63, 10**6)
FLOATS = (0.0, -0.0, 1.0, -1.5, 1e-300, 5e-324, 1e308, -1e308, math.nan, math.inf, -math.inf)


def record_samples() -> list[tuple[dict, list[dict]]]:
    """(header, events) of each of :data:`SAMPLES`, recorded in this process."""
    from graphview.capture.script import run_script
    from graphview.core.options import RunOptions
    from graphview.core.trace import make_header

    traces = []
    for path, options in SAMPLES:
        opts = RunOptions(**options)
        events: list[dict] = []
        run_script(path, events.append, opts)
        traces.append((make_header(script=path, options=opts.to_dict(), argv=[path]), events))
    return traces


@st.composite
def like(draw, value, depth: int = 0):
    """A value of the type of ``value`` (a list or dict changed in one place, or emptied)."""
    if isinstance(value, bool):
        return not value if draw(st.booleans()) else draw(st.sampled_from([None, 0, 1]))
    if isinstance(value, int):
        return draw(st.one_of(st.sampled_from(INTS), st.integers(0, 300), st.sampled_from([value + 1, value - 1])))
    if isinstance(value, float):
        return draw(st.one_of(st.sampled_from(FLOATS), st.floats(allow_nan=True, allow_infinity=True)))
    if isinstance(value, str):
        return draw(st.one_of(st.sampled_from(WORDS), st.just(HOSTILE + value), st.just(value * 2)))
    if value is None:
        return draw(st.one_of(st.sampled_from(INTS[:6]), st.sampled_from(WORDS[:20]), st.just([]), st.just({})))
    if isinstance(value, list):
        return draw(_like_list(value, depth))
    if isinstance(value, dict):
        return draw(_like_dict(value, depth))
    return value


@st.composite
def _like_list(draw, value: list, depth: int):
    how = draw(st.sampled_from(["empty", "drop", "double", "change", "long"] if value else ["empty", "long"]))
    if how == "empty":
        return []
    if how == "long":
        return (value or [0]) * draw(st.sampled_from([2, 50, 1025]))
    i = draw(st.integers(0, len(value) - 1))
    if how == "drop":
        return value[:i] + value[i + 1:]
    if how == "double":
        return value[:i + 1] + value[i:]
    if depth > 3:
        return value
    return value[:i] + [draw(like(value[i], depth + 1))] + value[i + 1:]


@st.composite
def _like_dict(draw, value: dict, depth: int):
    if not value:
        return {draw(st.sampled_from(WORDS[:12])): draw(st.sampled_from(INTS))}
    key = draw(st.sampled_from(sorted(value)))
    if draw(st.integers(0, 4)) == 0 or depth > 3:
        return {k: v for k, v in value.items() if k != key}
    return {**value, key: draw(like(value[key], depth + 1))}


def _hostile_strings(value):
    """``value`` with every string in it prefixed with markup and escapes."""
    if isinstance(value, str):
        return HOSTILE + value
    if isinstance(value, list):
        return [_hostile_strings(v) for v in value]
    if isinstance(value, dict):
        return {k: (v if k == "ev" else _hostile_strings(v)) for k, v in value.items()}
    return value


def _paths(value, prefix: tuple = (), limit: int = 64) -> list[tuple]:
    """Where in ``value`` a mutation may change something: every field and element, nested (the
    first ``limit`` elements of a long list)."""
    children = (value.items() if isinstance(value, dict) else enumerate(value[:limit]) if isinstance(value, list)
                else ())
    paths = []
    for key, child in children:
        if key != "ev":
            paths.append(prefix + (key,))
            paths.extend(_paths(child, prefix + (key,), limit))
    return paths


def _replace(value, path: tuple, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    return value[:head] + [_replace(value[head], rest, new)] + value[head + 1:]


def _at(value, path: tuple):
    for key in path:
        value = value[key]
    return value


MUTATIONS = ("value", "value", "value", "nested", "nested", "nested", "id", "drop", "double", "move", "strings",
             "retype", "header")


@st.composite
def mutated_trace(draw, traces: list[tuple[dict, list[dict]]], most: int = 4) -> bytes:
    """A recording from ``traces`` with one to ``most`` mutations (mostly within the schema), as the
    bytes of a trace file; sometimes cut short."""
    header, events = draw(st.sampled_from(traces))
    header = json.loads(json.dumps(header))
    events = json.loads(json.dumps(events))
    for _ in range(draw(st.integers(1, most))):
        how = draw(st.sampled_from(MUTATIONS))
        if how == "header":
            path = draw(st.sampled_from([p for p in _paths(header) if p[0] not in ("format", "version")]))
            header = _replace(header, path, draw(like(_at(header, path))))
            continue
        i = draw(st.integers(0, len(events) - 1))
        event = events[i]
        if how == "drop" and len(events) > 1:
            del events[i]
        elif how == "double":
            events.insert(i, json.loads(json.dumps(event)))
        elif how == "move":
            events.insert(draw(st.integers(0, len(events) - 1)), events.pop(i))
        elif how == "strings":
            events[i] = _hostile_strings(event)
        elif how == "id":
            events[i] = draw(_renumbered(event, events))
        elif how == "nested":  # a value anywhere in the event: an option, a statistic, a frame's line
            paths = _paths(event)
            if paths:
                path = draw(st.sampled_from(paths))
                events[i] = _replace(event, path, draw(like(_at(event, path))))
        else:
            fields = sorted(k for k in event if k != "ev")
            if fields:
                field = draw(st.sampled_from(fields))
                event[field] = draw(like(event[field])) if how == "value" else draw(st.sampled_from(
                    [None, 0, -1, "x", [], {}, [[]], True, 1.5]))
    if draw(st.booleans()):  # as graphview writes them: records (graphview/core/records.py)
        buffer = RecordBuffer()
        for event in events:
            buffer.add(event)
        lines = [json.dumps(header)] + buffer.take().splitlines()
    else:  # an event a line (what version 1 holds, and version 2 may)
        lines = [json.dumps(header)] + [json.dumps(e) for e in events]
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:  # cut off: at a line end or inside a line
        data = data[:draw(st.integers(len(lines[0]) + 1, len(data)))]
    return data


@st.composite
def _renumbered(draw, event: dict, events: list[dict]):
    """``event`` with one of its ids replaced by an id another event introduced (or one past them all)."""
    ids = [v for e in events for k, v in e.items() if k in ("tid", "vid", "sid", "oid", "bid") and type(v) is int]
    fields = sorted(k for k, v in event.items() if k in ("tid", "vid", "sid", "oid", "bid", "grad_fn", "base",
                                                         "owner", "leaf", "src", "dst") and type(v) is int)
    if not fields or not ids:
        return event
    field = draw(st.sampled_from(fields))
    return {**event, field: draw(st.sampled_from(sorted(set(ids)) + [max(ids) + 1]))}
