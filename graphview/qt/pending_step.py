"""PendingStep: a step forward asked for before the moment it stops at was recorded.

While a run is still being recorded (a runner streaming, a trace being read), a user may press
"To backward", "End of step" or "Next step" before that moment is among the run's events. The
window then remembers the step (:meth:`PendingStep.start`) rather than parking the cursor at the
newest event: the cursor stays where it was, the status bar says what it waits for, and each
time the run grows (:meth:`PendingStep.check`) the step is looked for again from where it was
asked; once the moment is there, the cursor goes to it. Any other move of the cursor, and a new
run, cancel the wait; a run that ends without such a moment says so and leaves the cursor at
its end, as the same step on a finished run does.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QStatusBar

from graphview.core import timeline
from graphview.core.run import Run
from graphview.qt.session import Session

#: how long the note that the run ended without the awaited moment stays in the status bar (ms)
ENDED_NOTE_MS = 20000


class PendingStep(QObject):
    """The one step forward the window waits to take, if any.

    It moves the ``session``'s cursor, says what it waits for in the window's status bar
    (``status_bar()``), scrolls the canvas to the cursor's node (``keep_in_view()``), and, when it
    starts waiting, stops the run's opening from placing the cursor (``taken()``).

    Attributes
    ----------
    unit : timeline.Unit or None
        The step waited for; None when the window waits for nothing.
    origin : int
        The cursor the step was asked from (it stays there while waiting).
    message : str
        What the status bar says while waiting.
    """

    def __init__(self, session: Session, status_bar: Callable[[], QStatusBar], keep_in_view: Callable[[], None],
                 taken: Callable[[], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.status_bar = status_bar
        self.keep_in_view = keep_in_view
        self.taken = taken
        self.unit: timeline.Unit | None = None
        self.origin = -1
        self.message = ""
        self._run: Run | None = None
        session.cursor_changed.connect(self._on_cursor_changed)
        session.run_changed.connect(lambda run: self.cancel())

    @property
    def waiting(self) -> bool:
        return self.unit is not None

    def start(self, unit: timeline.Unit, origin: int) -> None:
        """Wait for ``unit``'s moment after event ``origin`` of the window's run."""
        self.cancel()
        self.taken()  # the user has taken the cursor: the run's opening place no longer moves it
        self.unit, self.origin, self._run = unit, origin, self.session.run
        self.message = f"waiting for {unit.what} to be recorded… (moving the cursor cancels)"
        self.status_bar().showMessage(self.message)

    def check(self, ended: bool) -> bool:
        """The run grew, or ``ended`` (no more events will come): take the step if its moment is
        recorded now; at the end without one, go to the run's last event and say so. True when
        the cursor moved."""
        unit, run = self.unit, self._run
        if unit is None:
            return False
        if run is not self.session.run or not run.events:
            self.cancel()
            return False
        found = unit.find(run, self.origin)
        if found is None and not ended:
            return False
        self.cancel()  # (first: the move below is the step itself, not a move that cancels it)
        if found is None:
            found = timeline.last(run)
            self.status_bar().showMessage(f"the run ended without {unit.what}: the cursor is at its end",
                                          ENDED_NOTE_MS)
        self.session.set_cursor(found)
        self.keep_in_view()
        return True

    def cancel(self) -> None:
        """Wait for nothing any more (the status bar's waiting note goes too)."""
        if self.unit is None:
            return
        self.unit = None
        self._run = None
        bar = self.status_bar()
        if bar.message() == self.message:  # (whole: what shows may end in "…" on a narrow window)
            bar.clearMessage()

    def _on_cursor_changed(self, index: int) -> None:
        if self.unit is not None and index != self.origin:
            self.cancel()  # the user moved the cursor elsewhere (scrubbed, clicked a finding, ...)
