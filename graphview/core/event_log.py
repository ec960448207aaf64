"""EventLog: a run's events kept compact, decoded when asked for.

A big run has a million events; as Python dicts they take some 800 bytes each, most of them
never looked at again once :class:`~graphview.core.run.Run` has indexed them. The log keeps
every event's kind in one byte and the events themselves as JSON text (or pickled, see
:data:`_PICKLED`), compressed in blocks of :data:`BLOCK` events (about 20 bytes an event). It reads like the list of event dicts it
replaces: ``len(log)``, ``log[i]``, ``log[a:b]`` and iteration give the events (decoded from
their JSON, as a trace file gives them), and the views that look for events of some kinds ask
for just those: :meth:`EventLog.where` and :meth:`EventLog.find` test the kind bytes and decode
only the events they hand out.

The newest events (the block being filled) stay as the dicts that came; a full block is turned
into bytes once (the lines of the trace file it was read from, when the caller passes them; else
the events pickled, in memory only) and compressed.
"""

from __future__ import annotations

import json
import os
import pickle
import queue
import sys
import threading
import zlib
from operator import itemgetter
from typing import Iterable, Iterator

import numpy as np

from graphview.core.records import expand

#: events per compressed block: decoding one takes about 1 ms
BLOCK = 256
#: decoded blocks kept for the next look (stepping, a view reading around the cursor, the
#: gradient ledger going tensor by tensor through the ~25 backward regions each was changed in)
CACHED_BLOCKS = 64
#: how a block of events that came without their lines is kept: pickled, in this process only
#: (made here from events of JSON's types, read back only here; never written, never read from a
#: file): a quarter of the time encoding them as JSON took, and a third smaller
_PICKLED = 5
_PICKLE_START = pickle.PROTO + bytes([_PICKLED])  # (a JSON text starts with "{")
#: the kind code of an event whose kind is not a string or came after 254 others (read from the event)
_ODD = 255
_KIND = itemgetter("ev")


class EventLog:
    """A run's events, in order: compact storage with the reading interface of a list of dicts."""

    def __init__(self, events: Iterable[dict] = ()) -> None:
        self._codes: dict[str, int] = {}
        self._names: list[str] = []
        self._kinds = bytearray()
        # the block's events (one JSON text a line, or pickled): zlib of them, or the bytes themselves until a thread
        # of its own has compressed it (zlib lets go of the interpreter lock: the GUI thread
        # reads on meanwhile)
        self._blocks: list[bytes] = []
        self._tail: list[dict] = []
        self._tail_lines: list[bytes | None] = []
        self._cache: dict[int, list[dict]] = {}
        self._lock = threading.Lock()
        self._open_record: RecordLine | None = None  # the last record line sealed (see _records_text)
        self._has_odd = False
        self._size = BLOCK
        for event in events:
            self.append(event)

    # ------------------------------------------------------------------ writing
    def append(self, event: dict, line: bytes | None = None) -> None:
        """Add ``event``; ``line`` is its JSON text if the caller has it (a trace file's line)."""
        self._kinds.append(self._code(event.get("ev")))
        self._tail.append(event)
        self._tail_lines.append(line)
        if len(self._tail) >= self._size:
            self._seal()

    def extend(self, events: list[dict], lines: list[bytes | int | None] | None = None) -> list:
        """Add ``events`` in order (``lines[i]``: the JSON text of ``events[i]``, or of its record
        (see :class:`RecordLine`), when the caller has it), as :meth:`append` of each does.
        Returns their kinds (each event's ``ev``, None where it has none)."""
        if not events:
            return []
        try:
            kinds = list(map(_KIND, events))  # (in C: checked events are dicts with a kind)
        except (KeyError, TypeError):
            kinds = [event.get("ev") for event in events]
        try:
            codes = list(map(self._codes.get, kinds))
            if None in codes:  # a kind not seen before: each new one given a code, in the order they first come
                for kind in dict.fromkeys(kinds):
                    if kind not in self._codes:
                        self._code(kind)
                codes = list(map(self._codes.get, kinds))
        except TypeError:  # a kind that cannot be a key (an odd event): one at a time
            codes = [self._code(kind) for kind in kinds]
        if None in codes:  # kinds without a code of their own (no string, or after 254 others)
            codes = [_ODD if code is None else code for code in codes]
        if lines is None:
            lines = [None] * len(events)
        at, n = 0, len(events)
        while at < n:  # the events fill the block being filled, then whole blocks
            take = min(self._size - len(self._tail), n - at)
            self._tail.extend(events[at:at + take])
            self._tail_lines.extend(lines[at:at + take])
            at += take
            if len(self._tail) >= self._size:
                self._seal()
        self._kinds.extend(codes)  # last: a reader that counts the events finds each one stored
        return kinds

    def _code(self, kind: object) -> int:
        """The kind byte of ``kind``, given it a new one if it is a string not seen yet (at most 255)."""
        code = self._codes.get(kind) if type(kind) is str else _ODD
        if code is None:
            code = _ODD
            if len(self._names) < _ODD:
                code = self._codes[kind] = len(self._names)
                self._names.append(kind)
        if code == _ODD:
            self._has_odd = True
        return code

    def _seal(self) -> None:
        events, lines = self._tail, self._tail_lines
        text = None
        kinds = set(map(type, lines))  # (in C: a big trace seals thousands of blocks)
        if kinds <= _LINES:
            text = b"\n".join(lines)
        elif kinds <= _RECORD_LINES:
            text = self._records_text(lines)
        if text is None:  # (a live run's events: no line of their own)
            text = pickle.dumps(events, _PICKLED)
        last = next((line for line in reversed(lines) if type(line) is RecordLine), None)
        self._open_record = last if last is not None else self._open_record
        _append_compressed(self._blocks, text)
        self._tail = []
        self._tail_lines = []

    def _records_text(self, lines: list) -> bytes | None:
        """The block of events ``lines`` tell (a version-2 trace's records, see :class:`RecordLine`)
        as the lines of those records after a first line ``R<skip> <count>``: the events it holds
        are those of the records from the ``skip``-th on. None if a record's start is unknown."""
        first = lines[0]
        records = [line for line in lines if type(line) is RecordLine]
        skip = 0
        if type(first) is int:  # the block starts inside a record that the block before began
            if self._open_record is None:
                return None
            records.insert(0, self._open_record)
            skip = first
        return b"R%d %d\n" % (skip, len(lines)) + b"\n".join(records)

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self._kinds)

    def __bool__(self) -> bool:
        return len(self._kinds) > 0

    def _block(self, number: int) -> list[dict]:
        """The events of block ``number`` (the tail when it is the block being filled)."""
        if number == len(self._blocks):
            return self._tail
        with self._lock:
            found = self._cache.get(number)
        if found is not None:
            return found
        events = _decode(self._blocks[number])
        with self._lock:
            if len(self._cache) >= CACHED_BLOCKS:
                self._cache.pop(next(iter(self._cache)))
            self._cache[number] = events
        return events

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self._kinds)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("event index out of range")
        return self._block(index // self._size)[index % self._size]

    def __iter__(self) -> Iterator[dict]:
        """Every event in order (blocks decoded one at a time, not kept)."""
        for number in range(len(self._blocks)):
            yield from _decode(self._blocks[number])
        yield from list(self._tail)

    def __eq__(self, other: object) -> bool:
        """Equal to a list (or log) of the same events in the same order."""
        if not isinstance(other, (EventLog, list)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def kind(self, index: int) -> str | None:
        """The ``ev`` of event ``index``, without decoding it."""
        code = self._kinds[index]
        if code == _ODD:
            return self[index].get("ev")
        return self._names[code]

    def _mask(self, kinds: Iterable[str], start: int, stop: int) -> np.ndarray:
        codes = [self._codes[k] for k in kinds if k in self._codes]
        if self._has_odd:
            codes.append(_ODD)  # a kind without a code of its own may hide among the odd ones
        # a copy of the kinds asked about: a view would pin the bytearray, and an append (another
        # thread taking in events) would then fail
        chunk = np.frombuffer(self._kinds[start:stop], dtype=np.uint8) if stop > start else np.zeros(0, dtype=np.uint8)
        return np.isin(chunk, codes) if codes else np.zeros(len(chunk), dtype=bool)

    def indices(self, kinds: Iterable[str], start: int = 0, stop: int | None = None) -> list[int]:
        """Indices of the events of these kinds in ``start <= i < stop``, in order."""
        kinds = set(kinds)
        n = len(self)
        stop = n if stop is None else max(0, min(stop, n))
        start = max(0, start)
        found = (np.flatnonzero(self._mask(kinds, start, stop)) + start).tolist()
        if self._has_odd:
            found = [i for i in found if self.kind(i) in kinds]
        return found

    def where(self, kinds: Iterable[str], start: int = 0, stop: int | None = None) -> Iterator[tuple[int, dict]]:
        """``(index, event)`` for the events of these kinds in ``start <= index < stop``, in order."""
        kinds = set(kinds)
        for i in self.indices(kinds, start, stop):
            yield i, self[i]

    def find(self, kinds: Iterable[str], start: int, step: int = 1) -> int | None:
        """The first index from ``start`` (included) going by ``step`` (1 or -1) whose event is of
        one of ``kinds``, or None."""
        kinds = set(kinds)
        n = len(self)
        width = 512
        if step > 0:
            at = max(0, start)
            while at < n:
                hits = self.indices(kinds, at, at + width)
                if hits:
                    return hits[0]
                at += width
                width *= 4
        else:
            at = min(start, n - 1) + 1
            while at > 0:
                hits = self.indices(kinds, max(0, at - width), at)
                if hits:
                    return hits[-1]
                at -= width
                width *= 4
        return None


def _decode(block: bytes) -> list[dict]:
    text = block if type(block) is _Text else zlib.decompress(block)
    if text[:2] == _PICKLE_START:
        return pickle.loads(text)
    if text[:1] == b"R":
        head, _, body = text.partition(b"\n")
        skip, count = map(int, head[1:].split())
        events = []
        for record in json.loads(b"[" + body.replace(b"\n", b",") + b"]"):
            events.extend(expand(record))
        return events[skip:skip + count]
    return json.loads(b"[" + text.replace(b"\n", b",") + b"]")


class RecordLine(bytes):
    """The line of a version-2 trace's record (graphview/core/records.py), given as the line of the
    first event the record holds; the events after it in the same record are given their
    position in it instead (1, 2, ...). A block of such events keeps the records' lines, as a
    block of a version-1 trace keeps the events' lines."""


#: what a sealed block's lines are, when they are a trace's: its events' lines, or its records' (and positions in them)
_LINES = frozenset({bytes})
_RECORD_LINES = frozenset({RecordLine, int})


class _Text(bytes):
    """A block's JSON text, not compressed yet."""


_compressing: queue.SimpleQueue | None = None
_compressing_lock = threading.Lock()


def compress_on_a_thread() -> bool:
    """Whether sealed blocks are compressed on a thread of their own: not where torch runs."""
    return "torch" not in sys.modules


def _append_compressed(blocks: list, text: bytes) -> None:
    """Append ``text``'s zlib to ``blocks``: at once, or as a :class:`_Text` that the compressing
    thread replaces by its zlib (read as it is until then).

    Not on a thread in a process that runs torch (a script recording itself, the tests): a thread
    of ours there, busy beside torch's own, made a bfloat16 training step differ in its last bits
    from the same step run alone (1 run in 10)."""
    if not compress_on_a_thread():
        blocks.append(zlib.compress(text, 1))
        return
    blocks.append(_Text(text))
    global _compressing
    with _compressing_lock:
        if _compressing is None:
            _compressing = queue.SimpleQueue()
            threading.Thread(target=_compress_forever, args=(_compressing,), name="graphview-compress",
                             daemon=True).start()
    _compressing.put((blocks, len(blocks) - 1))


def _compress_forever(work: queue.SimpleQueue) -> None:
    while True:
        blocks, number = work.get()
        try:
            blocks[number] = zlib.compress(blocks[number], 1)  # (one item of a list: set at once)
        except Exception:  # noqa: BLE001 - (out of memory): the block stays readable as it is
            continue


def _forked() -> None:
    """A forked process has none of its parent's threads: it starts a compressing thread of its own."""
    global _compressing, _compressing_lock
    _compressing = None
    _compressing_lock = threading.Lock()


os.register_at_fork(after_in_child=_forked)


class Piece(list):
    """Events read from a trace, with the JSON line each came from (``lines[i]`` is ``self[i]``'s;
    a :class:`RecordLine` or a position in it for a version-2 trace's): a run keeps the line
    rather than encode the event again."""

    def __init__(self, events: Iterable[dict] = (), lines: list[bytes | None] | None = None) -> None:
        super().__init__(events)
        self.lines = list(lines) if lines is not None else [None] * len(self)
