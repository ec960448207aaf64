"""The summary of a finished run: its findings (a big run's diagnosed in slices of the event
loop's turns), its status line."""

from __future__ import annotations

from graphview.core.options import RunOptions


def test_a_big_run_is_diagnosed_in_slices_and_says_what_the_whole_diagnosis_says(window, record, qtbot, monkeypatch):
    """A run of more than DIAGNOSE_IN_SLICES_ABOVE events is diagnosed a few checks per turn of the
    event loop: the window says "looking for findings" meanwhile, then shows what diagnose finds."""
    from graphview.core.diagnostics import diagnose
    from graphview.qt import run_summary
    from tests.conftest import SAMPLES

    monkeypatch.setattr(run_summary, "DIAGNOSE_IN_SLICES_ABOVE", 10)
    run = record(SAMPLES / "pitfalls" / "detach_is_not_copy.py")
    window.begin_run(run.start["script"], RunOptions(), run)
    assert "looking for findings" in window.status_label.text() and not window.runs.settled
    qtbot.waitUntil(lambda: window.runs.settled, timeout=10000)
    assert [f.to_dict() for f in window.diagnostics.findings] == [f.to_dict() for f in diagnose(run)]
    assert "detach-is-not-copy" in [f.code for f in window.diagnostics.findings]
    assert window.status_label.text().startswith("run ok · 1 finding in Diagnostics:")


def test_a_failed_script_names_its_error_and_line_and_brings_the_console_forward(window, record, qtbot, tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("import torch\n"
                      "x = torch.ones(2, requires_grad=True)\n"
                      "y = (x * 3).sum()\n"
                      "torch.ones(2) @ torch.ones(3)\n")
    try:  # the error torch itself raises on that line
        import torch
        torch.ones(2) @ torch.ones(3)
    except RuntimeError as exc:
        expected = f"RuntimeError: {str(exc).splitlines()[0]}"
    run = record(script)
    assert run.failed
    window.begin_run(str(script), RunOptions(), run)
    qtbot.waitUntil(lambda: window.runs.settled, timeout=10000)
    message = window.statusBar().currentMessage()
    assert message.startswith("the script failed at line 4: " + expected[:60])  # (a long message is cut short)
    assert window.bottom_tabs.currentWidget() is window.console
    # no backward ran: Diagnostics says there was nothing to check, not that the run is clean
    said = window.diagnostics.list.topLevelItem(0).text(0)
    assert said.startswith("nothing to check: the script failed (RuntimeError at line 4: ") and said.endswith(
        " before any backward"), said


def test_a_detach_that_matched_nothing_says_so(window, record, qtbot):
    from tests.conftest import model

    options = {"detach_at": ["no.such.module"]}
    run = record(model("mlp_optimizer"), steps=1, **options)
    assert not run.failed and not [ev for _, ev in run.events.where({"detach"}) if ev.get("forced")]
    window.begin_run(run.start["script"], RunOptions(steps=1, **options), run)
    qtbot.waitUntil(lambda: window.runs.settled, timeout=10000)
    assert "detach at 'no.such.module' matched nothing in this run" in window.statusBar().currentMessage()


def test_a_big_runs_checkpoint_suggestions_are_weighed_in_slices_and_listed_with_its_findings(window, record, qtbot,
                                                                                              monkeypatch):
    """A big run's modules are weighed for a checkpoint a few per turn of the event loop (the
    estimate held the window 265 ms at the end of a 50k-op trace): Diagnostics lists what
    checkpoint_suggestions says of the whole run, after its findings."""
    from graphview.core.whatif import checkpoint_suggestions
    from graphview.qt import run_summary
    from tests.conftest import model

    monkeypatch.setattr(run_summary, "DIAGNOSE_IN_SLICES_ABOVE", 10)
    run = record(model("transformer_block"), steps=1)
    expected = checkpoint_suggestions(run)
    assert expected  # (the encoder's layers hold most of the activations)
    window.begin_run(run.start["script"], RunOptions(steps=1), run)
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    diagnostics = window.diagnostics
    assert [vars(s) for s in diagnostics.suggestions] == [vars(s) for s in expected]
    listed = [diagnostics.list.topLevelItem(i).data(0, diagnostics.SUGGESTION)
              for i in range(diagnostics.list.topLevelItemCount())]
    assert [s.pattern for s in listed if s is not None] == [s.pattern for s in expected]
