"""Reading a trace a piece at a time: what the app uses to open a big trace while it stays live.

:class:`TracePieces` checks the header when it opens the file, then hands out the events a few
megabytes at a time (:meth:`TracePieces.next_piece`), every event checked against the schema as
:func:`graphview.core.trace.parse_trace` checks it, with the same line numbers in its messages
and the same warnings about damage, a cut-off end or a partial recording. What it has handed
out is all it keeps in memory of the file: the caller builds its run from the pieces as they
come.
"""

from __future__ import annotations

import json
import os

from graphview.core.event_log import Piece
from graphview.core.events import EventChecker
from graphview.core.trace import Trace, TraceError, _check, _parse_lines_at_once, end_warnings, open_trace_file, parse_header

#: bytes read per piece (about 1,300 events of a typical trace: checked in some 50 ms)
PIECE_BYTES = 256 << 10


class TracePieces:
    """A trace file read piece by piece.

    Raises :class:`TraceError` (a one-line reason) when the file cannot be opened or its header
    is not a graphview trace's, and from :meth:`next_piece` when an event breaks the schema.

    Attributes
    ----------
    header : dict
        The trace's header.
    warnings : list of str
        Damage found so far (reading stops at a line that is not JSON, as ``parse_trace`` does).
    done : bool
        Every readable event has been handed out.
    count : int
        Events handed out so far.
    """

    def __init__(self, path: str | os.PathLike, piece_bytes: int | None = None) -> None:
        self.path = os.fspath(path)
        self.piece_bytes = piece_bytes or PIECE_BYTES
        self._file = open_trace_file(self.path)
        self.size = os.fstat(self._file.fileno()).st_size
        first = self._file.readline()
        self._position = len(first)
        if not first.strip() and self._only_whitespace_left():
            self.close()
            raise TraceError(f"{self.path} is empty, not a graphview trace")
        try:
            self.header = parse_header(first.rstrip(b"\n"), self.path)
        except TraceError:
            self.close()
            raise
        self.warnings: list[str] = []
        self.done = False
        self.count = 0
        self._checker = EventChecker()
        self._last: dict | None = None

    def _only_whitespace_left(self) -> bool:
        while True:
            block = self._file.read(1 << 16)
            if not block:
                return True
            if block.strip():
                return False

    @property
    def position(self) -> int:
        """Bytes of the file read so far (counted, not asked of the file: another thread may ask
        while this one reads, and the file's lock would make it wait)."""
        return self._position

    def next_piece(self) -> Piece:
        """The next events, with their lines (an empty piece once :attr:`done`)."""
        if self.done:
            return Piece()
        raw = self._file.readlines(self.piece_bytes)
        self._position += sum(map(len, raw))
        at_end = len(raw) == 0 or not raw[-1].endswith(b"\n") or self._file.peek(1) == b""
        lines = [line[:-1] if line.endswith(b"\n") else line for line in raw]
        complete = not raw or raw[-1].endswith(b"\n")
        number = self.count + 2  # the line number of the first event of this piece
        events: list[dict] = []
        kept: list[bytes] = []
        whole = lines if complete else lines[:-1]
        parsed = _parse_lines_at_once(whole)
        if parsed is not None:
            for offset, event in enumerate(parsed):
                _check(self._checker, event, self.path, number + offset)
            events = parsed
            kept = whole
            rest = lines[len(parsed):]
        else:
            rest = lines
        start = number + len(events)
        for offset, line in enumerate(rest):
            try:
                event = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                total = self.count + len(events)
                if offset == len(rest) - 1 and not complete:
                    self.warnings.append(f"{self.path} ends in an incomplete event (the recording was cut off); "
                                         f"opened the {total} complete events before it")
                else:
                    self.warnings.append(f"{self.path} is damaged at line {start + offset}; opened the {total} "
                                         "events before it")
                at_end = True
                break
            except RecursionError:
                raise TraceError(f"{self.path} is not a valid graphview trace: line {start + offset} nests deeper "
                                 "than any event") from None
            _check(self._checker, event, self.path, start + offset)
            events.append(event)
            kept.append(line)
        self.count += len(events)
        if events:
            self._last = events[-1]
        if at_end:
            self.done = True
            self._position = self.size
            end_warnings([self._last] if self._last is not None else [], self.warnings, self.path)
            self.close()
        return Piece(events, kept[:len(events)])

    def close(self) -> None:
        self._file.close()

    def read_all(self) -> Trace:
        """The rest of the trace in one :class:`~graphview.core.trace.Trace` (what ``read_trace`` returns)."""
        events = Piece()
        while not self.done:
            piece = self.next_piece()
            events.extend(piece)
            events.lines.extend(piece.lines)
        return Trace(header=self.header, events=events, warnings=self.warnings)
