"""TraceLoad: the rest of a big trace read a small piece at a time, between the window's repaints.

The app reads a trace's first piece itself (so a file that is no trace is refused before the run
on screen is touched); a trace longer than that is read on by a :class:`TraceLoad`: each
:meth:`TraceLoad.drain` reads the next piece (a few dozen kilobytes, decoded and checked in a few
milliseconds) and hands over its events, which the GUI thread's pump takes in as it takes a live
runner's, for a few milliseconds per timer tick. The window repaints and answers between pieces.

The reading happens on the GUI thread, not on a thread of its own: decoding and checking events
is Python work that holds the interpreter lock either way, so a reader thread reads no faster,
and sharing the lock with it made the GUI thread wait for it at every return from Qt (a repaint
of the canvas makes thousands): the window froze for hundreds of milliseconds at a time.
Cancelling stops the reading; what was read stays.
"""

from __future__ import annotations

import threading

from graphview.core.event_log import Piece
from graphview.core.trace import TraceError
from graphview.core.trace_pieces import TracePieces

#: bytes read per piece (about 115 events of a typical trace: decoded, checked and taken in
#: by the run in ~4 ms, so the pump's 12 ms per tick is never overrun by much)
SLICE_BYTES = 16 << 10


class TraceLoad:
    """Reads the rest of ``pieces``, a piece per :meth:`drain`.

    Attributes
    ----------
    done : threading.Event
        Set when reading has stopped: the end of the file, damage, a schema error or a cancel.
    error : str
        Why reading stopped early on an event that breaks the schema ("" otherwise).
    cancelled : bool
        The user cancelled the load.
    """

    def __init__(self, pieces: TracePieces) -> None:
        self.pieces = pieces
        self.done = threading.Event()
        self.error = ""
        self.cancelled = False
        self.abandoned = False  # another run replaced this one: nothing more is read
        pieces.piece_bytes = SLICE_BYTES
        if pieces.done:
            self._stop()

    def drain(self, limit: int = 20000) -> Piece:
        """The events of the next piece of the file, with their lines (an empty piece once reading
        has stopped). A piece holds a few hundred events, fewer than the pump's ``limit``."""
        if self.cancelled or self.abandoned:
            self._stop()
        if self.done.is_set():
            return Piece()
        try:
            piece = self.pieces.next_piece()
        except TraceError as exc:
            self.error = str(exc)
            self._stop()
            return Piece()
        if self.pieces.done:
            self._stop()
        return piece

    def _stop(self) -> None:
        self.pieces.close()
        self.done.set()

    @property
    def finished(self) -> bool:
        """Reading has stopped and every event read has been taken."""
        return self.done.is_set()

    @property
    def fraction(self) -> float:
        """How much of the file has been read (0 to 1)."""
        return self.pieces.position / self.pieces.size if self.pieces.size else 1.0

    def stop(self) -> None:
        """Cancel: stop reading (what was read stays)."""
        self.cancelled = True
        self._stop()
