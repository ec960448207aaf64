"""The runner's event channel: batches read back whole, in any pieces, and nothing but plain
events accepted from it (the script runs in the process that writes it)."""

from __future__ import annotations

import json
import os
import pickle
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphview.core.channel import (DEPTH_MAX, HEADER, JSON_CAP, JSON_MAGIC, MAGIC, PICKLE_CAP, BatchEncoder,
                                   BatchReader, ChannelError, encode_batch)

EVENTS = [
    {"ev": "node", "vid": 3, "name": "MulBackward0", "next": [[None, 0], [2, 0]]},
    {"ev": "tensor", "tid": 1, "name": "poids_é", "shape": [2, 3], "stats": {"min": -1.5e-45, "max": 3.4e38,
                                                                          "mean": 0.1, "nan": 0, "hist": [1, 2]}},
    {"ev": "stdout", "text": 'a "quoted"\nline \x00 and \ud800 as written'},
    {"ev": "accumulate", "first": True, "grad": None, "big": 2 ** 63, "neg": -0.0, "odd": float("nan")},
]


def _frame(payload: bytes) -> bytes:
    return MAGIC + struct.pack("<Q", len(payload)) + payload


def test_batches_come_back_as_they_went_in_any_pieces():
    data = encode_batch(EVENTS[:2]) + encode_batch(EVENTS[2:]) + encode_batch([])
    whole = BatchReader().feed(data)
    assert json.dumps(whole) == json.dumps([EVENTS[:2], EVENTS[2:], []])
    reader = BatchReader()
    by_byte = [batch for i in range(len(data)) for batch in reader.feed(data[i:i + 1])]
    assert json.dumps(by_byte) == json.dumps(whole) and reader.waiting == 0 and reader.batches == 3


def test_one_encoder_for_many_batches_writes_each_as_a_fresh_pickle_would():
    """The pipe's encoder keeps its pickler from one batch to the next: each batch is still the
    pickle of its own events (no reference to an earlier batch's objects), after a batch that had
    to go through JSON, a long one split in several, or one long event as JSON, too."""

    class Text(str):  # (torch's version string: not plain, goes through JSON)
        pass

    encoder = BatchEncoder()
    shared = {"min": 1.0, "max": 2.0}
    batches = [EVENTS[:2], [{"ev": "v", "version": Text("2.13.0")}], [{"ev": "a", "s": shared}, {"ev": "b", "s": shared}],
               [{"ev": "stdout", "text": "x" * 1000 + str(i)} for i in range(3000)], EVENTS[2:],
               [{"ev": "module_enter", "path": "m" * (3 << 20)}], [], EVENTS[:1], EVENTS[:1]]
    for events in batches:
        data = encoder.encode(events)
        if len(data) < PICKLE_CAP and data.startswith(MAGIC):  # one batch: a pickle of its events alone
            plain = json.loads(json.dumps(events, default=str)) if events and events[0]["ev"] == "v" else events
            assert data[:HEADER.size] == HEADER.pack(MAGIC, len(data) - HEADER.size)
            assert json.dumps(pickle.loads(data[HEADER.size:])) == json.dumps(plain)  # (NaN: as text)
    read = [e for data in map(encoder.encode, batches) for batch in BatchReader().feed(data) for e in batch]
    assert json.dumps(read) == json.dumps([e for events in batches for e in events], default=str)  # (NaN: as text)


def test_the_encoder_keeps_nothing_of_a_batch_it_encoded():
    """The pipe's encoder lives as long as the run: a long string of the script's in one batch is
    not held by its pickler's memo or buffer until the next batch."""
    import sys

    encoder, text = BatchEncoder(), "x" * (1 << 19)
    before = sys.getrefcount(text)
    events = [{"ev": "stdout", "text": text}]
    assert encoder.encode(events).startswith(MAGIC)  # (pickled: through the pickler and its memo)
    del events
    assert sys.getrefcount(text) == before


def test_a_batch_cut_off_waits_and_is_not_taken_for_damage():
    data = encode_batch(EVENTS)
    reader = BatchReader()
    assert reader.feed(data[:-5]) == [] and reader.waiting == len(data) - 5
    assert len(reader.feed(data[-5:])[0]) == len(EVENTS)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 64) + 1, 2 ** 64 - 1) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=40)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=6), max_size=6))
def test_any_plain_events_pass_as_json_would_carry_them(events):
    (batch,) = BatchReader().feed(encode_batch(events))
    assert batch == json.loads(json.dumps(events))


class _Version(str):
    """A subclass of str, as torch's version string is."""


def test_what_json_would_change_comes_out_as_json_makes_it():
    from collections import OrderedDict

    events = [{"ev": "run_start", "torch": _Version("2.13.0"), "ids": (1, (2, 3)), "by_vid": {1: "a", None: 2.5},
               "odd": object(), "ordered": OrderedDict(a=1), "flag": {True: False, 1.5: None}}]
    (batch,) = BatchReader().feed(encode_batch(events))
    assert batch == json.loads(json.dumps(events, default=str))
    assert type(batch[0]["torch"]) is str and batch[0]["ids"] == [1, [2, 3]] and batch[0]["by_vid"] == {"1": "a", "null": 2.5}


class _Calls:
    """Pickles as a call of ``os.system`` (what a hostile batch would ask the reader to run)."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


NOT_PLAIN = {
    "a list, not in a list": ({"ev": "x"}, "not a list of events"),
    "no event": ([[1]], "not an event"),
    "a set": ([{"ev": "x", "v": {1, 2}}], "set"),
    "bytes": ([{"ev": "x", "v": b"\x00"}], "bytes"),
    "a complex number": ([{"ev": "x", "v": 1j}], "names builtins.complex"),
    "a key JSON cannot hold": ([{"ev": "x", (1, 2): 2}], "tuple key"),
    "a class": ([{"ev": "x", "v": ValueError}], "names builtins.ValueError"),
    "a function": ([{"ev": "x", "v": os.system}], "names posix.system"),
}


@pytest.mark.parametrize("value, says", NOT_PLAIN.values(), ids=NOT_PLAIN.keys())
def test_what_is_not_a_plain_event_is_refused_and_says_what(value, says):
    with pytest.raises(ChannelError, match=says):
        BatchReader().feed(encode_batch([EVENTS[0]]) + _frame(pickle.dumps(value, 5)))


def test_a_batch_that_asks_for_a_call_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    with pytest.raises(ChannelError, match="names posix.system") as caught:
        BatchReader().feed(encode_batch(EVENTS[:1]) + _frame(pickle.dumps([_Calls(f"touch {marker}")], 5)))
    assert not marker.exists()
    assert json.dumps(caught.value.before) == json.dumps([EVENTS[:1]])  # what came before it, whole


def test_a_cycle_and_deep_nesting_are_refused():
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(ChannelError, match=f"nested more than {DEPTH_MAX} deep"):
        BatchReader().feed(_frame(pickle.dumps([{"ev": "x", "v": cycle}], 5)))
    deep: list = []
    for _ in range(DEPTH_MAX + 1):
        deep = [deep]
    with pytest.raises(ChannelError, match="nested"):
        BatchReader().feed(_frame(pickle.dumps([{"ev": "x", "v": deep}], 5)))


def test_a_list_shared_a_billion_ways_is_refused_at_once():
    shared: list = [1, 2]
    for _ in range(30):  # 2**30 paths to the innermost list, in a few hundred bytes
        shared = [shared, shared]
    data = _frame(pickle.dumps([{"ev": "x", "v": shared}], 5))
    assert len(data) < 1000
    with pytest.raises(ChannelError, match="shared many times"):  # (within its budget: not walked 2**30 times)
        BatchReader().feed(data)


def test_foreign_bytes_are_refused_at_their_first_byte():
    for text in (b"\n", b"hello from the script\n", b'{"ev": "tensor"}\n', b"G\n"):
        with pytest.raises(ChannelError, match="do not start as graphview's batches do"):
            BatchReader().feed(encode_batch(EVENTS) + text)
    assert BatchReader().feed(MAGIC[:3]) == []  # (the start of a batch: waits for the rest)


def test_damaged_pickles_and_oversized_lengths_are_refused():
    good = pickle.dumps(EVENTS, 5)
    for damaged in (good[:-1], good[:10] + b"\xff" * 10 + good[20:], b"", b"\x80\x05garbage"):
        with pytest.raises(ChannelError):
            BatchReader().feed(_frame(damaged))
    for magic, cap in ((MAGIC, PICKLE_CAP), (JSON_MAGIC, JSON_CAP)):
        with pytest.raises(ChannelError, match="more than any of graphview's"):
            BatchReader().feed(magic + struct.pack("<Q", cap + 1))
    with pytest.raises(ChannelError, match="JSON that does not parse"):
        BatchReader().feed(JSON_MAGIC + struct.pack("<Q", 5) + b"[{]}\n")


def test_a_long_batch_goes_as_several_and_a_long_event_as_json():
    events = [{"ev": "stdout", "text": "x" * 1000 + str(i)} for i in range(3000)]  # ~3 MB as one pickle
    data = encode_batch(events)
    reader = BatchReader()
    batches = reader.feed(data)
    assert len(batches) > 2 and [e for batch in batches for e in batch] == events
    assert all(len(b) < len(events) for b in batches)
    long_one = [{"ev": "module_enter", "path": "m" * (3 << 20), "t": ("a", 1)}]
    data = encode_batch(long_one)
    assert data.startswith(JSON_MAGIC)
    assert BatchReader().feed(data) == [json.loads(json.dumps(long_one))]


@pytest.mark.parametrize("where", ["a value", "a key", "a list"])
def test_a_whole_number_past_64_bits_is_refused(where):
    big = 10 ** 5000  # (its text: more digits than Python turns into text by default)
    event = {"a value": {"ev": "x", "v": big}, "a key": {"ev": "x", big: 1}, "a list": {"ev": "x", "v": [1, -big]}}[where]
    with pytest.raises(ChannelError, match="more than 64 bits"):
        BatchReader().feed(_frame(pickle.dumps([event], 5)))
    assert BatchReader().feed(encode_batch([{"ev": "x", "v": 2 ** 64 - 1, "w": [-(2 ** 64) + 1]}]))


def test_many_containers_from_few_bytes_are_refused():
    # one empty dict a byte of pickle: as plain as JSON, but 64 bytes of memory from each one
    with pytest.raises(ChannelError, match="shared many times"):
        BatchReader().feed(_frame(pickle.dumps([{"ev": "stdout", "text": "", "x": [{} for _ in range(100_000)]}], 5)))


def test_a_piece_the_pickler_hands_over_is_not_changed_after():
    """The encoder keeps the pickler's pieces as they came (no copy into a buffer): a long
    bytearray's own memory would be one, and changed before it is written: it is copied."""
    from graphview.core.channel import BatchEncoder

    payload = bytearray(b"a" * (1 << 17))
    events = [{"ev": "x", "b": payload}]
    before = BatchEncoder().encode(events)
    parts = BatchEncoder().encode_parts(events)
    payload[:4] = b"bbbb"
    assert b"".join(parts) == before
