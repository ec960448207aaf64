"""Reading a trace a piece at a time: what the app uses to open a big trace while it stays live.

:class:`TracePieces` checks the header when it opens the file, then hands out the events a few
megabytes at a time (:meth:`TracePieces.next_piece`), every event checked against the schema,
with its line number in the message, its strings held to their caps, and warnings about damage,
a line over :data:`~graphview.core.trace.LINE_CAP`, a cut-off end or a partial recording. What it
has handed out is all it keeps in memory of the file (and at most one line of the cap more): the
caller builds its run from the pieces as they come. :func:`graphview.core.trace.parse_trace` and
``read_trace`` read through it too.
"""

from __future__ import annotations

import json
import os
from typing import IO

from graphview.core.event_log import Piece, RecordLine
from graphview.core.events import (STRING_CAP, EventChecker, SchemaError, may_hold_long_string, may_hold_surrogate,
                                   tidy_event)
from graphview.core.records import expand
from graphview.core.trace import (LINE_CAP, Trace, TraceError, _check, _parse_lines_at_once, end_warnings,
                                  open_trace_file, parse_header, tidy_lines)

#: bytes read per piece (about 1,300 events of a typical trace: checked in some 50 ms)
PIECE_BYTES = 256 << 10


class TracePieces:
    """A trace file read piece by piece.

    Raises :class:`TraceError` (a one-line reason) when the file cannot be opened or its header
    is not a graphview trace's, and from :meth:`next_piece` when an event breaks the schema.
    ``file`` and ``size``: read from that open binary file instead (``path`` names it in messages).

    Attributes
    ----------
    header : dict
        The trace's header.
    warnings : list of str
        Damage found so far (reading stops at a line that is not JSON, or is too long).
    done : bool
        Every readable event has been handed out.
    count : int
        Events handed out so far.
    """

    def __init__(self, path: str | os.PathLike, piece_bytes: int | None = None, file: IO[bytes] | None = None,
                 size: int | None = None) -> None:
        self.path = os.fspath(path)
        self.piece_bytes = piece_bytes or PIECE_BYTES
        self._file = open_trace_file(self.path) if file is None else file
        self.size = os.fstat(self._file.fileno()).st_size if size is None else size
        first = self._file.readline(LINE_CAP + 1)
        self._position = len(first)
        if not first.strip() and self._only_whitespace_left():
            self.close()
            raise TraceError(f"{self.path} is empty, not a graphview trace")
        if len(first) > LINE_CAP and not first.endswith(b"\n"):
            self.close()
            raise TraceError(f"{self.path} is not a graphview trace (its first line is longer than "
                             f"{LINE_CAP >> 20} MiB, longer than any trace header)")
        try:
            self.header = parse_header(first.rstrip(b"\n"), self.path)
        except TraceError:
            self.close()
            raise
        self.warnings: list[str] = []
        self.done = False
        self.count = 0
        self._records = self.header["version"] >= 2  # its lines may be records (graphview/core/records.py)
        self._lines = 0  # lines after the header read so far
        self._surrogates = False  # whether the piece being read may hold a surrogate
        self._tidy = False  # whether a line of it may need tidying
        self._checker = EventChecker()
        self._last: dict | None = None
        self._rest = b""  # the start of a line the last piece read part of

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

    def _read_lines(self) -> tuple[list[bytes], bool, bool, bytes]:
        """The next whole lines (about :attr:`piece_bytes` of them, at least one unless the file ends),
        without their newlines: ``(lines, complete, at_end, data)``. ``complete``: the last line
        ended in a newline (at the file's end it may not have); ``at_end``: nothing is left to read.
        A line longer than :data:`LINE_CAP` is handed out as read so far, never read further: the
        caller stops there."""
        block = self._file.read(self.piece_bytes)
        data = self._rest + block
        cut = data.rfind(b"\n")
        if cut < 0 and data and len(data) <= LINE_CAP:  # not one whole line yet: the rest of it, up to the cap
            more = self._file.readline(LINE_CAP + 1 - len(data))
            block += more
            data += more
            cut = data.rfind(b"\n")
        self._position += len(block)
        at_end = self._file.peek(1) == b"" if hasattr(self._file, "peek") else not block
        whole, self._rest = (data[:cut], data[cut + 1:]) if cut >= 0 else (b"", data)
        lines = whole.split(b"\n") if cut >= 0 else []
        complete = True
        if self._rest and (at_end or len(self._rest) > LINE_CAP):
            lines.append(self._rest)  # the cut-off last line, or one over the cap (never read further)
            complete = False
            at_end = True
            self._rest = b""
        return lines, complete, at_end, data

    def next_piece(self) -> Piece:
        """The next events, with their lines (an empty piece once :attr:`done`; the lines are
        None for a version-2 trace, whose lines are records)."""
        if self.done:
            return Piece()
        lines, complete, at_end, data = self._read_lines()
        number = self._lines + 2  # the line number of the first line of this piece
        long = next((i for i, line in enumerate(lines) if len(line) > LINE_CAP), None)
        if long is not None:  # decoded up to it, never it
            lines, complete, at_end = lines[:long], True, True
        events: list[dict] = []
        whole = lines if complete else lines[:-1]
        parsed = _parse_lines_at_once(whole, self._records)
        # (a version-2 line holds several events: those of a line that may hold a long string or a
        # surrogate are tidied, see tidy_lines)
        self._surrogates = self._records and may_hold_surrogate(data)
        self._tidy = bool(self._records and lines and (self._surrogates or max(map(len, lines)) > STRING_CAP))
        kept: list = []  # a version-2 trace's: the line of each event's record (RecordLine), see _take
        if parsed is not None:
            self._take(parsed, number, events, whole, kept)
            rest = lines[len(parsed):]
        else:
            parsed, rest = [], lines
        start = number + len(parsed)
        for offset, line in enumerate(rest):
            try:
                item = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                total = self.count + len(events)
                if offset == len(rest) - 1 and not complete:
                    self.warnings.append(f"{self.path} ends in an incomplete event (the recording was cut off); "
                                         f"opened the {total} complete events before it")
                else:
                    self.warnings.append(f"{self.path} is damaged at line {start + offset}; opened the {total} "
                                         "events before it")
                at_end = True
                long = None
                break
            except RecursionError:
                raise TraceError(f"{self.path} is not a valid graphview trace: line {start + offset} nests deeper "
                                 "than any event") from None
            self._take([item], start + offset, events, [line], kept)
            parsed.append(item)
        if long is not None:
            self.warnings.append(f"{self.path}: line {number + long} is longer than {LINE_CAP >> 20} MiB, longer than "
                                 f"any event graphview writes; opened the {self.count + len(events)} events before it")
        self._lines += len(parsed)
        if not self._records:
            kept = list(lines[:len(parsed)])
            tidy_lines(events, kept, lines, data)
        self.count += len(events)
        if events:
            self._last = events[-1]
        if at_end:
            self.done = True
            self._position = self.size
            end_warnings([self._last] if self._last is not None else [], self.warnings, self.path)
            self.close()
        return Piece(events, kept[:len(events)])

    def _take(self, items: list, number: int, events: list, lines: list[bytes], kept: list) -> None:
        """Check the decoded lines ``items`` (the first is line ``number``, ``lines`` their text) and
        add their events to ``events``; for a version-2 trace, to ``kept`` what a run keeps of
        each event instead of its line (see :class:`~graphview.core.event_log.RecordLine`)."""
        checker, path = self._checker, self.path
        if not self._records:
            for offset, event in enumerate(items):
                _check(checker, event, path, number + offset)
            events.extend(items)
            return
        check_all = checker.check_all
        for offset, item in enumerate(items):
            try:
                expanded = expand(item)
                check_all(expanded)
            except SchemaError as exc:
                raise TraceError(f"{path} is not a valid graphview trace: line {number + offset}: {exc}") from None
            if self._tidy and self._needs_tidying(lines[offset]):
                for event in expanded:
                    tidy_event(event)
                kept.extend([None] * len(expanded))  # (the run keeps the tidied events, not the line)
            else:
                kept.append(RecordLine(lines[offset]))
                kept.extend(range(1, len(expanded)))
            events.extend(expanded)

    def _needs_tidying(self, line: bytes) -> bool:
        """Whether a line of this piece may hold a long string or a surrogate (needs_tidying,
        without looking for surrogates where the piece has none)."""
        return may_hold_long_string(line) or (self._surrogates and may_hold_surrogate(line))

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
