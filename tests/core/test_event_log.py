"""The lean event log gives what the list of event dicts gave: the same events, the same answers.

A run keeps its events compressed in blocks (:mod:`graphview.core.event_log`); these tests build
the same run with blocks sealed after every few events and with nothing sealed at all (every event
a dict, as runs were kept before), and from a trace file with the lines it was read from, and ask
each the same questions.
"""

from __future__ import annotations

import json

import pytest

from graphview.core import event_log
from graphview.core.diagnostics import diagnose
from graphview.core.event_log import EventLog
from graphview.core.export import graph_data, to_dot, to_graphml
from graphview.core.run import Run
from graphview.core.trace import make_header, write_trace
from graphview.core.trace_pieces import TracePieces
from tests.conftest import lesson, model, record_each

SCRIPTS = [lesson("accumulate_without_clearing"), lesson("retain_graph_twice"), lesson("create_graph"),
           model("mlp_optimizer"), model("transformer_block"), model("gradient_penalty")]


def as_json(events):
    return [json.loads(json.dumps(ev)) for ev in events]


@pytest.fixture(scope="module")
def recorded():
    """Each script's events, recorded in-process once (what a runner sends)."""
    found = record_each(SCRIPTS)
    for script, events in found.items():
        assert any(ev["ev"] == "bw_node" for ev in events), script
    return found


def run_with_block(events, block, monkeypatch):
    monkeypatch.setattr(event_log, "BLOCK", block)
    return Run(events)


def answers(run: Run) -> dict:
    """What the views ask of a run, in comparable form."""
    calls = {bid: (call.order, dict(call.grads_in), dict(call.grads_out), call.results, call.start, call.end)
             for bid, call in run.backwards.items()}
    grads = {tid: [(e.index, e.step, e.how, e.increment, e.value, e.bid) for e in entries]
             for tid, entries in run.grads.items()}
    data = graph_data(run)
    return {
        "info": run.info(),
        "findings": [f.to_dict() for f in diagnose(run)],
        "calls": calls,
        "grads": grads,
        "memory": run.memory_series("cpu"),
        "json": json.dumps(data, sort_keys=True),
        "dot": to_dot(data),
        "graphml": to_graphml(data),
    }


def gradients_as_recorded(events):
    """Per backward call, what each node received and sent, read straight from the event dicts
    (events.py: a node fed by one edge gets the consumer's ``grads_out[i]``)."""
    grads_in: dict = {}
    grads_out: dict = {}
    for ev in events:
        if ev["ev"] == "bw_node_done":
            grads_out.setdefault(ev["bid"], {})[ev["vid"]] = ev["grads_out"]
        elif ev["ev"] == "bw_node":
            got = ev.get("grads_in")
            if got is None and ev.get("from_edge"):
                consumer, i = ev["from_edge"]
                got = [grads_out[ev["bid"]][consumer][i]]
            grads_in.setdefault(ev["bid"], {})[ev["vid"]] = got
    return grads_in, grads_out


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda s: s.rsplit("/", 1)[-1])
def test_sealed_blocks_give_what_dicts_gave(recorded, script, monkeypatch):
    events = as_json(recorded[script])
    kept = run_with_block(events, 10**9, monkeypatch)  # nothing sealed: every event the dict that came
    lean = run_with_block(events, 7, monkeypatch)
    assert len(lean.events._blocks) == len(events) // 7
    assert list(lean.events) == list(kept.events) == events
    assert [lean.events[i] for i in range(len(events))] == events
    assert lean.events[3:40:3] == events[3:40:3]
    assert lean.events[-1] == events[-1]
    assert answers(lean) == answers(kept)
    grads_in, grads_out = gradients_as_recorded(events)
    assert {bid: dict(call.grads_in) for bid, call in lean.backwards.items()} == grads_in
    assert {bid: dict(call.grads_out) for bid, call in lean.backwards.items()} == grads_out
    # an accumulate event may leave its increment (and .grad, when that is the increment) to its bw_node
    accumulated = [(ev["tid"], *kept.accumulation(ev)) for ev in events if ev["ev"] == "accumulate"]
    assert all(increment is not None for _, increment, _ in accumulated)
    assert sorted(((tid, e.increment, e.value) for tid, entries in lean.grads.items() for e in entries
                   if e.how == "accumulate"), key=lambda x: json.dumps(x)) == \
        sorted(accumulated, key=lambda x: json.dumps(x))


@pytest.mark.parametrize("script", SCRIPTS[3:], ids=lambda s: s.rsplit("/", 1)[-1])
def test_where_find_and_kind_answer_as_a_scan_of_the_dicts(recorded, script, monkeypatch):
    monkeypatch.setattr(event_log, "BLOCK", 16)
    events = as_json(recorded[script])
    log = EventLog(events)
    kinds = [ev["ev"] for ev in events]
    assert [log.kind(i) for i in range(len(events))] == kinds
    for wanted in ({"bw_node"}, {"op", "detach"}, {"step_end", "run_end"}, {"no such kind"}):
        assert list(log.where(wanted)) == [(i, ev) for i, ev in enumerate(events) if ev["ev"] in wanted]
        assert list(log.where(wanted, 100, 900)) == [(i, ev) for i, ev in enumerate(events)
                                                     if ev["ev"] in wanted and 100 <= i < 900]
        for start in (0, 1, 57, len(events) // 2, len(events) - 1):
            ahead = next((i for i in range(start, len(events)) if kinds[i] in wanted), None)
            behind = next((i for i in range(start, -1, -1) if kinds[i] in wanted), None)
            assert log.find(wanted, start) == ahead
            assert log.find(wanted, start, -1) == behind


def test_a_trace_opened_in_pieces_keeps_its_lines_and_writes_back_byte_for_byte(recorded, tmp_path, monkeypatch):
    monkeypatch.setattr(event_log, "BLOCK", 5)
    events = recorded[model("mlp_optimizer")]
    original = tmp_path / "run.gvtrace"
    write_trace(original, events, make_header())
    reader = TracePieces(original, piece_bytes=3000)
    run = Run()
    while not reader.done:
        piece = reader.next_piece()
        assert len(piece.lines) == len(piece)
        run.extend(piece)
    again = tmp_path / "again.gvtrace"
    write_trace(again, run.events, make_header())
    assert again.read_bytes() == original.read_bytes()
    assert answers(run) == answers(run_with_block(as_json(events), 10**9, monkeypatch))


def test_a_trace_read_whole_hands_its_lines_to_the_run(recorded, tmp_path):
    """A version-1 trace (an event a line) hands its lines on, not encoded again; a later
    version's records give the same events."""
    from graphview.core.trace import read_trace

    events = recorded[model("transformer_block")]
    old = tmp_path / "v1.gvtrace"
    old.write_text("\n".join(json.dumps(e) for e in [dict(make_header(), version=1), *events]))
    trace = read_trace(old)
    assert trace.header["version"] == 1
    assert [json.loads(line) for line in trace.events.lines] == trace.events == as_json(events)
    assert Run(trace.events).events == as_json(events)
    path = tmp_path / "run.gvtrace"
    write_trace(path, events, make_header())
    trace = read_trace(path)
    assert trace.events == as_json(events)
    assert Run(trace.events).events == as_json(events)


def test_events_of_odd_kinds_are_kept_and_found():
    log = EventLog()
    events = [{"ev": "op", "n": 1}, {"ev": None}, {"n": 2}, {"ev": "op", "n": 3}] * 100
    for ev in events:
        log.append(ev)
    assert list(log) == events
    assert log.kind(1) is None and log.kind(2) is None
    assert [i for i, _ in log.where({"op"})] == [i for i, ev in enumerate(events) if ev.get("ev") == "op"]
    assert log.find({"op"}, 1) == 3


def test_a_block_reads_the_same_before_and_after_it_is_compressed(monkeypatch):
    """A sealed block's text is compressed on a thread of its own (in a process without torch, as
    the window's); until then the text itself is read, and what is read is the same either way."""
    import time

    from graphview.core import event_log

    monkeypatch.setattr(event_log, "compress_on_a_thread", lambda: True)

    events = [{"ev": "op", "oid": i, "op": "mul", "line": i % 7, "inputs": [[i, 0]], "text": "é" * (i % 3)}
              for i in range(3 * event_log.BLOCK + 5)]
    log = event_log.EventLog(events)
    assert len(log._blocks) == 3
    raw = [type(block) is event_log._Text for block in log._blocks]
    assert list(log) == events and [log[i] for i in range(len(events))] == events
    deadline = time.monotonic() + 10
    while any(type(block) is not bytes for block in log._blocks) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert all(type(block) is bytes for block in log._blocks)  # compressed by now
    assert event_log._decode(log._blocks[0]) == events[:event_log.BLOCK]
    log._cache.clear()
    assert list(log) == events and [log[i] for i in range(len(events))] == events
    assert len(raw) == 3


def test_a_process_that_runs_torch_compresses_each_block_at_once():
    """No thread of graphview's computes beside torch's (it changed a bfloat16 step's last bits):
    where torch is imported, a sealed block is compressed when it is sealed."""
    import torch  # noqa: F401 - what the process runs
    from graphview.core import event_log

    assert not event_log.compress_on_a_thread()
    log = event_log.EventLog([{"ev": "op", "oid": i} for i in range(event_log.BLOCK)])
    assert [type(block) for block in log._blocks] == [bytes]
