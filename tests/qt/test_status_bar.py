"""The status bar's message and the run's status on its right never cut each other: the message
ends in "…" where the status begins, whichever of the two changed last, and the window's width."""

from __future__ import annotations

from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QApplication

COMPARISON = ("compared with the earlier run (default options): peak saved 117.5 KiB → 89.1 KiB; last graph: 0 "
              "nodes gone; 0 new; autograd nodes per step 67, 67, 67 → 110, 110, 110")
STATUS = "run ok: 1948 events, 95 ops, 330 autograd nodes, 3 backward calls"


def _message_room(bar) -> float:
    """Where Qt draws a message: from 6 px to 2 px before the first permanent widget shown."""
    first = next(w for w in bar._permanent if w.isVisible())
    return first.x() - 2 - 6


def _assert_message_fits(window) -> None:
    QApplication.processEvents()
    bar = window.statusBar()
    shown = bar.currentMessage()
    assert shown.endswith("…") and shown[:-1] in COMPARISON  # elided, not cut
    assert QFontMetricsF(bar.font()).horizontalAdvance(shown) <= _message_room(bar), (shown, _message_room(bar))
    assert bar.message() == COMPARISON and COMPARISON in bar.toolTip()


def test_a_message_shown_before_the_run_s_status_ends_where_the_status_begins(window):
    # the what-if picture: the comparison was shown, then the run's status; "… peak saved 117.5 k"
    # ran under "run ok: …" (elided to the room the status left before it had its text)
    window.resize(1366, 768)
    window.status_label.setText("")
    QApplication.processEvents()
    window.statusBar().showMessage(COMPARISON, 30000)
    window.status_label.setText(STATUS)
    _assert_message_fits(window)


def test_a_message_is_elided_again_when_the_window_narrows_and_widens(window):
    window.resize(1366, 768)
    window.status_label.setText(STATUS)
    QApplication.processEvents()
    window.statusBar().showMessage(COMPARISON, 30000)
    _assert_message_fits(window)
    window.resize(1000, 768)
    _assert_message_fits(window)
    narrow = window.statusBar().currentMessage()
    window.resize(1366, 768)
    _assert_message_fits(window)
    assert len(window.statusBar().currentMessage()) > len(narrow)  # the room back, the words back


def test_a_rerun_s_comparison_shows_its_memory_figures_where_the_bar_is_narrow(window, record):
    """After a re-run with other options, the status bar's comparison starts with the peak saved
    before and after: beside the run's status the message is elided at its end and the figures are
    still there (they came last, after the nodes per step, and were cut: at 1366 px in the what-if
    picture's run of three steps, here at 1024 px)."""
    from graphview.core.options import RunOptions
    from graphview.qt.formatting import human_bytes
    from tests.conftest import model

    window.resize(1024, 768)
    first = record(model("transformer_block"))
    window.begin_run(first.start["script"], RunOptions(), first)
    # the what-if picture's re-run: its layers checkpointed, a lower peak and more nodes per step
    again = record(model("transformer_block"), checkpoint=["encoder.layers.*"])
    window.begin_run(first.start["script"], RunOptions(checkpoint=["encoder.layers.*"]), again)
    window.status_label.setText(STATUS)
    QApplication.processEvents()
    before = max(first.peak_saved_bytes().values())
    now = max(again.peak_saved_bytes().values(), default=0)
    shown = window.statusBar().currentMessage()
    assert f"peak saved {human_bytes(before)} → {human_bytes(now)}" in shown, shown
    assert QFontMetricsF(window.statusBar().font()).horizontalAdvance(shown) <= _message_room(window.statusBar())


def test_a_rerun_s_comparison_reads_whole_at_1366(window, record):
    """At 1366x768 a checkpointed re-run's comparison ended in "autograd nodes per step 288 …"
    beside the run's status: the same last graph said as '0 nodes gone; 0 new', and every step's
    equal count said again ("67, 67, 67 → 110, 110, 110"). Said once, the whole comparison fits, with its nodes per step."""
    from graphview.core.options import RunOptions
    from graphview.qt.run_summary import nodes_per_step
    from tests.conftest import model

    window.resize(1366, 768)
    first = record(model("transformer_block"), steps=3)
    window.begin_run(first.start["script"], RunOptions(steps=3), first)
    again = record(model("transformer_block"), steps=3, checkpoint=["encoder.layers.*"])
    window.begin_run(first.start["script"], RunOptions(steps=3, checkpoint=["encoder.layers.*"]), again)
    window.status_label.setText("run ok: 3807 events, 444 ops, 520 autograd nodes, 2 backward calls")
    QApplication.processEvents()
    before, now = nodes_per_step(first), nodes_per_step(again)
    assert len(before) == 3 and len(set(before)) == 1 and len(set(now)) == 1 and before != now
    shown = window.statusBar().currentMessage()
    assert not shown.endswith("…"), shown
    assert f"; last graph: the same nodes; autograd nodes per step {before[0]} → {now[0]}" in shown, shown
