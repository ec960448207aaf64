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
    assert window.status_label.text() == "" and window.statusBar().message() == ""
    assert window.progress.text() == "starting Python for prediction.py…"
    assert window.console.toPlainText() == "" and window.ledger.topLevelItemCount() == 0
    chart = window.memory
    assert not chart.getAxis("bottom").isVisible() and not chart.getAxis("left").isVisible()
    assert all(len(curve.xData or ()) == 0 for curve in chart.curves.values())
    assert "waiting for the run's first events" in chart.plotItem.titleLabel.item.toPlainText()
    window.append_events(other.events)
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    assert chart.getAxis("bottom").isVisible() and len(chart.curves["activation"].xData) == len(other.events)


def test_a_run_cut_off_from_its_parameters_does_not_end_as_a_plain_run_ok(window, record, qtbot):
    options = RunOptions(steps=2, detach_at=["model.2"])  # right-click, "Detach output of module model.2"
    cut = record(model("mlp_optimizer"), steps=2, detach_at=["model.2"])
    window.begin_run(cut.start["script"], options)
    window.append_events(cut.events)
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    assert window.status_label.text().startswith("run ok, but the graph is cut at line 14: ")
    message = window.statusBar().message()
    assert message.startswith("the loss has no grad_fn: the graph is cut at line 14 (module model.2)")
    assert window.bottom_tabs.currentWidget() is window.diagnostics
    first = window.diagnostics.topLevelItem(0)
    assert first.text(0) == "the loss has no grad_fn: the graph is cut at line 14 (module model.2)" and first.text(1) == "14"
    window.set_cursor(len(cut.events) - 1)
    assert "── run ok, but the loss has no grad_fn: the graph is cut at line 14 (module model.2)" in window.console.toPlainText()
    # the same script uncut: a plain "run ok" again, and no such finding
    whole = record(model("mlp_optimizer"), steps=2)
    window.begin_run(whole.start["script"], RunOptions(steps=2), whole)
    window.set_cursor(len(whole.events) - 1)
    assert window.status_label.text().startswith("run ok: ")
    assert not any(f.code == "graph-cut" for f in window.diagnostics.findings)
    assert "── run ok ──" in window.console.toPlainText()
