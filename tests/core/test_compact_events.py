"""Compact events: tuples the recorder makes for its most frequent kinds, each read back from the
channel as the very dict it stands for, and anything else in a tuple's place refused."""

from __future__ import annotations

import json
import pickle
import struct

import pytest

from graphview.core.channel import MAGIC, PICKLE_CAP, BatchReader, ChannelError, encode_batch
from graphview.core.compact_events import LAYOUTS, NotCompact, expand, expanding

SUMMARY = {"shape": [2, 3], "stats": {"min": -1.5, "max": 2.0, "mean": 0.1, "numel": 6, "nan": 0, "inf": 0}}

#: each compact kind as the recorder makes it, and the dict it stands for (keys in their order)
PAIRS = [
    (("node", 7, "AddmmBackward0", [[5, 0], [None, 0]], 12, None, False, 31, "layers.0"),
     {"ev": "node", "vid": 7, "name": "AddmmBackward0", "next": [[5, 0], [None, 0]], "seq": 12, "leaf": None,
      "custom": False, "line": 31, "module": "layers.0"}),
    (("node_dead", 7), {"ev": "node_dead", "vid": 7}),
    (("bw_node", 1, 7, [{"shape": [2], "values": [0.5, 1.0]}], None),
     {"ev": "bw_node", "bid": 1, "vid": 7, "grads_in": [{"shape": [2], "values": [0.5, 1.0]}]}),
    (("bw_node", 1, 7, None, [9, 0]), {"ev": "bw_node", "bid": 1, "vid": 7, "grads_in": None, "from_edge": [9, 0]}),
    (("bw_node_done", 1, 7, [None]), {"ev": "bw_node_done", "bid": 1, "vid": 7, "grads_out": [None]}),
    (("tensor", 4, 0, "h", "activation", [2, 3], "float32", "cpu", True, False, 7, None, 31, SUMMARY),
     {"ev": "tensor", "tid": 4, "version": 0, "name": "h", "kind": "activation", "shape": [2, 3], "dtype": "float32",
      "device": "cpu", "requires_grad": True, "is_leaf": False, "grad_fn": 7, "base": None, "line": 31,
      "stats": SUMMARY["stats"]}),
    (("tensor", 4, 1, None, "input", [], "int64", "cpu", False, True, None, None, None, None),
     {"ev": "tensor", "tid": 4, "version": 1, "name": None, "kind": "input", "shape": [], "dtype": "int64",
      "device": "cpu", "requires_grad": False, "is_leaf": True, "grad_fn": None, "base": None, "line": None}),
    (("tensor_dead", 4), {"ev": "tensor_dead", "tid": 4}),
    (("saved", 3, 256, "7f00", "cpu", "activation", [8, 8], "float32", None, None, None, 7),
     {"ev": "saved", "sid": 3, "bytes": 256, "storage": "7f00", "device": "cpu", "kind": "activation",
      "shape": [8, 8], "dtype": "float32", "owner": None, "attr": None, "src": 7}),
    (("saved", 3, 256, "7f00", "cpu", "param", [8, 8], "float32", None, None, 2, None),
     {"ev": "saved", "sid": 3, "bytes": 256, "storage": "7f00", "device": "cpu", "kind": "param",
      "shape": [8, 8], "dtype": "float32", "owner": None, "attr": None, "recompute": 2}),
    (("own", 3, 7, "mat1"), {"ev": "own", "sid": 3, "owner": 7, "attr": "mat1"}),
    (("release", 3), {"ev": "release", "sid": 3}),
    (("op", 5, "linear", 31, "layers.0", [[1, 0], [2, 0]], [[4, 0]], 7, "grad", False, None),
     {"ev": "op", "oid": 5, "op": "linear", "line": 31, "module": "layers.0", "inputs": [[1, 0], [2, 0]],
      "outputs": [[4, 0]], "grad_fn": 7, "mode": "grad", "inplace": False}),
    (("op", 5, "mul", None, None, [], [], None, "no_grad", True, 3),
     {"ev": "op", "oid": 5, "op": "mul", "line": None, "module": None, "inputs": [], "outputs": [], "grad_fn": None,
      "mode": "no_grad", "inplace": True, "recompute": 3}),
    (("module_enter", "layers.0", "Linear"), {"ev": "module_enter", "path": "layers.0", "type": "Linear"}),
    (("module_exit", "layers.0"), {"ev": "module_exit", "path": "layers.0"}),
    (("value", 2, 3, "optimizer", SUMMARY),
     {"ev": "value", "tid": 2, "version": 3, "reason": "optimizer", "shape": [2, 3], "stats": SUMMARY["stats"]}),
    (("accumulate", 1, 2, 9, True, False, False), {"ev": "accumulate", "bid": 1, "tid": 2, "vid": 9, "first": True}),
    (("accumulate", 1, 2, 9, False, None, SUMMARY),
     {"ev": "accumulate", "bid": 1, "tid": 2, "vid": 9, "first": False, "increment": None, "grad": SUMMARY}),
]


def test_every_compact_kind_is_read_back_as_the_dict_it_stands_for():
    assert {compact[0] for compact, _ in PAIRS} == set(LAYOUTS)
    for compact, event in PAIRS:
        made = expand(compact)
        assert made == event and list(made) == list(event)  # the keys in the schema's order too
    batches = BatchReader().feed(encode_batch([compact for compact, _ in PAIRS] + [{"ev": "stdout", "text": "x"}]))
    read = [event for batch in batches for event in batch]
    assert read == [event for _, event in PAIRS] + [{"ev": "stdout", "text": "x"}]
    assert [list(event) for event in read[:-1]] == [list(event) for _, event in PAIRS]


def test_a_compact_event_too_long_for_a_pickle_comes_back_from_json_as_its_dict():
    compact = ("module_enter", "m" * PICKLE_CAP, "Linear")
    (batch,) = BatchReader().feed(encode_batch([compact]))
    assert batch == [{"ev": "module_enter", "path": "m" * PICKLE_CAP, "type": "Linear"}]


def test_a_dict_taking_emitter_gets_each_compact_event_as_its_dict():
    got: list = []
    emit = expanding(got.append)
    for compact, _ in PAIRS:
        emit(compact)
    emit({"ev": "stdout", "text": "x"})
    assert got == [event for _, event in PAIRS] + [{"ev": "stdout", "text": "x"}]


@pytest.mark.parametrize("value, says", [
    (("nothing_known", 1), "no compact kind \\('nothing_known'\\)"),
    ((), "no compact kind"),
    ((1, 2), "no compact kind \\('1'\\)"),
    (("release",), "compact release event of 0 values, not 1"),
    (("release", 1, 2), "compact release event of 2 values, not 1"),
    (("value", 2, 3, "optimizer", [1, 2]), "last value is a list, not a dict"),
    (("own", 3, 7, {1, 2}), "set"),  # what the dict holds is checked as any event's is
])
def test_what_is_not_a_compact_event_is_refused_and_says_what(value, says):
    payload = pickle.dumps([value], 5)
    with pytest.raises(ChannelError, match=says):
        BatchReader().feed(MAGIC + struct.pack("<Q", len(payload)) + payload)
    if value and value[0] in LAYOUTS and "set" not in says:
        with pytest.raises(NotCompact):
            expand(value)


def test_a_compact_event_counts_against_the_batch_s_room_for_its_values():
    """A batch that shares one compact event's list of values many times over is refused, not walked
    (as a shared dict is: see channel._plain)."""
    shared = ["x"] * 1000
    payload = pickle.dumps([("own", 1, 2, shared)] * 1000, 5)
    with pytest.raises(ChannelError, match="shared many times"):
        BatchReader().feed(MAGIC + struct.pack("<Q", len(payload)) + payload)
    assert json.loads(json.dumps(expand(("own", 1, 2, "a")))) == {"ev": "own", "sid": 1, "owner": 2, "attr": "a"}
