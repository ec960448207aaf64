"""A real runner tells its phases in order; the window's status bar follows them."""

from __future__ import annotations

import time

import pytest

from tests.conftest import model

pytestmark = pytest.mark.e2e


def test_a_runner_tells_its_phases_in_order_and_keeps_them_out_of_the_run():
    from graphview.app.runner_client import RunnerProcess
    from graphview.core.options import RunOptions

    heard: list[tuple[str, str]] = []
    events: list[dict] = []

    def on_event(event: dict) -> None:
        events.append(event)
        heard.append(("event", event["ev"]))

    runner = RunnerProcess(model("mlp_optimizer"), RunOptions(steps=3), on_event,
                           on_phase=lambda event: heard.append(("phase", event["phase"])))
    end = runner.wait(timeout=120)
    assert end["status"] == "ok"
    assert heard[0] == ("phase", "torch")  # before anything of the run: torch is being imported
    assert heard[1] == ("event", "run_start")
    assert [kind for source, kind in heard if source == "phase"] == ["torch"]
    steps = [e["step"] for e in events if e["ev"] == "step_start"]
    assert steps == [1, 2, 3]
    assert events[-1]["ev"] == "run_end" and not any(e["ev"] == "phase" for e in events)


def test_the_window_says_what_a_live_run_is_doing(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(tmp_path / "settings"))
    from graphview.app.gui import App

    app = App()
    qtbot.addWidget(app.window)
    app.window.show()
    try:
        assert app.open(model("mlp_optimizer"))
        texts = [app.window.progress.text()]
        deadline = time.monotonic() + 120
        while (app.live is not None or not app.window.runs.settled) and time.monotonic() < deadline:
            app.qt.processEvents()
            time.sleep(0.005)
            app._pump()
            if app.window.progress.text() != texts[-1]:
                texts.append(app.window.progress.text())
        assert texts[0] == "starting Python for mlp_optimizer.py…"
        assert "importing torch for mlp_optimizer.py…" in texts
        counted = [t for t in texts if " events" in t]  # running (step k of 3), then drawing
        assert counted and texts.index(counted[0]) > texts.index("importing torch for mlp_optimizer.py…")
        for text in counted:
            assert ("step " in text and " of 3" in text) or "then 3 steps" in text or text.startswith("drawing"), texts
        assert texts[-1] == "" and not app.window.progress.isVisible()
        assert app.window.status_label.text().startswith("run ok:")
    finally:
        app.stop()
        app.timer.stop()


def test_record_warns_when_no_parameter_got_a_gradient(tmp_path, mlp_recording):
    from tests.app.test_cli import graphview

    trace = tmp_path / "cut.gvtrace"
    result = graphview("record", model("mlp_optimizer"), "-o", trace, "--detach-at", "model.2", "-q")
    assert result.returncode == 0, result.stderr  # the script ran fine: a warning, not a failure
    warning = [line for line in result.stderr.splitlines() if line.startswith("graphview: warning:")]
    assert warning == [line for line in warning if "the graph is cut at line 14 (module model.2)" in line] and warning
    assert "'detach at model.2'" in warning[0]
    check = graphview("check", trace)
    assert check.returncode == 1 and "cut at line 14" in check.stdout
    _, uncut = mlp_recording  # graphview record of the same script without --detach-at
    assert uncut.returncode == 0 and "warning" not in uncut.stderr
