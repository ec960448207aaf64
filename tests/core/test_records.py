"""Records (trace format version 2): fewer lines, the very same events, hostile records refused."""

from __future__ import annotations

import json

import pytest

from graphview.core.events import SchemaError
from graphview.core.records import GONE_MAX, RecordBuffer, expand, pack
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
