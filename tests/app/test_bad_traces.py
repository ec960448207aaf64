"""Mutated traces against the reader, ``graphview info``, ``graphview export`` and the window.

Real recordings are mutated (a field removed, retyped or renumbered, an event dropped, doubled
or of another kind, bytes cut or inserted, nesting far beyond any event) and every consumer must
either read the result or refuse it with a one-line reason: no exception escapes, the CLI exits
0 or 2 (``export`` 1 for a run that failed), and nothing is written on refusal."""

from __future__ import annotations

import functools
import time
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphview.app import cli
from graphview.core.diagnostics import diagnose
from graphview.core.events import SCHEMA
from graphview.core.export import graph_data, to_dot, to_graphml
from graphview.core.run import Run
from graphview.core.trace import TraceError, make_header, parse_trace
from tests.conftest import lesson, model

JSON_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from(["nan", "inf", "", "op1", "t1"]),
)
JSON_VALUES = st.recursive(JSON_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=12)


@functools.cache
def recordings() -> list[list[str]]:
    """Lines of a few real traces: a lesson, a step script with an optimizer, a failed run."""
    from graphview.capture.script import run_script
    from graphview.core.options import RunOptions

    traces = []
    for path, options in ((lesson("chain_rule"), RunOptions()), (model("mlp_optimizer"), RunOptions(steps=2)),
                          (lesson("error_backward_twice"), RunOptions())):
        events: list[dict] = []
        run_script(path, events.append, options)
        header = make_header(script=path, options=options.to_dict())
        traces.append([json.dumps(header)] + [json.dumps(e) for e in events])
    return traces


@st.composite
def mutated(draw):
    lines = list(draw(st.sampled_from(recordings())))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(1, len(lines) - 1))
        how = draw(st.sampled_from(["retype", "drop_field", "renumber", "kind", "drop", "double", "bytes",
                                    "deep", "header"]))
        if how == "bytes":
            data = "\n".join(lines).encode()
            at = draw(st.integers(0, len(data)))
            junk = draw(st.binary(max_size=8))
            return data[:at] + junk + data[at + draw(st.integers(0, 40)):]
        if how == "deep":
            lines[i] = "[" * draw(st.sampled_from([100, 5000, 100_000])) + "]" * 3
            continue
        if how == "header":
            header = json.loads(lines[0])
            if not isinstance(header, dict):
                continue
            header[draw(st.sampled_from(["options", "version", "script"]))] = draw(JSON_VALUES)
            lines[0] = json.dumps(header)
            continue
        try:
            event = json.loads(lines[i])
        except (ValueError, RecursionError):  # a line an earlier mutation made deep
            continue
        if not isinstance(event, dict):
            continue
        fields = sorted(k for k in event if k != "ev") or ["ev"]
        field = draw(st.sampled_from(fields))
        if how == "retype":
            event[field] = draw(JSON_VALUES)
        elif how == "drop_field":
            event.pop(field, None)
        elif how == "renumber":
            event[field] = draw(st.integers(-3, 10_000))
        elif how == "kind":
            event["ev"] = draw(st.sampled_from(sorted(SCHEMA) + ["nope", 3]))
        elif how == "drop":
            del lines[i]
            continue
        elif how == "double":
            lines.insert(i, lines[i])
            continue
        lines[i] = json.dumps(event)
    return ("\n".join(lines) + "\n").encode()


def consume(trace_events) -> None:
    """What every view does with a trace it accepted: the model, the summary, the exports, the checks."""
    run = Run(trace_events)
    run.info()
    if not run.events:
        return  # refused by every command and the window (nothing to show)
    for at in (None, len(run.events) // 2):
        data = graph_data(run, at)
        to_dot(data)
        to_graphml(data)
    diagnose(run)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(data=st.data())
def test_reader_and_model_accept_or_refuse_with_a_reason(data):
    raw = data.draw(mutated())
    try:
        trace = parse_trace(raw, "t.gvtrace")
    except TraceError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("t.gvtrace")
        return
    consume(trace.events)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
def test_info_and_export_exit_0_or_2_and_write_nothing_on_refusal(tmp_path, capsys, data):
    raw = data.draw(mutated())
    path = tmp_path / "t.gvtrace"
    path.write_bytes(raw)
    out = tmp_path / "g.json"
    if out.exists():
        out.unlink()
    info = cli.main(["info", str(path)])
    assert info in (0, 2)
    exported = cli.main(["export", str(path), "-o", str(out)])
    assert exported in (0, 1, 2)
    assert os.path.exists(out) == (exported != 2)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if info == 2:
        assert exported == 2 and len([line for line in err.splitlines() if line.startswith("graphview:")]) == 2


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
def test_the_window_opens_or_refuses_a_mutated_trace(live_app, tmp_path, data):
    raw = data.draw(mutated())
    path = tmp_path / "t.gvtrace"
    path.write_bytes(raw)
    before = live_app.window.run
    if live_app.open(str(path)):
        window = live_app.window
        window.set_cursor(len(window.run.events) - 1)
        for item in list(window.scene.node_items.values())[:4]:  # the inspector on a few nodes
            window.scene.clearSelection()
            item.setSelected(True)
        window.set_cursor(0)
    else:
        assert live_app.window.run is before  # refused: what the window showed stays
        assert "t.gvtrace" in live_app.window.statusBar().message()


@pytest.fixture(scope="module")
def live_app(qapp, tmp_path_factory):
    from PySide6.QtCore import QSettings

    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(tmp_path_factory.mktemp("settings")))
    from graphview.app.gui import App

    application = App()
    application.window.show()
    yield application
    application.stop()
    application.timer.stop()
    application.window.close()


def test_a_refused_trace_leaves_a_running_script_running(live_app, tmp_path, qtbot):
    from tests.app.test_faults import gone, processes_with, stubborn_script

    script, marker = stubborn_script(tmp_path)
    assert live_app.open(script)
    qtbot.waitUntil(lambda: bool(processes_with(marker)), timeout=60000)
    bad = tmp_path / "bad.gvtrace"
    bad.write_text('{"format": "graphview-trace", "version": 1}\n{"ev": "op", "inputs": 3}\n')
    live = live_app.live
    assert not live_app.open(str(bad))
    message = live_app.window.statusBar().message()
    assert message.startswith(f"{bad} is not a valid graphview trace: line 2: op event without its 'oid' field")
    time.sleep(0.5)
    assert live_app.live is live and not live.process_ended and processes_with(marker)
    live_app.stop()
    assert gone(marker)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_compiled_check_of_an_event_agrees_with_the_check_field_by_field(data):
    """The checker tests each event with a function compiled from the schema for its kind, and
    only when that fails goes field by field (to say what is wrong): on every event of mutated real
    traces, in order, the two accept and refuse alike."""
    import copy

    from graphview.core.events import _PASSES, EventChecker, SchemaError

    raw = data.draw(mutated())
    checker = EventChecker()
    for line in raw.split(b"\n")[1:]:
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        kind = event.get("ev") if isinstance(event, dict) else None
        passes = _PASSES.get(kind) if type(kind) is str else None
        slow = EventChecker()
        slow.known = copy.deepcopy(checker.known)
        try:
            slow.check_slowly(event)
            accepted = True
        except SchemaError:
            accepted = False
        known = copy.deepcopy(checker.known)
        assert (passes is not None and passes(event, known)) == accepted, event
        if accepted:
            checker.known = slow.known
            assert known == slow.known  # the same ids introduced
