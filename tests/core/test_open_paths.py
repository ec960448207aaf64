"""The quick paths a big trace opens by give what the event-by-event paths give.

A trace is read whole: its events are checked by :class:`EventChecker` (a field's type tested
where that settles it), go into the run's log together (:meth:`EventLog.extend`) and are taken in
by :meth:`Run.extend`. Here each is held against the plain path on real recordings (the samples,
a Hugging Face BERT from a random config): the checker against every field tested in the
schema's order, the log against :meth:`EventLog.append` of each event, the run against
:meth:`Run.add` of each event.
"""

from __future__ import annotations

import copy
import functools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphview.core import event_log
from graphview.core.event_log import EventLog, Piece
from graphview.core.events import (INTRODUCED_ONCE, INTRODUCES, MAX_SAVED_TOTAL, REFERENCES, SCHEMA, EventChecker,
                                   SchemaError, _ids)
from graphview.core.run import Run
from tests.conftest import lesson, model, zoo

SCRIPTS = [lesson("accumulate_with_clearing"), lesson("error_backward_twice"), model("mlp_optimizer"),
           model("inplace_ops"), model("checkpointing"), model("weight_sharing"), zoo("bert_mlm")]


@functools.cache
def recorded(script: str) -> list[dict]:
    from graphview.capture.script import run_script
    from graphview.core.options import RunOptions

    events: list[dict] = []
    run_script(script, events.append, RunOptions(steps=2))
    return [json.loads(json.dumps(ev)) for ev in events]  # as a trace file holds them


# ---------------------------------------------------------------------------------- the checker
class FieldByField:
    """The schema's rules applied literally: every field in order, then every reference."""

    def __init__(self) -> None:
        self.known: dict[str, set] = {"tid": set(), "vid": set(), "sid": set(), "bid": set()}
        self.saved_bytes = 0

    def check(self, event: object) -> None:
        EventChecker._check_fields(event)
        kind = event["ev"]
        for name, (what, how) in REFERENCES.get(kind, {}).items():
            if name in event:
                for ident in _ids(event[name], how):
                    if ident is not None and ident not in self.known[what]:
                        raise SchemaError(f"{kind} event refers to {what} {ident}, which no earlier event introduced")
        if kind == "saved" and self.saved_bytes + event["bytes"] > MAX_SAVED_TOTAL:
            raise SchemaError(f"saved event: the saved tensors add up to more than 2**53 bytes "
                              f"({self.saved_bytes + event['bytes']:,})")
        if kind in INTRODUCES:
            what, name = INTRODUCES[kind]
            if kind in INTRODUCED_ONCE and event[name] in self.known[what]:
                raise SchemaError(f"{kind} event introduces {what} {event[name]} again "
                                  "(an earlier event introduced it)")
            self.known[what].add(event[name])
        if kind == "saved":
            self.saved_bytes += event["bytes"]


def verdicts(checker, events: list) -> list[str | None]:
    found = []
    for event in events:
        try:
            checker.check(event)
            found.append(None)
        except SchemaError as exc:
            found.append(str(exc))
    return found


ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=True), st.text(max_size=6),
    st.sampled_from(["nan", "inf", "-inf", [1, 2], [1.0, "nan"], [[1, 0]], [[None, 0]], [2, -1], [True],
                     {"min": 1}, {"shape": [2], "values": [1.0, 2.0]}, {"shape": [3], "values": [1.0]}]),
    st.lists(st.one_of(st.integers(-2, 5), st.floats(), st.booleans(), st.none()), max_size=5),
)


@st.composite
def mutated_events(draw):
    events = copy.deepcopy(recorded(draw(st.sampled_from(SCRIPTS[:4]))))
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(events) - 1))
        event = events[i]
        if type(event) is not dict:  # made odd by an earlier mutation
            continue
        fields = sorted(k for k in event if k != "ev") or ["ev"]
        name = draw(st.sampled_from(fields))
        how = draw(st.sampled_from(["retype", "drop", "kind", "element", "odd", "again", "huge"]))
        if how == "retype":
            event[name] = draw(ODD_VALUES)
        elif how == "drop":
            event.pop(name, None)
        elif how == "kind":
            event["ev"] = draw(st.sampled_from(sorted(SCHEMA) + ["nope", 3, None]))
        elif how == "element" and type(event.get(name)) is list and event[name]:
            at = draw(st.integers(0, len(event[name]) - 1))
            event[name][at] = draw(ODD_VALUES)
        elif how == "odd":
            events[i] = draw(st.sampled_from([[], "tensor", 3, None, {"no": "ev"}]))
        elif how == "again":  # an event again (a node, a saved tensor, a backward call introduced twice)
            events.insert(i, copy.deepcopy(event))
        elif how == "huge" and type(event.get(name)) is int:  # a number beyond the limits
            event[name] = draw(st.sampled_from([-1, 2**53 + 1, 2**63, -2**63, 10**400]))
    return events


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=mutated_events())
def test_the_checker_refuses_what_the_rules_refuse_with_the_same_reason(events):
    assert verdicts(EventChecker(), events) == verdicts(FieldByField(), events)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda s: s.rsplit("/", 1)[-1])
def test_the_checker_passes_every_real_recording(script):
    events = recorded(script)
    assert verdicts(EventChecker(), events) == verdicts(FieldByField(), events) == [None] * len(events)


# ---------------------------------------------------------------------------------- the log and the run
def structures(run: Run) -> dict:
    """All a run holds, in comparable form (insertion orders included)."""
    def calls():
        return {bid: (call.order, dict(call.grads_in), dict(call.grads_out), call.results, call.start, call.end,
                      call.ok) for bid, call in run.backwards.items()}

    return {
        "events": list(run.events), "kinds": [run.events.kind(i) for i in range(len(run.events))],
        "tensors": list(run.tensors.items()), "values": run.values,
        "tensor_nodes": list(run.tensor_nodes.items()), "op_nodes": list(run.op_nodes.items()),
        "saved": list(run.saved.items()), "saved_by_owner": run.saved_by_owner, "edges": run.edges,
        "ops": run.ops, "producers": run.producers, "first_root_at": run.first_root_at, "steps": run.steps,
        "calls": calls(), "grads": {tid: [(e.index, e.step, e.how, e.increment, e.value, e.bid) for e in entries]
                                    for tid, entries in run.grads.items()},
        "errors": run.errors, "optimizer_steps": run.optimizer_steps, "stdout": run.stdout,
        "devices": run.devices, "memory_points": run.memory_points, "alloc_points": run.alloc_points,
        "module_types": run.module_types, "current": run._current_tensor_node,
        "nodes_of": run._tensor_nodes_of, "with_grad_fn": run._tensor_nodes_with_grad_fn,
        "memory": {device: run.memory_series(device) for device in sorted(run.devices)},
        "info": run.info(), "start": run.start, "end": run.end,
    }


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda s: s.rsplit("/", 1)[-1])
@pytest.mark.parametrize("block", [7, 256])
def test_a_run_taken_in_at_once_is_the_run_taken_in_event_by_event(script, block, monkeypatch):
    monkeypatch.setattr(event_log, "BLOCK", block)
    events = recorded(script)
    lines = [json.dumps(ev, separators=(",", ":")).encode() for ev in events]
    one_by_one = Run()
    for event, line in zip(copy.deepcopy(events), lines):
        one_by_one.add(event, line)
    whole = Run(Piece(copy.deepcopy(events), lines))
    pieces = Run()
    for at in range(0, len(events), 333):  # as a trace read in pieces comes
        pieces.extend(Piece(copy.deepcopy(events[at:at + 333]), lines[at:at + 333]))
    live = Run(iter(copy.deepcopy(events)))  # a runner's events: no lines, not a list
    expected = structures(one_by_one)
    assert structures(whole) == expected
    assert structures(pieces) == expected
    assert structures(live) == expected
    assert list(whole.events) == events


def test_the_log_extended_at_once_is_the_log_appended_event_by_event(monkeypatch):
    monkeypatch.setattr(event_log, "BLOCK", 5)
    odd = [{"ev": "op", "n": 1}, {"ev": None}, {"n": 2}, {"ev": 2.5}, {"ev": 3}, {"ev": "new kind"},
           {"ev": "op", "n": 3}]
    events = odd * 7 + [{"ev": f"kind {i}"} for i in range(300)] + odd * 3  # more kinds than a byte names
    appended = EventLog()
    for event in events:
        appended.append(event)
    extended = EventLog()
    for at in range(0, len(events), 11):
        extended.extend(events[at:at + 11])
    assert list(extended) == list(appended) == events
    assert [extended.kind(i) for i in range(len(events))] == [appended.kind(i) for i in range(len(events))] == \
        [ev.get("ev") for ev in events]
    for wanted in ({"op"}, {"new kind", "kind 299"}, {"kind 3"}):
        assert extended.indices(wanted) == appended.indices(wanted) == \
            [i for i, ev in enumerate(events) if ev.get("ev") in wanted]
    unhashable = [{"ev": "op"}, {"ev": [1]}, {"ev": "op"}]  # a kind that cannot be a key
    appended, extended = EventLog(), EventLog()
    for event in unhashable:
        appended.append(event)
    extended.extend(unhashable)
    assert list(extended) == list(appended) == unhashable
    assert [extended.kind(i) for i in range(3)] == ["op", [1], "op"]
