"""Records (trace format version 2 and later): fewer lines, the very same events, hostile records refused."""

from __future__ import annotations

import base64
import json
import struct

import pytest

from graphview.core.events import SchemaError
from graphview.core.records import GONE_MAX, PACK_MIN, RecordBuffer, expand, pack, pack_values
from graphview.core.run import Run
from graphview.core.trace import TraceError, make_header, parse_trace, read_trace, write_trace
from tests.conftest import lesson, model, record_each

SCRIPTS = [lesson("accumulate_without_clearing"), model("mlp_optimizer"), model("transformer_block"),
           model("checkpointing")]


@pytest.fixture(scope="module")
def recorded():
    return {script: json.loads(json.dumps(events)) for script, events in record_each(SCRIPTS).items()}


def _lines(buffer: RecordBuffer) -> list:
    return [json.loads(line) for line in buffer.take().splitlines()]


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("every", [1, 7, 10_000])
def test_records_give_back_every_event_in_order(recorded, script, every):
    """Whatever the flush points (after every event, every 7, once), the records expand into the
    events that went in, in their order; a real recording needs far fewer records than events."""
    events = recorded[script]
    buffer = RecordBuffer()
    records = []
    for i, event in enumerate(events, 1):
        buffer.add(json.loads(json.dumps(event)))
        if i % every == 0:
            records.extend(_lines(buffer))
    records.extend(_lines(buffer))
    assert [e for record in records for e in expand(record)] == events
    assert buffer.events == len(events) and buffer.records == len(records)
    if every > 1:
        assert len(records) < len(events) * (0.9 if every == 7 else 0.5)


def test_what_merges_into_one_record():
    buffer = RecordBuffer()
    events = [
        {"ev": "module_exit", "path": "a"}, {"ev": "module_enter", "path": "b", "type": "Linear"},
        {"ev": "saved", "sid": 1, "bytes": 8, "storage": "1", "device": "cpu", "kind": "input", "shape": [2],
         "dtype": "float32", "owner": None, "attr": None},
        {"ev": "node", "vid": 1, "name": "MulBackward0", "seq": 0, "leaf": None, "custom": False, "next": []},
        {"ev": "own", "sid": 1, "owner": 1, "attr": "self"},
        {"ev": "op", "oid": 1, "op": "mul", "line": 3, "module": "b", "inputs": [], "outputs": [], "grad_fn": 1,
         "mode": "grad", "inplace": False},
        {"ev": "tensor_dead", "tid": 4},
        {"ev": "bw_node", "bid": 1, "vid": 1, "grads_in": None, "from_edge": [2, 0]},
        {"ev": "release", "sid": 1},
        {"ev": "bw_node_done", "bid": 1, "vid": 1, "grads_out": [None]},
        {"ev": "node_dead", "vid": 1},
        {"ev": "release", "sid": 2},
    ]
    for event in events:
        buffer.add(dict(event))
    records = _lines(buffer)
    assert len(records) == 2  # the op with all it made; the node's run with what died after it
    op, run = records
    assert op[0] == "op" and [r[0] for r in op[-1]["+with"]] == ["module_exit", "saved", "node"]
    assert op[-1]["+gone"] == ["t", [4]]
    assert run[-1] == {"from_edge": [2, 0], "+in": [["release", 1]], "+done": [None], "+gone": ["nr", [1, 2]]}
    assert [e for record in records for e in expand(record)] == events


def test_a_long_burst_of_deaths_is_cut_into_records():
    buffer = RecordBuffer()
    deaths = [{"ev": "node_dead", "vid": v} for v in range(1, 3 * GONE_MAX)]
    for event in deaths:
        buffer.add(dict(event))
    records = _lines(buffer)
    assert len(records) == 3 and [e for r in records for e in expand(r)] == deaths


def test_an_event_without_its_fields_travels_as_an_object():
    odd = {"ev": "node", "vid": 3}
    assert pack(odd) is odd and expand(odd) == [odd]
    assert pack({"ev": "no such kind"}) == {"ev": "no such kind"}


@pytest.mark.parametrize("record, fault", [
    (5, "nor a record"), ([], "nor a record"), (["nope", 1], "unknown kind"),
    (["release"], "values for the kind's 1 fields"), (["release", 1, 2, 3], "values for the kind's 1 fields"),
    (["release", 1, [2]], "values for the kind's 1 fields"),
    (["release", 1, {"ev": "node_dead"}], "a field twice"), (["release", 1, {"sid": 2}], "a field twice"),
    (["release", 1, {"+boom": 1}], "unknown part"),
    (["release", 1, {"+gone": ["rr", [1]]}], "bad '\\+gone'"),
    (["release", 1, {"+gone": ["r" * (GONE_MAX + 1), [1] * (GONE_MAX + 1)]}], "bad '\\+gone'"), (["release", 1, {"+gone": ["x", [1]]}], "unknown letter"),
    (["release", 1, {"+own": [[1, None]]}], "bad '\\+own'"), (["release", 1, {"+done": []}], "'\\+done' part"),
    (["node", 1, "AddBackward0", 0, None, False, [], {"+with": [["release", 2]]}], "bad '\\+with'"),
    (["op", 1, "mul", 1, None, [], [], None, "grad", False, {"+with": [["op", 2, "mul", 1, None, [], [], None,
                                                                        "grad", False, {"+with": []}]]}],
     "unknown part"),
])
def test_a_hostile_record_is_refused_with_a_reason(record, fault):
    with pytest.raises(SchemaError, match=fault):
        expand(record)


def _trace(version: int, *lines: str) -> bytes:
    header = dict(make_header(), version=version)
    return "\n".join([json.dumps(header), *lines]).encode() + b"\n"


def test_a_version_2_trace_is_checked_event_by_event():
    start = json.dumps({"ev": "run_start", "script": "s.py", "mode": "plain", "torch": None, "python": None,
                        "devices": [], "options": {}, "notes": []})
    good = parse_trace(_trace(2, start, '["step_start", 1]'))
    assert good.events[-1] == {"ev": "step_start", "step": 1}
    with pytest.raises(TraceError, match="line 3: .*unknown part"):
        parse_trace(_trace(2, start, '["node_dead", 1, {"+x": 1}]'))
    with pytest.raises(TraceError, match="line 2: .*out of range"):
        parse_trace(_trace(2, '["step_start", -1]'))
    with pytest.raises(TraceError, match="line 2: .*not an event"):
        parse_trace(_trace(1, '["step_start", 1]'))  # version 1 holds objects only


def _step_events(record, write_script, dtype: str) -> tuple[list, list]:
    script = write_script(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16))\n"
        f"model.to(torch.{dtype})\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for _ in range(2):\n"
        "    optimizer.zero_grad()\n"
        f"    model(torch.randn(4, 16, dtype=torch.{dtype})).pow(2).mean().backward()\n"
        "    optimizer.step()\n"
        "biases = [model[0].bias.tolist(), model[2].bias.tolist()]\n")
    keep: dict = {}
    events = json.loads(json.dumps(list(record(script, keep=keep).events)))
    return events, keep["biases"]


@pytest.mark.parametrize("dtype, key", [("float32", "f4"), ("float64", "f8")])
def test_full_values_travel_packed_and_come_back_the_very_same(record, write_script, dtype, key):
    """A bias's 16 values (its gradient on the way into .grad, its new values after the step) go
    as the base64 of their bytes, float32 or float64 as torch holds them, and read back as the
    same floats; the events are exactly those recorded."""
    events, biases = _step_events(record, write_script, dtype)
    buffer = RecordBuffer()
    for event in events:
        buffer.add(event)
    text = buffer.take()
    assert text.count(f'"{key}":') >= 4
    assert key == "f8" or '"f8":' not in text  # (float64 values that float32 holds exactly go as f4)
    back = [e for line in text.splitlines() for e in expand(json.loads(line))]
    assert back == events
    updates = [e["values"] for e in back if e["ev"] == "value" and len(e.get("values") or ()) == 16]
    assert len(updates) == 4 and updates[-2:] == biases  # torch's values after the last step


def _unpacked_floats(value: object) -> list:
    """The lists of PACK_MIN floats or more that a decoded record still holds as ``values``."""
    if type(value) is list:
        return [found for item in value for found in _unpacked_floats(item)]
    if type(value) is not dict:
        return []
    held = value.get("values")
    found = [held] if type(held) is list and len(held) >= PACK_MIN and all(type(v) is float for v in held) else []
    return found + [found for item in value.values() for found in _unpacked_floats(item)]


def test_every_summary_of_a_step_travels_packed(record, write_script):
    """Every kind of event that carries a small tensor's values packs them: an input, a gradient
    seeded by hand, a retained .grad, autograd.grad's result, the gradients a node receives and
    sends, .grad clipped in place and assigned, a parameter's new values."""
    script = write_script(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "model = torch.nn.Linear(16, 16)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "x = torch.randn(16, requires_grad=True)\n"
        "h = model(x)\n"
        "h.retain_grad()\n"
        "(g,) = torch.autograd.grad(h.sum(), x, retain_graph=True)\n"
        "h.backward(torch.full((16,), 0.25))\n"
        "torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)\n"
        "model.bias.grad = model.bias.grad * 0.5\n"
        "optimizer.step()\n")
    events = json.loads(json.dumps(list(record(script).events)))
    buffer = RecordBuffer()
    for event in events:
        buffer.add(event)
    text = buffer.take()
    records = [json.loads(line) for line in text.splitlines()]
    assert [e for record in records for e in expand(json.loads(json.dumps(record)))] == events
    assert {e["ev"] for e in events if _unpacked_floats(e)} >= {
        "tensor", "backward_start", "tensor_grad", "grad_result", "bw_node", "grad_reset", "value"}
    assert _unpacked_floats(records) == []


def test_only_floats_are_packed_and_the_event_itself_is_never_changed():
    floats = [0.1 * i for i in range(PACK_MIN)]
    cases = {
        "ints": [1] * PACK_MIN, "bools": [True] * PACK_MIN, "short": [0.5] * (PACK_MIN - 1),
        "not finite": [0.5] * (PACK_MIN - 1) + ["nan"], "mixed": [0.5] * (PACK_MIN - 1) + [1],
    }
    for name, values in cases.items():
        event = {"ev": "value", "tid": 1, "version": 1, "reason": "optimizer", "shape": [len(values)], "values": values}
        assert pack_values(event) is event, name
    event = {"ev": "bw_node_done", "bid": 1, "vid": 2, "grads_out": [None, {"shape": [PACK_MIN], "values": floats}]}
    packed = pack_values(event)
    assert packed is not event and event["grads_out"][1]["values"] == floats
    assert "values" not in packed["grads_out"][1] and packed["grads_out"][1]["f8"]  # 0.1 * i: no float32 holds it
    buffer = RecordBuffer()
    buffer.add(event)
    assert expand(json.loads(buffer.take())) == [event]


@pytest.mark.parametrize("summary, fault", [
    ({"shape": [2], "f4": "not base64!"}, "not base64"), ({"shape": [2], "f4": 5}, "bad 'f4'"),
    ({"shape": [1], "f4": "AAAAAAA="}, "whole number"), ({"shape": [2], "f8": "A" * 4000}, "bad 'f8'"),
    ({"shape": [2], "values": [1.0, 2.0], "f4": "AACAPwAAAEA="}, "bad 'f4'"),
])
def test_hostile_packed_values_are_refused(summary, fault):
    with pytest.raises(SchemaError, match=fault):
        expand(["tensor_grad", 1, 2, summary])


@pytest.mark.parametrize("kind", [[1], {"a": 1}])
def test_an_event_object_whose_kind_is_no_string_is_refused_not_a_crash(kind):
    """A line may be an event object; its ``ev`` is someone else's data, a list or an object too."""
    line = json.dumps({"ev": kind})
    assert expand(json.loads(line)) == [{"ev": kind}]  # (the checker refuses it, naming the line)
    with pytest.raises(TraceError, match="line 2: .*kind"):
        parse_trace(_trace(3, line))


def test_packed_values_are_checked_as_any_values_are():
    three = base64.b64encode(struct.pack("<3f", 1.0, 2.0, 3.0)).decode()
    start = json.dumps({"ev": "run_start", "script": "s.py", "mode": "plain", "torch": None, "python": None,
                        "devices": [], "options": {}, "notes": []})

    def value(shape):
        return json.dumps(["value", 1, shape, {"version": 0, "reason": "assign", "f4": three}])

    tensor = json.dumps(["tensor", 1, 0, None, "input", [3], "float32", "cpu", False, True, None, None, None,
                         {"values": [0.0, 0.0, 0.0]}])
    good = parse_trace(_trace(3, start, tensor, value([3])))
    assert good.events[-1]["values"] == [1.0, 2.0, 3.0]
    with pytest.raises(TraceError, match="line 4: .*3 numbers for a shape of 2"):
        parse_trace(_trace(3, start, tensor, value([2])))


def test_a_version_1_trace_still_opens(tmp_path, recorded):
    events = recorded[model("mlp_optimizer")]
    old = tmp_path / "v1.gvtrace"
    old.write_text("\n".join(json.dumps(e) for e in [dict(make_header(), version=1), *events]) + "\n")
    new = tmp_path / "v2.gvtrace"
    write_trace(new, events)
    assert read_trace(old).events == read_trace(new).events == events
    assert len(new.read_text().splitlines()) < len(events) / 2
    assert Run(read_trace(old).events).info() == Run(read_trace(new).events).info()


def test_a_flush_on_the_writers_clock_keeps_what_may_still_merge():
    """The pipe writes every few milliseconds while backward runs: a node's start waits for its
    end, and what an op made waits for the op, so that they still share a record."""
    buffer = RecordBuffer()
    release = {"ev": "release", "sid": 9}
    node = {"ev": "node", "vid": 1, "name": "MulBackward0", "seq": 0, "leaf": None, "custom": False, "next": []}
    op = {"ev": "op", "oid": 1, "op": "mul", "line": 3, "module": None, "inputs": [], "outputs": [], "grad_fn": 1,
          "mode": "grad", "inplace": False}
    start = {"ev": "bw_node", "bid": 1, "vid": 1, "grads_in": None}
    end = {"ev": "bw_node_done", "bid": 1, "vid": 1, "grads_out": []}
    buffer.add(dict(release))
    buffer.add(dict(node))
    assert [json.loads(line) for line in buffer.take(keep_open=True).splitlines()] == [["release", 9]]
    buffer.add(dict(op))
    buffer.add(dict(start))
    first = [json.loads(line) for line in buffer.take(keep_open=True).splitlines()]
    assert [record[0] for record in first] == ["op"] and first[0][-1]["+with"][0][0] == "node"
    buffer.add(dict(end))
    last = _lines(buffer)
    assert len(last) == 1 and last[0][-1] == {"+done": []}
    assert [e for r in [["release", 9], *first, *last] for e in expand(r)] == [release, node, op, start, end]


def test_nan_and_inf_as_numbers_are_seen_as_a_nan_is():
    """graphview writes NaN and Inf among values as strings; a trace from elsewhere may hold them as
    JSON's NaN and Infinity, or packed as float64 bytes: the diagnosis sees them all the same."""
    from graphview.core.backward_intake import non_finite

    nan_bytes = base64.b64encode(struct.pack("<8d", *([0.5] * 7 + [float("nan")]))).decode()
    packed = expand(["tensor_grad", 1, 2, {"shape": [8], "f8": nan_bytes}])[0]["grad"]
    for summary in (packed, {"shape": [2], "values": [1.0, float("inf")]}, {"shape": [2], "values": [1.0, "nan"]},
                    {"shape": [99], "stats": {"min": float("nan"), "max": 1.0, "numel": 99}}):
        assert non_finite(summary), summary
    assert not non_finite({"shape": [2], "values": [1.0, 2.0]})
    assert not non_finite({"shape": [99], "stats": {"min": 0.0, "max": 1.0, "numel": 99, "nan": 0, "inf": 0}})
