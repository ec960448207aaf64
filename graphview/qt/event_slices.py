"""Slices: work done later, in a pass of the event loop with room for it.

The run's controller and its summary do their work in slices, so the window repaints and answers
input between them: each slice waits for a turn of the event loop with about its time left
(:class:`~graphview.qt.event_loop_turn.EventLoopTurn`). A QObject, so that its timers are dropped
with the window that owns it.
"""

from __future__ import annotations

from functools import partial

from PySide6.QtCore import QObject, QTimer

from graphview.qt.event_loop_turn import event_loop_turn


class Slices(QObject):
    """The window's slices of work waiting for a turn of the event loop.

    Attributes
    ----------
    pending : int
        Slices scheduled and not yet run.
    turn : EventLoopTurn
        The budget of the current turn, which every slice shares.
    """

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self.pending = 0
        self.turn = event_loop_turn()  # the slices of one pass of the event loop share its time

    def later(self, work, seconds: float = 0.0) -> None:
        """Run ``work`` in a later pass of the event loop, after input and repaints (it counts in
        ``pending`` until then): a timer a few ms out, not a zero-delay call, which Qt runs
        before anything else that is waiting; and in a pass with about ``seconds`` of its time left
        (see :class:`EventLoopTurn`).

        (Partials, not closures that schedule themselves: such a closure is a reference cycle,
        and one the collector froze while it waited would keep its run alive for good.)"""
        self.pending += 1
        QTimer.singleShot(4, self, partial(self._when_there_is_room, work, seconds))  # (dropped with the window)

    def _when_there_is_room(self, work, seconds: float) -> None:
        if self.turn.room_for(work, seconds):
            self.pending -= 1
            work()
        else:
            QTimer.singleShot(4, self, partial(self._when_there_is_room, work, seconds))  # (dropped with the window)
