"""The status bar's message and the run's status on its right never cut each other: the message
ends in "…" where the status begins, whichever of the two changed last, and the window's width."""

from __future__ import annotations

from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QApplication

COMPARISON = ("compared with the earlier run (default options), last graph: 0 nodes gone; 0 new; autograd nodes "
              "per step 67, 67, 67 → 110, 110, 110; peak saved 117.5 KiB → 89.1 KiB")
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
