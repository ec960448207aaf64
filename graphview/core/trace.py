"""Trace files: a run's event stream on disk.

Layout (``.gvtrace``): UTF-8 text, one JSON value per line. The first line is a header
``{"format": "graphview-trace", "version": 3, ...}``; every following line is a record, which
holds one event or several (:mod:`graphview.core.records`), or an event object (see
:mod:`graphview.core.events`). A version-1 trace holds one event object per line, and opens too. JSON never executes code when read, and a file cut off
mid-write (a killed recorder, a full disk) still opens: reading stops at the last complete
event and says so in a warning. A trace is someone else's data: the reader opens only regular
files, caps lines (:data:`LINE_CAP`) and strings, and range-checks numbers before any view sees
them (docs/safety.md, "A trace holds no limits of its own").
"""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import dataclass, field
from typing import IO, Iterable

from graphview.core.events import (MAX_COUNT, SCHEMA_VERSION, STRING_CAP, EventChecker, SchemaError,
                                   is_options, may_hold_surrogate, needs_tidying, tidy_event)
from graphview.core.records import RecordBuffer, event_encoder  # noqa: F401 - event_encoder: read from here too
from graphview.core.files import (PARTIAL_SUFFIX, OutputError, WriteError, close_quietly, commit_partial, open_partial,
                                  os_reason)

FORMAT_NAME = "graphview-trace"
SUFFIX = ".gvtrace"
#: the one rule by which graphview tells a script from a trace: a file whose name ends in ``.py``
#: is a script (graphview runs it when asked to); any other file is read as a trace and must be
#: one. What a file holds never makes graphview run it.
SCRIPT_SUFFIX = ".py"
#: The longest line a trace may have, in bytes. The longest event graphview writes is a script's
#: output (at most :data:`~graphview.core.events.OUTPUT_CAP` characters, up to 12 bytes each in JSON);
#: a longer line is damage: reading stops before it, with a warning, and never holds more of it.
LINE_CAP = 32 << 20


def is_script(path: str | os.PathLike) -> bool:
    """Whether graphview takes ``path`` for a script (its name ends in ``.py``), not a trace."""
    return os.fspath(path).endswith(SCRIPT_SUFFIX)


class TraceError(Exception):
    """A file that is not a readable graphview trace. The message is meant for the user."""


@dataclass
class Trace:
    header: dict
    events: list[dict]
    warnings: list[str] = field(default_factory=list)


def make_header(**extra: object) -> dict:
    from graphview import __version__

    header = {"format": FORMAT_NAME, "version": SCHEMA_VERSION, "graphview": __version__}
    header.update(extra)
    return header


class TraceWriteError(TraceError, WriteError):
    """The trace could not be written completely (a full disk, an I/O error)."""


class TraceWriter:
    """Writes a trace safely (see :mod:`graphview.core.files`).

    Events go to ``<path>.partial`` beside the target as records
    (:class:`~graphview.core.records.RecordBuffer`), encoded in bulk and flushed to the OS at
    every step end and error, and at least once a second (:meth:`tick`), so that a killed
    recorder loses at most the last second. :meth:`close` fsyncs it and renames it onto ``path``; :meth:`abandon` leaves it as a
    partial recording (its name says so, and reading it says so too). Raises
    :class:`TraceError` when the file cannot be started and :class:`TraceWriteError` when a
    write fails; after a failed write every later call is a no-op.
    """

    FLUSH_SECONDS = 1.0
    FLUSH_AT = frozenset({"step_end", "run_end", "error"})

    def __init__(self, path: str | os.PathLike, header: dict | None = None, *, started: IO[str] | None = None) -> None:
        """``started``: the ``.partial`` file of ``path`` as another writer opened it and wrote its
        header (a writer in another process: see graphview/core/trace_process.py), written on from here."""
        self.path = os.fspath(path)
        self.partial = self.path + PARTIAL_SUFFIX
        if is_script(self.path):
            raise TraceError(f"cannot write {self.path}: a trace named {SCRIPT_SUFFIX} would be taken for a script; "
                             f"name it {SUFFIX}")
        self._buffer = RecordBuffer()
        self.failed: TraceWriteError | None = None
        self._dirty = False
        if started is not None:
            self._file: IO[str] = started
            return
        try:
            self._file = open_partial(self.path)
        except OutputError as exc:
            raise TraceError(str(exc)) from None
        self._write_text(json.dumps(header or make_header(), separators=(",", ":")) + "\n")
        self.flush()

    def fileno(self) -> int:
        """The descriptor of the ``.partial`` file being written."""
        return self._file.fileno()

    @property
    def count(self) -> int:
        """Events written (or waiting for the next flush)."""
        return self._buffer.events

    @property
    def records(self) -> int:
        """Records written: lines after the header (see :mod:`graphview.core.records`)."""
        return self._buffer.records

    def _fail(self, exc: OSError) -> TraceWriteError:
        self.failed = TraceWriteError(
            f"cannot write {self.path}: {os_reason(exc)}; what was written before the error is kept "
            f"in {self.partial} (a partial recording)")
        close_quietly(self._file)
        return self.failed

    def _write_text(self, text: str) -> None:
        if self.failed is not None:
            raise self.failed
        try:
            self._file.write(text)
        except OSError as exc:
            raise self._fail(exc) from None

    def _dirtied(self) -> None:
        if not self._dirty:
            self._dirty = True
            self._dirty_since = time.monotonic()

    def write_raw(self, line: str) -> None:
        """Write one already-serialized event line (no trailing newline), after the events before it."""
        self._write_text(self._buffer.take() + line + "\n")
        self._buffer.events += 1
        self._buffer.records += 1
        self._dirtied()
        self.tick()

    def write(self, event: dict) -> None:
        """Take ``event``: encoded with the others at the next flush (at every step end, error and
        the run's end, and once what waits is a second old)."""
        if self.failed is not None:
            raise self.failed
        self._buffer.add(event)
        self._dirtied()
        if event.get("ev") in self.FLUSH_AT:
            self.flush()
        else:
            self.tick()

    def write_all(self, events: Iterable[dict]) -> None:
        for event in events:
            self.write(event)

    def tick(self) -> None:
        """Flush if what is buffered has waited a second (call it when no event comes, too)."""
        if self._dirty and time.monotonic() - self._dirty_since >= self.FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Encode what waits, write it and hand it to the OS."""
        if self.failed is not None:
            raise self.failed
        if len(self._buffer):
            self._write_text(self._buffer.take())
        try:
            self._file.flush()
        except OSError as exc:
            raise self._fail(exc) from None
        self._dirty = False

    def close(self) -> None:
        """Finish the trace: fsync it and rename it into place."""
        if self.failed is not None:
            raise self.failed
        if self._file.closed:
            return
        self.flush()
        try:
            commit_partial(self._file, self.path)
        except WriteError as exc:
            self.failed = TraceWriteError(f"{exc}; what was written is kept in {self.partial} (a partial recording)")
            raise self.failed from None

    def abandon(self) -> None:
        """Stop writing and keep what was written as ``<path>.partial``."""
        if self.failed is None and not self._file.closed:
            try:
                self.flush()
            except TraceWriteError:
                pass
        close_quietly(self._file)

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, exc_type, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abandon()


def write_trace(path: str | os.PathLike, events: Iterable[dict], header: dict | None = None) -> None:
    with TraceWriter(path, header) as writer:
        writer.write_all(events)


def read_trace(path: str | os.PathLike) -> Trace:
    """Read a trace file. Raises :class:`TraceError` with a one-line reason if it is unusable."""
    from graphview.core.trace_pieces import TracePieces

    return TracePieces(path, piece_bytes=4 << 20).read_all()


#: what graphview calls a file that is not a regular one, by its type
_FILE_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def open_trace_file(path: str) -> IO[bytes]:
    """``path`` opened for reading in binary; :class:`TraceError` with a one-line reason if it cannot
    be. Only a regular file is a trace: a FIFO (whose opening would wait for a writer, and whose
    reading never ends while one writes), a device (``/dev/zero`` reads without end) or a socket is
    refused, also through a symbolic link, without reading from it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise TraceError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise TraceError(f"{path} is a folder, not a trace file") from None
    except OSError as exc:
        raise TraceError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise TraceError(f"{path} is a folder, not a trace file")
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _FILE_KINDS if test(mode)), "no regular file")
            raise TraceError(f"{path} is {kind}, not a trace file: graphview reads traces only from regular files")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _parse_lines_at_once(lines: list[bytes], records: bool = False) -> list | None:
    """Every line decoded by one ``json.loads`` of them all as one array, or None if any line is not
    exactly one JSON object (or, with ``records``, a record: an array) (then they are read one by
    one, to say where the damage is).

    One call is three times faster than a call per line and shares the key strings of all events
    (the decoder reuses a key it has seen within one call): a quarter less memory for a big trace."""
    if not lines:
        return []
    try:
        parsed = json.loads(b"[" + b",".join(lines) + b"]")
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if len(parsed) != len(lines):
        return None
    if records:
        if not set(map(type, parsed)) <= _LINE_TYPES:
            return None
    elif not all(type(event) is dict for event in parsed):
        return None
    return parsed


#: what a line of a version-2 trace holds: an event, or a record (see graphview/core/records.py)
_LINE_TYPES = frozenset({dict, list})


def _check(checker: EventChecker, event: object, name: str, number: int) -> None:
    try:
        checker.check(event)
    except SchemaError as exc:
        raise TraceError(f"{name} is not a valid graphview trace: line {number}: {exc}") from None


def parse_header(line: bytes, name: str = "trace") -> dict:
    """The header of a trace (its first line), checked; :class:`TraceError` with a one-line reason if unusable."""
    try:
        header = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise TraceError(f"{name} is not a graphview trace (its first line is not a trace header)") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise TraceError(f"{name} is not a graphview trace (no '{FORMAT_NAME}' header)")
    version = header.get("version")
    if type(version) is not int or version > SCHEMA_VERSION or version < 1:
        raise TraceError(
            f"{name} is a graphview trace of version {version!r}; this graphview reads version "
            f"{SCHEMA_VERSION} and older (upgrade graphview to open it)"
        )
    for field, check in _HEADER_FIELDS.items():
        if field in header and not check(header[field]):
            raise TraceError(f"{name} is not a valid graphview trace: its header has a bad '{field}' field")
    return tidy_event(header)


def _strings(value: object) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _optional(check):
    return lambda value: value is None or check(value)


#: the header's fields graphview reads (any other is kept and never read), and their checks
_HEADER_FIELDS = {
    "options": is_options, "script": _optional(lambda v: type(v) is str), "argv": _optional(_strings),
    "graphview": _optional(lambda v: type(v) is str), "origin": _optional(lambda v: type(v) is str),
    "rank": _optional(lambda v: type(v) is int and 0 <= v <= MAX_COUNT),
    "world_size": _optional(lambda v: type(v) is int and 0 <= v <= MAX_COUNT),
}


def end_warnings(events: list[dict], warnings: list[str], name: str) -> list[str]:
    """What a reader says after the last event: no end-of-run event, a partial recording."""
    if events and events[-1].get("ev") != "run_end" and not warnings:
        warnings.append(f"{name} has no end-of-run event: the recording stopped before the script ended")
    if name.endswith(PARTIAL_SUFFIX):
        warnings.append(f"{name} is a partial recording: graphview could not finish writing it (it was killed, "
                        "or its disk was full)")
    return warnings


def parse_trace(data: bytes, name: str = "trace") -> Trace:
    """Parse a trace; every event is checked against the schema (:class:`EventChecker`).

    A line that is not JSON (damage, a cut-off last line) or is longer than :data:`LINE_CAP` ends
    the trace there, with a warning. An event that is JSON but breaks the schema (a wrong type, a
    missing field, a number out of range, an id no earlier event introduced, nesting beyond the
    limits) is no recording graphview made: the whole file is refused with a :class:`TraceError`
    naming the line and the fault. Strings are held to their caps (:func:`tidy_event`)."""
    import io

    from graphview.core.trace_pieces import TracePieces

    reader = TracePieces(name, piece_bytes=len(data) + 1, file=io.BufferedReader(io.BytesIO(data)), size=len(data))
    return reader.read_all()


def tidy_lines(events: list, kept: list, lines: list[bytes], data: bytes) -> None:
    """Hold the strings of ``events`` (decoded from ``lines``, which ``data`` holds) to their caps:
    an event whose line may hold a long string or a surrogate is tidied (:func:`tidy_event`) and
    its line dropped from ``kept`` (the run encodes the tidied event instead)."""
    if not lines or (max(map(len, lines)) <= STRING_CAP and not may_hold_surrogate(data)):
        return
    for i, line in enumerate(lines[:len(events)]):
        if needs_tidying(line):
            tidy_event(events[i])
            kept[i] = None

