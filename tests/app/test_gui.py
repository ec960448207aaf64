"""The app with real runner processes: live streaming, stop, bad files."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import lesson

pytestmark = pytest.mark.e2e


def test_open_a_script_streams_it_live(app):
    assert app.open(lesson("chain_rule"))
    assert app.wait_idle(90)
    window = app.window
    assert window.run.status == "ok"
    titles = {i.node.title for i in window.scene.node_items.values()}
    assert {"x", "MulBackward0", "AddBackward0", "PowBackward0"} <= titles
    assert window.code.toPlainText().startswith('"""Chain rule')
    assert "tensor(20.)" in window.console.toPlainText() or window.cursor < len(window.run.events) - 1


def test_an_endless_script_can_be_watched_and_stopped_within_a_second(app, write_script, qtbot):
    script = write_script(
        "import torch\n"
        "w = torch.ones(3, requires_grad=True)\n"
        "i = 0\n"
        "while True:\n"
        "    loss = (w * i).sum()\n"
        "    i += 1\n"
    )
    app.open(script)
    qtbot.waitUntil(lambda: app.window.run is not None and len(app.window.run.ops) > 20, timeout=60000)
    live = app.live
    started = time.monotonic()
    app.window.sigStopRequested.emit()
    while not live.process_ended and time.monotonic() - started < 5:
        time.sleep(0.01)
    assert time.monotonic() - started < 1.0  # the runner process is gone within a second
    assert app.wait_idle(60)  # and the window has everything it recorded
    assert app.window.run.status == "stopped"
    assert len(app.window.run.ops) > 20  # everything recorded is kept
    # the user stopped it: said so, not reported as a failure with a traceback
    assert "stopped: everything recorded until then is kept" in app.window.statusBar().message()
    assert app.window.bottom_tabs.currentWidget() is not app.window.console


def test_bad_files_get_a_message_and_the_app_keeps_working(app, tmp_path):
    corrupt = tmp_path / "bad.gvtrace"
    corrupt.write_bytes(b"\x00garbage")
    assert not app.open(str(corrupt))
    assert "not a graphview trace" in app.window.statusBar().message()
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# caf\xe9\n")
    assert not app.open(str(latin))
    assert "UTF-8" in app.window.statusBar().message()
    assert not app.open(str(tmp_path / "nope.py"))
    chart = tmp_path / "chart.csv"
    chart.write_text("event,activation_bytes\n0,0\n")
    assert not app.open(str(chart))  # not run as Python
    assert "neither a Python script" in app.window.statusBar().message()
    assert app.open(lesson("prediction")) and app.wait_idle(90)


def test_a_crashing_script_keeps_what_was_recorded(app, write_script):
    script = write_script("import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * 3).sum()\n"
                          "import ctypes\nctypes.string_at(0)\n")
    app.open(script)
    assert app.wait_idle(90)
    run = app.window.run
    assert run.status == "crashed" and len(run.ops) == 3
    assert app.window.code.error_line == 5 or app.window._error_line(len(run.events) - 1) == 5


def test_a_finished_live_run_shows_its_chart_and_opens_at_its_start(app):
    from tests.conftest import model

    app.open(model("mlp_optimizer"))
    assert app.wait_idle(90)
    window = app.window
    for _ in range(10):
        window.repaint()
        app.qt.processEvents()
    assert window.run.status == "ok"
    assert len(window.memory.series["total"]) == len(window.run.events)
    assert max(window.memory.series["total"]) > 0
    assert window.cursor == 0  # a run opens at its start: nothing built yet
    assert not any(i.isVisible() for i in window.scene.node_items.values())
    window.set_cursor(window.overview_index())  # the whole graph was drawn: its last one is there
    assert any(i.isVisible() and i.node.kind == "op" for i in window.scene.node_items.values())


def test_a_trace_damaged_after_its_header_is_reported(app, tmp_path, record):
    from graphview.core.trace import make_header

    # an event a line (as version 1 has them, and version 2 may), so that lines count events
    lines = [json.dumps(make_header())] + [json.dumps(event) for event in record(lesson("chain_rule")).events]
    damaged = tmp_path / "damaged.gvtrace"
    damaged.write_text("\n".join(lines[:1] + ["{not json"] + lines[1:5]) + "\n", encoding="utf-8")
    assert not app.open(str(damaged))  # refused: nothing to show, and a running script keeps running
    message = app.window.statusBar().message()
    assert "damaged.gvtrace holds no readable events" in message and "damaged at line 2" in message
    partial = tmp_path / "partial.gvtrace"
    partial.write_text("\n".join(lines[:30] + ["{not json"] + lines[30:]) + "\n", encoding="utf-8")
    assert app.open(str(partial))
    message = app.window.statusBar().message()
    assert "Only part of" in message and "damaged at line 31" in message
    assert len(app.window.run.events) == 29 and app.window.scene.node_items  # what was readable is shown


def test_stop_is_greyed_unless_something_runs(app, tmp_path, record, write_script, qtbot):
    """Stop stops a runner or a trace being read: on the start page, and for a trace shown whole
    (one cut by damage too, which has no end event), it is greyed."""
    from graphview.core.trace import make_header

    stop = app.window.actions["stop"]
    assert app.window.stack.currentIndex() == 0 and not stop.isEnabled()  # the start page
    lines = [json.dumps(make_header())] + [json.dumps(event) for event in record(lesson("chain_rule")).events]
    whole = tmp_path / "whole.gvtrace"
    whole.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert app.open(str(whole)) and app.wait_idle(30)
    assert not stop.isEnabled()
    partial = tmp_path / "partial.gvtrace"
    partial.write_text("\n".join(lines[:30] + ["{not json"] + lines[30:]) + "\n", encoding="utf-8")
    assert app.open(str(partial)) and app.window.run.end is None
    assert not stop.isEnabled()  # nothing more will come: nothing to stop
    assert app.wait_idle(30) and not stop.isEnabled()
    app.open(write_script("import time\nimport torch\nw = torch.ones(3, requires_grad=True)\ntime.sleep(60)\n"))
    assert stop.isEnabled()  # a runner is starting: Stop stops it
    stop.trigger()
    assert app.wait_idle(60) and not stop.isEnabled()
