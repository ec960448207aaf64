"""The session: what every view of the window shows (the run, the cursor, the selection).

Views do not call each other. Each one implements :class:`SessionView` and is attached to the
window's :class:`Session` once (:meth:`Session.attach`); from then on a new run, a cursor move
or a new selection reaches every view through the session's signals, in the order the views
were attached.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from PySide6.QtCore import QObject, Signal

from graphview.core import timeline
from graphview.core.run import Run


@runtime_checkable
class SessionView(Protocol):
    """What a view of the timeline implements to follow a :class:`Session`.

    A view that also shows the selected node adds ``set_selection(node_id: str)`` ("" when
    nothing is selected); :meth:`Session.attach` connects it when it is there.
    """

    def set_run(self, run: Run) -> None:
        """A new run is shown (empty while a live run has not sent its first event)."""

    def set_cursor(self, index: int) -> None:
        """Show the state after event ``index`` of the run last given to :meth:`set_run`."""


class Session(QObject):
    """The state the window's views share.

    Properties
    ----------
    run : Run or None
        The run shown; ``None`` on the start page. Set with :meth:`set_run`, which emits
        ``run_changed(run)``. A live run is the same object throughout: it grows in place.
    cursor : int
        The event index every view shows, ``-1`` before the first :meth:`set_cursor` of a run.
        :meth:`set_cursor` clamps it to the run and emits ``cursor_changed(index)``, also when
        the index did not change (the run may have grown under it).
    selection : str
        The id of the selected node (``op12``, ``t3``), ``""`` when none. :meth:`select` emits
        ``selection_changed(node_id)``.
    follow_live : bool
        Whether the cursor follows a streaming run's newest event. A new run starts following;
        moving the cursor anywhere but the last event stops it.
    """

    run_changed = Signal(object)
    cursor_changed = Signal(int)
    selection_changed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._run: Run | None = None
        self._cursor = -1
        self._selection = ""
        self.follow_live = True

    @property
    def run(self) -> Run | None:
        return self._run

    @property
    def cursor(self) -> int:
        return self._cursor

    @property
    def selection(self) -> str:
        return self._selection

    def attach(self, view: SessionView) -> None:
        """Connect ``view`` to this session (one line of wiring per view)."""
        self.run_changed.connect(view.set_run)
        self.cursor_changed.connect(view.set_cursor)
        if hasattr(view, "set_selection"):
            self.selection_changed.connect(view.set_selection)

    def set_run(self, run: Run) -> None:
        """Show ``run``: the cursor goes before its first event, the selection is emptied."""
        self._run = run
        self._cursor = -1
        self._selection = ""
        self.follow_live = True
        self.run_changed.emit(run)

    def set_cursor(self, index: int) -> None:
        run = self._run
        if run is None or not run.events:
            return
        index = max(0, min(index, len(run.events) - 1))
        self._cursor = index
        self.follow_live = self.follow_live and index == len(run.events) - 1
        self.cursor_changed.emit(index)

    def select(self, node_id: str | None) -> None:
        self._selection = node_id or ""
        self.selection_changed.emit(self._selection)

    def error_line(self, index: int | None = None) -> int | None:
        """The line of the first error at or before ``index`` (default: the cursor)."""
        if self._run is None:
            return None
        return timeline.error_line(self._run, self._cursor if index is None else index)
