"""The runner's event channel: events in batches, each a pickle of a list of plain events.

The runner hands its events to the process that started it (the window, or the command line) as
they come, in batches: what one torch call made, written when control goes back to the script
(see ``EventPipe`` in graphview/capture/runner.py). A batch on the pipe is a :data:`HEADER`
(:data:`MAGIC` and the pickle's length) followed by ``pickle.dumps(events)``, at most
:data:`PICKLE_CAP` long (an event longer than that goes as JSON, behind :data:`JSON_MAGIC`). Pickling a list of
dicts is one C call that writes floats as their 8 bytes: about 0.5 us an event, where merging
events into a trace's records and encoding them as JSON cost the recording script about 4 us
(the floats' shortest decimal forms most of it). The trace's records (graphview/core/records.py)
are made by whoever writes a trace, from the events it reads here.

Whatever comes out of the pipe is treated as hostile (the script runs in the process that writes
it): :class:`BatchReader` unpickles with no class or function the stream may name (a batch that
names one is refused before anything of it is built), makes each compact event (a tuple: see
graphview/core/compact_events.py) the dict it stands for, and accepts only what JSON carries: dicts,
lists, strings, numbers, booleans and None (a tuple becomes a list and a number's key its text,
as JSON makes them; whole numbers within 64 bits), nested at most :data:`DEPTH_MAX` deep (a cycle
never ends), with at most one container per two bytes of the batch (a small batch that shares
one list a billion ways is refused, not walked). Each event is then checked against the schema by
the reader's caller, as a trace file's lines are. Unpickling builds a batch's objects before they
can be looked at: a hostile batch of :data:`PICKLE_CAP` bytes can make a few hundred MiB of them
for a moment before it is refused, and the reading stops there.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct

from graphview.core.compact_events import NotCompact, expand

#: the first bytes of a batch whose events follow as a pickle
MAGIC = b"GVB1"
#: the first bytes of a batch whose events follow as JSON (one event whose pickle is over PICKLE_CAP)
JSON_MAGIC = b"GVJ1"
#: the magic and the length of what follows (8 bytes, little-endian)
HEADER = struct.Struct("<4sQ")
#: a pickled batch is at most this long: unpickling builds its objects before they can be looked at
#: (an empty set, 216 bytes, from one byte of pickle), so a hostile one makes at most a few hundred
#: MiB of them before it is refused. A longer batch is written as several; a longer event, as JSON.
PICKLE_CAP = 1 << 20
#: a batch as JSON is at most this long (a trace's longest line: an event longer could not be read
#: back from a trace either)
JSON_CAP = 32 << 20
#: plain events nest a few levels deep (a summary inside a list of gradients); deeper is not an event
DEPTH_MAX = 32
#: whole numbers in events fit in 64 bits (sizes, ids, an int64 or uint64 tensor's values); pickle
#: carries any, and one of thousands of digits is slow to turn into text, or refuses to
INT_LIMIT = 1 << 64

_PROTOCOL = 5
_SCALARS = frozenset({str, int, float, bool, type(None)})
_STR = frozenset({str})
_SHARED = "more values than its bytes hold: one list or object shared many times"
_CAPS = {MAGIC: PICKLE_CAP, JSON_MAGIC: JSON_CAP}


def encode_batch(events: list) -> bytes:
    """``events`` framed for the channel: :data:`HEADER`, then their pickle (as several batches
    where it would be longer than :data:`PICKLE_CAP`, and one event that long as JSON). A batch
    holding anything but dicts, lists, tuples, strings, numbers, booleans and None (torch's
    version string, a subclass of str) is first made what JSON makes of it (its text, for an
    object JSON does not know), as a trace would hold it. (Sets and bytes are pickled as they
    are, and refused by the reader: no event the recorder makes holds them.)"""
    return BatchEncoder().encode(events)


class BatchEncoder:
    """:func:`encode_batch` for a writer of many small batches (one a torch call), in the pieces
    the pickler writes (:meth:`encode_parts`), for a writer that hands them to the system as they
    are (``os.writev``): a batch is never copied whole in Python. A step of a 256-layer MLP is
    21.7 MB of batches (the small tensors' values sent to be summarized: see NOTE [Values sent to
    be summarized] in graphview/core/value_stats.py); copied into a buffer, out of it, and once
    more behind the header, those copies were 8-9 ms of the 16.5 ms its encoding took.
    Each batch gets a pickler of its own (1.2 us): a pickler kept and
    cleared instead keeps its memo table as large as its largest batch made it (it never shrinks),
    and clearing walks all of it: after one batch of a backward's thousands of events, each later
    batch of twenty paid ~25 us for it (12 ms of a 256-layer MLP's step). The bytes are those
    :func:`encode_batch` gives. It keeps nothing from one batch to the next."""

    __slots__ = ()

    def encode(self, events: list) -> bytes:
        return b"".join(self.encode_parts(events))

    def encode_parts(self, events: list) -> list:
        """:meth:`encode`'s bytes in pieces (bytes objects, never changed after): the header, then
        the pickle's frames as the pickler wrote them, for each batch ``events`` makes."""
        parts = _Parts((b"",))  # (the header's place: its length is known once the pickle is made)
        try:  # each batch a pickle of its own, and nothing of it kept (a long string of the script's)
            pickler = _PlainPickler(parts, _PROTOCOL)
            # no memo: events are trees, made once each (a memo entry for every tuple, list and
            # string was a quarter of the pickling: 2.2 of 9.1 ms a 256-layer MLP's step)
            pickler.fast = True
            pickler.dump(events)
        except _NotPlain:
            events = [_as_json_holds(event) if _not_plain(event) else event for event in events]
            parts = _Parts((b"", pickle.dumps(events, _PROTOCOL)))
        except ValueError:  # (a cycle, which no event of graphview's holds: pickled as pickle does,
            parts = _Parts((b"",))  # for the reader to refuse)
            _PlainPickler(parts, _PROTOCOL).dump(events)
        length = sum(map(len, parts))
        if length <= PICKLE_CAP:
            parts[0] = HEADER.pack(MAGIC, length)
            return parts
        if len(events) > 1:  # as many batches as its length says (each pickled again, once: halving
            # a backward's batch of sent values again and again pickled each event five times)
            pieces = min(len(events), -(-length * 4 // (PICKLE_CAP * 3)))
            step = -(-len(events) // pieces)
            return [part for start in range(0, len(events), step) for part in self.encode_parts(events[start:start + step])]
        text = json.dumps([_as_json_holds(event) for event in events], separators=(",", ":")).encode("ascii")
        return [HEADER.pack(JSON_MAGIC, len(text)), text]


class _Parts(list):
    """The pickler's file: each piece it writes is kept as it came (a frame's bytes, or a long
    string's or bytes' own payload), not copied into a buffer; a piece that is not ``bytes`` (a
    ``bytearray``'s own memory, which no event of graphview's holds) is copied, so that no piece
    changes before it is written."""

    __slots__ = ()

    def write(self, piece) -> None:
        self.append(piece if type(piece) is bytes else bytes(piece))


def _not_plain(event) -> bool:
    try:
        _PlainPickler(io.BytesIO(), _PROTOCOL).dump(event)
    except _NotPlain:
        return True
    return False


def _as_json_holds(event):
    """``event`` as JSON holds it (an object JSON does not know as its text); a compact event made
    its dict first (the values it sends summarized: JSON holds no bytes)."""
    if type(event) is tuple:
        event = expand(event)
    return json.loads(json.dumps(event, separators=(",", ":"), default=str))


class _NotPlain(Exception):
    pass


class _PlainPickler(pickle.Pickler):
    """Pickles exact dicts, lists, tuples, strings, numbers, booleans and None as pickle does
    (in C, never asking :meth:`reducer_override`); anything else raises :class:`_NotPlain`."""

    def reducer_override(self, obj):
        raise _NotPlain


def descriptor_identity(fd: int) -> tuple | None:
    """What ``fd`` is (device and inode), or None if it is not open: a pipe's end is checked before
    each use, since the program may close it and open a file of its own on its number."""
    try:
        st = os.fstat(fd)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


class ChannelError(ValueError):
    """Bytes on the channel that are not a batch of plain events; the message says what they are.
    ``before``: the batches read whole before them (what the runner wrote up to there)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.before: list[list] = []


class _PlainUnpickler(pickle.Unpickler):
    """Builds dicts, lists, strings and numbers only: a stream that names a class or function (to
    build or call it) is refused before anything of it runs."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"it names {str(module)[:40]}.{str(name)[:40]}")


class BatchReader:
    """Turns the bytes read from the channel, in whatever pieces they come, into batches of events."""

    def __init__(self) -> None:
        self._pending = bytearray()
        self.batches = 0  # batches read whole so far

    @property
    def waiting(self) -> int:
        """Bytes of a batch not read whole yet (a runner killed mid-write leaves some)."""
        return len(self._pending)

    def feed(self, chunk: bytes) -> list[list]:
        """The batches ``chunk`` completes (each a list of events, not yet checked against the
        schema); :class:`ChannelError` for bytes that are not graphview's, with those before them
        returned by no later call (the caller stops reading the channel there)."""
        pending = self._pending
        pending += chunk
        batches: list[list] = []
        start = 0
        size = HEADER.size
        try:
            while True:
                have = len(pending) - start
                if not have:
                    break
                opening = bytes(pending[start:start + min(have, 4)])
                if opening != MAGIC[:have] and opening != JSON_MAGIC[:have]:  # (at once: a short line too)
                    shown = bytes(pending[start:start + 30]).decode("utf-8", "replace").split("\n", 1)[0]
                    raise ChannelError(f"bytes that do not start as graphview's batches do: {shown!r}")
                if have < size:
                    break
                magic, length = HEADER.unpack_from(pending, start)
                if length > _CAPS[magic]:
                    raise ChannelError(f"a batch of {length:,} bytes, more than any of graphview's")
                end = start + size + length
                if len(pending) < end:
                    break
                with memoryview(pending) as view:  # (released at once: the bytearray shrinks below)
                    data = bytes(view[start + size:end])
                batches.append(decode(data) if magic == MAGIC else decode_json(data))
                self.batches += 1
                start = end
        except ChannelError as exc:
            exc.before = batches
            raise
        finally:
            if start:
                del pending[:start]
        return batches


def decode(data: bytes) -> list:
    """The events of one batch's pickle, each made a plain JSON value (see the module's docstring)."""
    try:
        batch = _PlainUnpickler(io.BytesIO(data)).load()
    except pickle.UnpicklingError as exc:
        raise ChannelError(f"not a batch of plain events ({str(exc)[:120]})") from None
    except Exception as exc:  # noqa: BLE001 - any damage the unpickler meets is the stream's
        raise ChannelError(f"not a batch of events ({type(exc).__name__})") from None
    return _events(batch, len(data))


def decode_json(data: bytes) -> list:
    """The events of one batch's JSON (see :func:`encode_batch`), checked as :func:`decode`'s are."""
    try:
        batch = json.loads(data)
    except (ValueError, RecursionError):  # (not UTF-8, not JSON, nested past the decoder)
        raise ChannelError("not a batch of events (JSON that does not parse)") from None
    return _events(batch, len(data))


def _events(batch, size: int) -> list:
    if type(batch) is not list:
        raise ChannelError(f"a batch that is a {type(batch).__name__}, not a list of events")
    budget = [size // 2 + 64]  # (see _plain)
    for index, event in enumerate(batch):
        if type(event) is not dict:
            if type(event) is not tuple and type(event) is not list:
                raise ChannelError(f"a batch holding a {type(event).__name__}, not an event")
            try:  # a compact event (a list, where JSON carried it): the dict it stands for (its values,
                # spent from the budget below, are the tuple's: a tuple shared many times makes as many)
                event = expand(event)
            except NotCompact as exc:
                raise ChannelError(f"not an event ({exc})") from None
        batch[index] = _plain(event, 0, budget)
    if budget[0] < 0:
        raise ChannelError(_SHARED)
    return batch


def _plain(value, depth: int, budget: list):
    """``value`` (a dict or a list) as JSON carries it: its tuples lists, its keys strings (as
    ``json.dumps`` writes an int, float, boolean or None key); :class:`ChannelError` for anything
    JSON cannot hold, a whole number past :data:`INT_LIMIT`, nesting past :data:`DEPTH_MAX` (a
    cycle never ends) and sharing.

    Each container spends its length and one from ``budget``, half the batch's length: graphview's
    own events spend at most a third of their bytes (a compact event, a tuple without its keys'
    names, is short for the dict it makes: 0.19 to 0.24 of all batches' bytes, 0.29 to 0.34 of
    the one that spent the most, for the MLP sample, the transformer block sample, GPT-2), one container per two bytes at the most keeps what a batch holds
    within about 32 times its length (a dict of 64 bytes from two bytes), and a batch that shares
    a list many times over (a pickle can refer back to an object: a few bytes that a walk would
    read a billion times) runs out of it."""
    budget[0] -= len(value) + 1
    if budget[0] < 0:
        raise ChannelError(_SHARED)
    if depth >= DEPTH_MAX:
        raise ChannelError(f"values nested more than {DEPTH_MAX} deep")
    if type(value) is dict:
        if not _STR.issuperset(map(type, value)):
            value = {_json_key(key): child for key, child in value.items()}
        children = value.values()
    else:
        children = value
    kinds = set(map(type, children))
    if int in kinds:
        _check_ints(children)
    if kinds <= _SCALARS:  # (most events: no loop in Python)
        return value
    if type(value) is dict:
        for key, child in value.items():
            if type(child) not in _SCALARS:
                value[key] = _plain_child(child, depth, budget)
    else:
        for index, child in enumerate(value):
            if type(child) not in _SCALARS:
                value[index] = _plain_child(child, depth, budget)
    return value


def _check_ints(values) -> None:
    for number in values:
        if type(number) is int and not -INT_LIMIT < number < INT_LIMIT:
            raise ChannelError("a whole number of more than 64 bits, which no event holds")


def _plain_child(child, depth: int, budget: list):
    kind = type(child)
    if kind is tuple:
        child = list(child)
    elif kind is not dict and kind is not list:
        raise ChannelError(f"a {kind.__name__}, which no event holds")
    return _plain(child, depth + 1, budget)


def _json_key(key) -> str:
    kind = type(key)
    if kind is str:
        return key
    if kind is int:
        _check_ints((key,))
    if kind is bool or key is None or kind is int or kind is float:
        return json.dumps(key)
    raise ChannelError(f"an object with a {kind.__name__} key, which JSON cannot hold")
