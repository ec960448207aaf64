"""Background: long pure computations over what no longer changes, off the GUI thread.

What only reads a fixed part of a run (the module boxes of the nodes placed so far, say) can run
on a thread while the window keeps answering; the result comes back on the GUI thread, through a
queued signal, where the caller shows it (if the run it was made for is still the one shown).

Use it sparingly: while the thread runs Python it holds the interpreter lock, which the GUI thread
needs back after every call into Qt, so the window's repaints slow down meanwhile (a repaint of
the memory chart took 40 ms instead of 3). Work that can pause is better done in slices of the
event loop's turns (:mod:`graphview.qt.event_loop_turn`), as the diagnosis of a big run is.
"""

from __future__ import annotations

import sys
import threading

from PySide6.QtCore import QObject, Signal

class Background(QObject):
    """Runs ``work()`` on a thread and calls ``then(result)`` on the GUI thread."""

    _done = Signal(object, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pending = 0
        self._done.connect(self._deliver)

    def run(self, work, then) -> None:
        self.pending += 1

        def body() -> None:
            deliver = then
            try:
                result = work()
            except Exception as exc:  # noqa: BLE001 - said in one line, the window keeps going
                print(f"graphview: {getattr(work, '__name__', 'work')} failed: {exc}", file=sys.stderr)
                result, deliver = None, None
            try:
                self._done.emit(deliver, result)
            except RuntimeError:  # the window closed meanwhile (its objects are gone): nobody to tell
                pass

        threading.Thread(target=body, daemon=True).start()

    def _deliver(self, then, result) -> None:
        self.pending -= 1
        if then is not None:
            then(result)
