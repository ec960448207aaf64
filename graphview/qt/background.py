"""Background: long pure computations over a finished run, off the GUI thread.

Once a big run is complete nothing changes it any more, so what only reads it (the diagnostics
of a million events, say) can run on a thread while the window keeps answering; the result comes
back on the GUI thread, through a queued signal, where the caller shows it (if the run it was
made for is still the one shown).
"""

from __future__ import annotations

import sys
import threading

from PySide6.QtCore import QObject, Signal

#: runs with more events than this are summarised on a thread
BACKGROUND_ABOVE = 100_000


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
            try:
                result = work()
            except Exception as exc:  # noqa: BLE001 - said in one line, the window keeps going
                print(f"graphview: {getattr(work, '__name__', 'work')} failed: {exc}", file=sys.stderr)
                self._done.emit(None, None)
                return
            self._done.emit(then, result)

        threading.Thread(target=body, daemon=True).start()

    def _deliver(self, then, result) -> None:
        self.pending -= 1
        if then is not None:
            then(result)
