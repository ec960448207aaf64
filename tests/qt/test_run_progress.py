"""The status bar while a run loads: what the runner is doing, how far it got; nothing stale."""

from __future__ import annotations

from graphview.core.options import RunOptions
from tests.conftest import lesson, model


def test_the_status_bar_tells_what_a_loading_run_is_doing(window, record, qtbot):
    whole = record(model("mlp_optimizer"), steps=2)
    script = whole.start["script"]
    window.begin_run(script, RunOptions(steps=2))
    progress = window.progress
    assert progress.isVisible() and progress.bar.maximum() == 0  # busy: no end known
    assert progress.text() == "starting Python for mlp_optimizer.py…"
    window.append_events([{"ev": "phase", "phase": "torch"}])
    assert progress.text() == "importing torch for mlp_optimizer.py…"
    assert window.run.events == []  # the phase is news, not an event of the run
    assert window.position_label.text() == " no events yet"
    step_2 = whole.steps[1]["start"]
    window.append_events(whole.events[:60])
    qtbot.waitUntil(lambda: window.runs.settled, timeout=10000)
    assert progress.text() == "running mlp_optimizer.py: step 1 of 2 · 60 events"
    window.append_events(whole.events[60:step_2 + 5])
    qtbot.waitUntil(lambda: window.runs.settled, timeout=10000)
    assert progress.text() == f"running mlp_optimizer.py: step 2 of 2 · {step_2 + 5} events"
    assert window.status_label.text() == ""
    window.append_events(whole.events[step_2 + 5:])
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    assert not progress.isVisible() and progress.text() == ""
    assert window.status_label.text().startswith(f"run ok: {len(whole.events)} events")


def test_a_new_run_clears_what_the_last_one_ended_with(window, record, qtbot):
    first = record(lesson("chain_rule"))
    window.begin_run(first.start["script"], RunOptions(), first)
    window.set_cursor(len(first.events) - 1)
    window.statusBar().showMessage("an old message", 60000)
    assert window.status_label.text().startswith("run ok")
    assert "run ok" in window.console.toPlainText()
    assert window.memory.getAxis("bottom").isVisible() and len(window.memory.curves["activation"].xData)
    other = record(lesson("prediction"))
    window.begin_run(other.start["script"], RunOptions())  # a live run: its runner is starting
    assert window.status_label.text() == "" and window.statusBar().currentMessage() == ""
    assert window.progress.text() == "starting Python for prediction.py…"
    assert window.console.toPlainText() == "" and window.ledger.topLevelItemCount() == 0
    chart = window.memory
    assert not chart.getAxis("bottom").isVisible() and not chart.getAxis("left").isVisible()
    assert all(len(curve.xData or ()) == 0 for curve in chart.curves.values())
    assert "waiting for the run's first events" in chart.plotItem.titleLabel.text
    window.append_events(other.events)
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    assert chart.getAxis("bottom").isVisible() and len(chart.curves["activation"].xData) == len(other.events)
