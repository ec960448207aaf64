"""EventLoopTurn: one time budget for the work the window does in a pass of the event loop.

A big trace is read, laid out, drawn and charted in slices, each on a timer of its own: the
app's pump reads events, the scene grows, the cursor and the chart catch up. Each slice keeps to
its own few milliseconds, but Qt runs every timer that is due in one pass of the event loop, back
to back, after the repaints of that pass: slices that each kept to 12-40 ms added up to blocks of
100 ms and more, during which the window answered nothing.

A *turn* is the time from one pass of the event loop that ran the window's timers (where input is
handled too) to the next: the turn's own short timer, :attr:`EventLoopTurn.beat`, marks each. A
slice asks :meth:`EventLoopTurn.left` how much of the turn's :data:`BUDGET_S` is left (whatever
ran since the beat counts: other slices, repaints, the interpreter's collections) and takes no
more, or, when too little is left, waits for a later turn (:meth:`EventLoopTurn.room_for`). A
slice that has waited :data:`PATIENCE` times runs anyway, so nothing starves. The beat runs only
while slices ask (a window at rest is not woken every few milliseconds).

(Passes of the event loop are not turns: Qt's event loop may run a pass of repaints alone, and
hold the timers back until they are done, so a budget per pass let two passes of work follow
each other while no timer, and no input, got its turn.)
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer

#: seconds of work in one pass of the event loop, repaints included (the window must never be
#: held more than 100 ms: a slice may overrun what it was given by a few ms, a collection of the
#: interpreter's young objects by ~20 ms)
BUDGET_S = 0.030
#: turns a slice waits for room before it runs anyway
PATIENCE = 4
#: the beat's period (ms), and how long it goes on after the last slice asked (s)
BEAT_MS, BEAT_FOR_S = 5, 1.0


class EventLoopTurn(QObject):
    """The time budget of the current turn of the GUI thread's event loop.

    Attributes
    ----------
    started : float
        When the turn began (``time.perf_counter``): the last beat, or the first ask after a rest.
    beat : QTimer
        Marks each pass of the event loop that runs timers, while slices are asking.
    """

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.started = time.perf_counter()
        self._asked = self.started
        self._waited: dict[object, int] = {}
        self.beat = QTimer(self)
        self.beat.setInterval(BEAT_MS)
        self.beat.timeout.connect(self._begin)

    def _begin(self) -> None:
        self.started = now = time.perf_counter()
        if now - self._asked > BEAT_FOR_S:
            self.beat.stop()

    def left(self) -> float:
        """Seconds of this turn's budget not yet spent (0 or less: the turn is full)."""
        now = time.perf_counter()
        self._asked = now
        if not self.beat.isActive():  # the first ask after a rest: a turn starts now
            self.beat.start()
            self.started = now
        return BUDGET_S - (now - self.started)

    def room_for(self, who: object, seconds: float) -> bool:
        """Whether ``who`` may do about ``seconds`` of work now: yes if that fits in what is left
        of the turn, or if it has already waited :data:`PATIENCE` turns (then its count starts
        over); no otherwise, and it is counted as having waited one more turn."""
        if self.left() >= seconds:
            self._waited.pop(who, None)
            return True
        waited = self._waited.get(who, 0) + 1
        if waited > PATIENCE:
            self._waited.pop(who, None)
            return True
        if len(self._waited) >= 64:  # slices of a window gone since: not kept alive by their counts
            self._waited.clear()
        self._waited[who] = waited
        return False


_turn: EventLoopTurn | None = None


def event_loop_turn() -> EventLoopTurn:
    """The GUI thread's turn (one per process: the slices of every window share it)."""
    global _turn
    if _turn is None:
        _turn = EventLoopTurn()
    return _turn
