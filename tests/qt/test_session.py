"""The session every view follows: its properties, its signals, and views attached to it."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel

from graphview.core import timeline
from graphview.core.event_words import describe
from graphview.core.options import RunOptions
from graphview.core.run import Run
from graphview.qt.session import Session, SessionView
from tests.conftest import lesson


class Recorder:
    """A view that notes what reached it, in order."""

    def __init__(self, name: str, log: list) -> None:
        self.name, self.log = name, log

    def set_run(self, run) -> None:
        self.log.append((self.name, "run", run))

    def set_cursor(self, index: int) -> None:
        self.log.append((self.name, "cursor", index))


class SelectingRecorder(Recorder):
    def set_selection(self, node_id: str) -> None:
        self.log.append((self.name, "selection", node_id))


def test_a_new_run_resets_cursor_selection_and_following(qtbot, record):
    session = Session()
    run = record(lesson("chain_rule"))
    session.set_run(run)
    session.set_cursor(3)
    session.select("op1")
    session.follow_live = False
    other = Run()
    with qtbot.waitSignal(session.run_changed) as blocker:
        session.set_run(other)
    assert blocker.args == [other]
    assert (session.run, session.cursor, session.selection, session.follow_live) == (other, -1, "", True)


def test_the_cursor_is_clamped_and_stops_following_off_the_last_event(qtbot, record):
    session = Session()
    run = record(lesson("chain_rule"))
    session.set_run(run)
    last = len(run.events) - 1
    with qtbot.waitSignal(session.cursor_changed) as blocker:
        session.set_cursor(last + 50)
    assert blocker.args == [last] and session.cursor == last and session.follow_live
    session.set_cursor(-4)
    assert session.cursor == 0 and not session.follow_live
    session.set_cursor(last)
    assert not session.follow_live  # once the user moved away, reaching the end again does not re-follow


def test_no_cursor_without_events(qtbot):
    session = Session()
    moves = []
    session.cursor_changed.connect(moves.append)
    session.set_cursor(5)  # no run
    session.set_run(Run())  # a live run before its first event
    session.set_cursor(5)
    assert moves == [] and session.cursor == -1


def test_attached_views_hear_everything_in_the_order_they_were_attached(record):
    session, log = Session(), []
    first, second = Recorder("first", log), SelectingRecorder("second", log)
    assert isinstance(first, SessionView) and isinstance(second, SessionView)
    session.attach(first)
    session.attach(second)
    run = record(lesson("chain_rule"))
    session.set_run(run)
    session.set_cursor(2)
    session.select("op1")
    session.select(None)
    assert log == [("first", "run", run), ("second", "run", run), ("first", "cursor", 2), ("second", "cursor", 2),
                   ("second", "selection", "op1"), ("second", "selection", "")]


def test_error_line_appears_once_the_cursor_reaches_the_error(record):
    session = Session()
    run = record(lesson("error_backward_twice"))
    session.set_run(run)
    index, error = run.errors[0]
    session.set_cursor(index - 1)
    assert session.error_line() is None
    session.set_cursor(index)
    assert session.error_line() == error["line"] == 8
    assert session.error_line(index - 1) is None


class EventCountPanel(QLabel):
    """A new timeline panel, as small as one can be: how many events happened by the cursor."""

    def set_run(self, run) -> None:
        self.run = run
        self.setText("")

    def set_cursor(self, index: int) -> None:
        self.setText(f"{index + 1} of {len(self.run.events)} events: {describe(self.run, index)}")


def test_a_new_panel_follows_the_window_with_one_line_of_wiring(window, record):
    panel = EventCountPanel()
    window.add_timeline_tab(panel, "Events")  # the one line
    assert window.bottom_tabs.tabText(window.bottom_tabs.indexOf(panel)) == "Events"
    run = record(lesson("chain_rule"))
    window.begin_run(None, RunOptions(), run)
    window.set_cursor(4)
    assert panel.text() == f"5 of {len(run.events)} events: {describe(run, 4)}"
    window.move(timeline.next_backward)
    assert panel.text().startswith(f"{window.cursor + 1} of ")


def test_every_view_of_the_window_shows_the_cursor(window, record):
    run = record(lesson("error_backward_twice"))
    window.begin_run(None, RunOptions(), run)
    index = run.errors[0][0]
    window.set_cursor(index)
    assert window.timeline_bar.slider.value() == index
    assert window.memory.cursor_line.value() == index
    assert window.scene.cursor == index
    assert window.code.current_line == timeline.line_at(run, index) and window.code.error_line == 8
    assert "second time" in window.console.toPlainText()
