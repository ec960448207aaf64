"""EventLog: a run's events kept compact, decoded when asked for.

A big run has a million events; as Python dicts they take some 800 bytes each, most of them
never looked at again once :class:`~graphview.core.run.Run` has indexed them. The log keeps
every event's kind in one byte and the events themselves as JSON text, compressed in blocks
of :data:`BLOCK` events (about 20 bytes an event). It reads like the list of event dicts it
replaces: ``len(log)``, ``log[i]``, ``log[a:b]`` and iteration give the events (decoded from
their JSON, as a trace file gives them), and the views that look for events of some kinds ask
for just those: :meth:`EventLog.where` and :meth:`EventLog.find` test the kind bytes and decode
only the events they hand out.

The newest events (the block being filled) stay as the dicts that came; a full block is turned
into text once (the lines of the trace file it was read from, when the caller passes them, else
``json.dumps``) and compressed.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import zlib
from typing import Iterable, Iterator

import numpy as np

#: events per compressed block: decoding one takes about 1 ms
BLOCK = 256
#: decoded blocks kept for the next look (stepping, a view reading around the cursor, the
#: gradient ledger going tensor by tensor through the ~25 backward regions each was changed in)
CACHED_BLOCKS = 64
#: the kind code of an event whose kind is not a string or came after 254 others (read from the event)
_ODD = 255


class EventLog:
    """A run's events, in order: compact storage with the reading interface of a list of dicts."""

    def __init__(self, events: Iterable[dict] = ()) -> None:
        self._codes: dict[str, int] = {}
        self._names: list[str] = []
        self._kinds = bytearray()
        # the block's events, one JSON text a line: zlib of it, or the text itself until a thread
        # of its own has compressed it (zlib lets go of the interpreter lock: the GUI thread
        # reads on meanwhile)
        self._blocks: list[bytes] = []
        self._tail: list[dict] = []
        self._tail_lines: list[bytes | None] = []
        self._cache: dict[int, list[dict]] = {}
        self._lock = threading.Lock()
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

    def extend(self, events: list[dict], lines: list[bytes | None] | None = None) -> None:
        """Add ``events`` in order (``lines[i]``: the JSON text of ``events[i]``, when the caller has
        it), as :meth:`append` of each does."""
        if not events:
            return
        kinds = [event.get("ev") for event in events]
        try:
            for kind in dict.fromkeys(kinds):  # each kind once, in the order they first come
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
        if any(line is None for line in lines):
            text = "\n".join(json.dumps(events[i], separators=(",", ":")) if line is None else line.decode("utf-8")
                             for i, line in enumerate(lines)).encode("utf-8")
        else:
            text = b"\n".join(lines)
        _append_compressed(self._blocks, text)
        self._tail = []
        self._tail_lines = []

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
    return json.loads(b"[" + text.replace(b"\n", b",") + b"]")


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
    """Events read from a trace, with the JSON line each came from (``lines[i]`` is ``self[i]``'s):
    a run keeps the line rather than encode the event again."""

    def __init__(self, events: Iterable[dict] = (), lines: list[bytes | None] | None = None) -> None:
        super().__init__(events)
        self.lines = list(lines) if lines is not None else [None] * len(self)
