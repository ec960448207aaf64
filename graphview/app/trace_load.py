"""TraceLoad: a big trace read on a thread of its own while the window shows what came so far.

The app reads a trace's first piece itself (so a file that is no trace is refused before the run
on screen is touched); a trace longer than that is read on by a :class:`TraceLoad`, which puts its
events in a queue that the GUI thread drains in batches, as it drains a live runner's. The pieces
are small (a quarter of a megabyte), so decoding one never holds the interpreter for long and the
window keeps answering. Cancelling stops the reading; what was read stays.
"""

from __future__ import annotations

import queue
import threading
import time

from graphview.core.event_log import Piece
from graphview.core.trace import TraceError
from graphview.core.trace_pieces import TracePieces

#: bytes per piece read on the thread: small, so no single decode (one call that keeps the
#: interpreter lock, about 2 ms for 64 KB) holds the GUI thread up for long
THREAD_PIECE_BYTES = 64 << 10
#: pieces read ahead of the GUI at most (the reader waits beyond that)
QUEUE_PIECES = 64
#: pieces read ahead of the GUI after which the reader pauses until the GUI has taken some
AHEAD_PIECES = 16


class TraceLoad:
    """Reads the rest of ``pieces`` on a thread; :meth:`drain` hands the events to the GUI thread.

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
        self.queue: queue.Queue = queue.Queue(maxsize=QUEUE_PIECES)
        self.done = threading.Event()
        self.error = ""
        self.cancelled = False
        self.abandoned = False  # another run replaced this one: nobody reads the queue any more
        self._held = Piece()
        pieces.piece_bytes = THREAD_PIECE_BYTES
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while not (self.pieces.done or self.cancelled or self.abandoned):
                try:
                    piece = self.pieces.next_piece()
                except TraceError as exc:
                    self.error = str(exc)
                    break
                while piece and not (self.cancelled or self.abandoned):
                    try:
                        self.queue.put(piece, timeout=0.2)
                        break
                    except queue.Full:
                        continue
                while self.queue.qsize() >= AHEAD_PIECES and not (self.cancelled or self.abandoned):
                    # far enough ahead: let the GUI thread have the interpreter. Each call it makes
                    # into Qt gives the lock up, and taking it back waits on a busy reader: reading
                    # on regardless would make every slice of the GUI wait, not finish the load sooner
                    time.sleep(0.02)
        finally:
            self.pieces.close()
            self.done.set()

    def drain(self, limit: int = 20000) -> Piece:
        """Up to ``limit`` events read and not yet taken, with their lines."""
        events = self._held
        while len(events) < limit:
            try:
                piece = self.queue.get_nowait()
            except queue.Empty:
                break
            events.extend(piece)
            events.lines.extend(piece.lines)
        self._held = Piece(events[limit:], events.lines[limit:])
        return Piece(events[:limit], events.lines[:limit])

    @property
    def finished(self) -> bool:
        """Reading has stopped and every event read has been taken."""
        return self.done.is_set() and self.queue.empty() and not self._held

    @property
    def fraction(self) -> float:
        """How much of the file has been read (0 to 1)."""
        return self.pieces.position / self.pieces.size if self.pieces.size else 1.0

    def stop(self) -> None:
        """Cancel: stop reading (what was read stays)."""
        self.cancelled = True
