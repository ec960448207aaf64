"""The runner's event channel: events in batches, each a pickle of a list of plain events.

The runner hands its events to the process that started it (the window, or the command line) as
they come, in batches: what one torch call made, written when control goes back to the script
(see ``EventPipe`` in graphview/capture/runner.py). A batch on the pipe is a :data:`HEADER`
(:data:`MAGIC` and the pickle's length) followed by ``pickle.dumps(events)``. Pickling a list of
dicts is one C call that writes floats as their 8 bytes: about 0.5 us an event, where merging
events into a trace's records and encoding them as JSON cost the recording script about 4 us
(the floats' shortest decimal forms most of it). The trace's records (graphview/core/records.py)
are made by whoever writes a trace, from the events it reads here.

Whatever comes out of the pipe is treated as hostile (the script runs in the process that writes
it): :class:`BatchReader` unpickles with no class or function the stream may name (a batch that
names one is refused before anything of it is built), and accepts only what JSON carries: dicts,
lists, strings, numbers, booleans and None (a tuple becomes a list and a number's key its text,
as JSON makes them), nested at most :data:`DEPTH_MAX` deep (a cycle never ends), with no more
containers than the batch's bytes could hold without sharing (a small batch that shares one list
a billion ways is refused, not walked). Each event is then checked against the schema by the
reader's caller, as a trace file's lines are.
"""

from __future__ import annotations

import io
import json
import pickle
import struct

#: the first bytes of every batch: graphview's channel, format 1
MAGIC = b"GVB1"
#: MAGIC and the length of the pickle that follows (8 bytes, little-endian)
HEADER = struct.Struct("<4sQ")
#: a batch longer than this is not graphview's (the runner writes a batch this long event by event)
BATCH_CAP = 256 << 20
#: plain events nest a few levels deep (a summary inside a list of gradients); deeper is not an event
DEPTH_MAX = 32

_PROTOCOL = 5
_SCALARS = frozenset({str, int, float, bool, type(None)})
_STR = frozenset({str})
_SHARED = "more values than its bytes hold: one list or object shared many times"


def encode_batch(events: list) -> bytes:
    """``events`` framed for the channel: :data:`HEADER`, then their pickle. A batch holding
    anything but dicts, lists, tuples, strings, numbers, booleans and None (torch's version
    string, a subclass of str) is first made what JSON makes of it (its text, for an object JSON
    does not know), as a trace would hold it."""
    buffer = io.BytesIO()
    try:
        _PlainPickler(buffer, _PROTOCOL).dump(events)
        data = buffer.getvalue()
    except _NotPlain:
        data = pickle.dumps(json.loads(json.dumps(events, separators=(",", ":"), default=str)), _PROTOCOL)
    return HEADER.pack(MAGIC, len(data)) + data


class _NotPlain(Exception):
    pass


class _PlainPickler(pickle.Pickler):
    """Pickles exact dicts, lists, tuples, strings, numbers, booleans and None as pickle does
    (in C, never asking :meth:`reducer_override`); anything else raises :class:`_NotPlain`."""

    def reducer_override(self, obj):
        raise _NotPlain


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
                if pending[start:start + min(have, 4)] != MAGIC[:have]:  # (at once: a short line too)
                    shown = bytes(pending[start:start + 30]).decode("utf-8", "replace").split("\n", 1)[0]
                    raise ChannelError(f"bytes that do not start as graphview's batches do: {shown!r}")
                if have < size:
                    break
                length = HEADER.unpack_from(pending, start)[1]
                if length > BATCH_CAP:
                    raise ChannelError(f"a batch of {length:,} bytes, more than any of graphview's")
                end = start + size + length
                if len(pending) < end:
                    break
                with memoryview(pending) as view:  # (released at once: the bytearray shrinks below)
                    data = bytes(view[start + size:end])
                batches.append(decode(data))
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
    if type(batch) is not list:
        raise ChannelError(f"a batch that is a {type(batch).__name__}, not a list of events")
    budget = [2 * len(data) + 64]  # (see _plain)
    for index, event in enumerate(batch):
        if type(event) is not dict:
            raise ChannelError(f"a batch holding a {type(event).__name__}, not an event")
        batch[index] = _plain(event, 0, budget)
    if budget[0] < 0:
        raise ChannelError(_SHARED)
    return batch


def _plain(value, depth: int, budget: list):
    """``value`` (a dict or a list) as JSON carries it: its tuples lists, its keys strings (as
    ``json.dumps`` writes an int, float, boolean or None key); :class:`ChannelError` for anything
    JSON cannot hold, nesting past :data:`DEPTH_MAX` (a cycle never ends) and sharing.

    Each container spends its length and one from ``budget``: a batch whose containers are all
    its own (each one element takes a byte or more of the pickle) spends at most its length; one
    that shares a list many times over (a pickle can refer back to an object: a few bytes that a
    walk would read a billion times) runs out of it at twice its length."""
    budget[0] -= len(value) + 1
    if budget[0] < 0:
        raise ChannelError(_SHARED)
    if depth >= DEPTH_MAX:
        raise ChannelError(f"values nested more than {DEPTH_MAX} deep")
    if type(value) is dict:
        if not _STR.issuperset(map(type, value)):
            value = {_json_key(key): child for key, child in value.items()}
        if _SCALARS.issuperset(map(type, value.values())):  # (most events: one C call, no loop)
            return value
        for key, child in value.items():
            kind = type(child)
            if kind is list and _SCALARS.issuperset(map(type, child)):  # (a shape: no call)
                budget[0] -= len(child) + 1
            elif kind not in _SCALARS:
                value[key] = _plain_child(child, depth, budget)
    elif not _SCALARS.issuperset(map(type, value)):
        for index, child in enumerate(value):
            if type(child) not in _SCALARS:
                value[index] = _plain_child(child, depth, budget)
    return value


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
    if kind is bool or key is None or kind is int or kind is float:
        return json.dumps(key)
    raise ChannelError(f"an object with a {kind.__name__} key, which JSON cannot hold")
