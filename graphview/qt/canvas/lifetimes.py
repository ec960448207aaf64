"""Lifetimes: when each placed node of a run is born and destroyed, and where it is drawn.

Kept as arrays, so which nodes are shown at a cursor (and the extent they take on the canvas) is
one comparison for all of them, not a call per node: a big run's open and every long jump of its
cursor look at every node. The arrays grow with the scene: a node's birth and place never change
once it is placed, and its death, once known, neither; so when the run grew only the new nodes,
and those whose death was not known yet, are looked at again (a trace being read grows the run
hundreds of times): most die with an autograd node, whose death is one lookup.
"""

from __future__ import annotations

from itertools import chain
from operator import attrgetter

import numpy as np

from graphview.core.drawing import LAYER_HEIGHT, SLOT_WIDTH

_NEVER = np.iinfo(np.int64).max
#: the arrays of a node's numbers, each with room to grow (doubled when full: a trace read in
#: hundreds of slices appends to them hundreds of times, and copying 180k nodes' numbers at each
#: append held the event loop ~10 ms a slice)
_COLUMNS = ("born", "dead", "slots", "layers", "vids")
#: the kinds of drawn node that are an autograd node themselves (they die with it)
_OP_KINDS = frozenset({"op", "accumulate"})
_BORN, _SLOT, _LAYER = attrgetter("born"), attrgetter("slot"), attrgetter("layer")


def _column(name: str, doc: str) -> property:
    """A column of :class:`Lifetimes`: the filled part of its array with room."""
    return property(lambda self: self._room[name][:len(self.ids)], doc=doc)


class Lifetimes:
    """Births, deaths and drawing places of the placed nodes of one scene's drawing."""

    def __init__(self, scene) -> None:
        self.scene = scene
        self.ids: list[str] = []
        self._room = {name: np.zeros(1024, dtype=np.int64) for name in _COLUMNS}
        self._index_of: dict[str, int] = {}  # node id -> its row: see _index (the first rows' ids)
        self._pending = np.zeros(0, dtype=np.int64)  # nodes that die with an autograd node not dead yet
        self._events = -1  # the run's length when the deaths were last looked at

    # the columns, one number per placed node, as long as ``ids`` (views of the arrays with room)
    born = _column("born", "The event each node is born at.")
    dead = _column("dead", "The event each node dies at (the largest int64: not known to die).")
    slots = _column("slots", "Each node's column in the drawing.")
    layers = _column("layers", "Each node's row in the drawing.")
    vids = _column("vids", "The autograd node each dies with (-1: none).")

    def grow(self) -> None:
        """Take in the nodes placed, and the deaths learnt, since the last call."""
        self._arrays()

    def _arrays(self) -> None:
        scene = self.scene
        placed, events = len(scene._placed), len(scene.run.events)
        if placed == len(self.ids) and events == self._events:
            return
        if events != self._events:
            self._learn_deaths()
            self._events = events
        if placed != len(self.ids):
            self._take_new()

    def _learn_deaths(self) -> None:
        """Deaths not known before may be known now."""
        drawing = self.scene.drawing
        nodes, dead_index = drawing.nodes, drawing.dead_index
        op_nodes = drawing.run.op_nodes
        unknown = self._pending
        if len(unknown):
            ops = [op_nodes.get(v) for v in self.vids[unknown].tolist()]
            self.dead[unknown] = [op.dead if op is not None and op.dead is not None else _NEVER for op in ops]
            self._pending = unknown[self.dead[unknown] == _NEVER]
        if not (drawing.derived or drawing.inputs):
            return
        index_of, dead = self._index(), self.dead
        # no-grad tensors made from others go with what they feed; inputs once torch freed them
        for node_id in chain(drawing.derived, drawing.inputs):
            i = index_of.get(node_id)
            if i is not None and dead[i] == _NEVER:
                death = dead_index(nodes[node_id])
                if death is not None:
                    dead[i] = death

    def _take_new(self) -> None:
        """The nodes placed since the last call: their births, places, deaths so far."""
        scene = self.scene
        drawing = scene.drawing
        nodes, dead_index = drawing.nodes, drawing.dead_index
        op_nodes, tensor_nodes = drawing.run.op_nodes, drawing.run.tensor_nodes
        first = len(self.ids)
        new_ids = scene._placed[first:]
        count = len(new_ids)
        end = first + count
        if end > len(self._room["born"]):
            size = max(end, 2 * len(self._room["born"]))
            for name, column in self._room.items():
                grown = np.empty(size, dtype=np.int64)
                grown[:first] = column[:first]
                self._room[name] = grown
        # each new node's born, dead, slot, layer and vid, a list a column (as many arrays made from
        # lists of numbers: a fifth of the time of one array made from rows); the numbers a node
        # holds are read in C, its death and the autograd node it dies with in one pass
        drawn = list(map(nodes.__getitem__, new_ids))
        deads, vids = [], []
        for node in drawn:
            if node.kind in _OP_KINDS:  # (dead_index inline for the common kinds)
                vid = node.ref
            else:
                tnode = tensor_nodes.get(node.id)
                vid = tnode.grad_fn if tnode is not None else None
                if vid is None:  # a tensor without grad_fn: a leaf, an input
                    dead = dead_index(node)
                    deads.append(_NEVER if dead is None else dead)
                    vids.append(-1)
                    continue
            op = op_nodes.get(vid)
            deads.append(_NEVER if op is None or op.dead is None else op.dead)
            vids.append(vid)
        columns = (list(map(_BORN, drawn)), deads, list(map(_SLOT, drawn)), list(map(_LAYER, drawn)), vids)
        self.ids.extend(new_ids)
        if count:
            for name, column in zip(_COLUMNS, columns):
                self._room[name][first:end] = column
        fresh = np.nonzero((self.dead[first:] == _NEVER) & (self.vids[first:] >= 0))[0] + first
        self._pending = np.concatenate([self._pending, fresh])

    def rows_of(self, node_ids) -> np.ndarray:
        """The rows of those of ``node_ids`` taken in so far."""
        self._arrays()
        index_of = self._index()
        rows = [index_of.get(node_id) for node_id in node_ids]
        return np.array([row for row in rows if row is not None], dtype=np.int64)

    def _index(self) -> dict[str, int]:
        """Node id -> its row, for every node taken in: made when first asked for, and brought up to
        date at each later ask (a big trace's open never asks: 10^5 entries it does not need)."""
        ids, first = self.ids, len(self._index_of)  # (ids are unique: one entry each)
        if first < len(ids):
            self._index_of.update(zip(ids[first:], range(first, len(ids))))
        return self._index_of

    def cells(self, side: float) -> dict[tuple[int, int], list[str]]:
        """Every node's id by the cell of side ``side`` (scene units) its drawing place falls in,
        in the order the nodes were taken in (as GraphScene indexes them one by one)."""
        self._arrays()
        if not self.ids:
            return {}
        gx = np.floor_divide(self.slots * float(SLOT_WIDTH), side).astype(np.int64)
        gy = np.floor_divide(self.layers * float(LAYER_HEIGHT), side).astype(np.int64)
        key = (gx - gx.min()) * (int(gy.max() - gy.min()) + 1) + (gy - gy.min())
        order = np.argsort(key, kind="stable")
        ends = (np.flatnonzero(np.diff(key[order])) + 1).tolist()  # where each cell's ids end, but the last
        starts = [0, *ends]
        ordered = list(map(self.ids.__getitem__, order.tolist()))  # (cut by slicing: np.split made an array a cell)
        ends.append(len(ordered))
        firsts = order[starts]
        return {(x, y): ordered[start:end]
                for x, y, start, end in zip(gx[firsts].tolist(), gy[firsts].tolist(), starts, ends)}

    def newest_at(self, index: int) -> str | None:
        """The id of the node shown at ``index`` that was born last (None: none is shown)."""
        chosen = self._chosen(index)
        if not len(chosen):
            return None
        return self.ids[int(chosen[np.argmax(self.born[chosen])])]

    def shown_extent(self, rows: np.ndarray, index: int) -> tuple[int, tuple[float, float, float, float] | None]:
        """Of the nodes at ``rows``: how many are shown at ``index``, and the left, top, right,
        bottom of their drawing places (a box around tens of thousands of nodes is measured in one
        pass over the arrays, not a call per node)."""
        self._arrays()
        chosen = rows[(self.born[rows] <= index) & (self.dead[rows] > index)]
        if not len(chosen):
            return 0, None
        slots, layers = self.slots[chosen], self.layers[chosen]
        return len(chosen), (float(slots.min()) * SLOT_WIDTH, float(layers.min()) * LAYER_HEIGHT,
                             float(slots.max()) * SLOT_WIDTH, float(layers.max()) * LAYER_HEIGHT)

    def _chosen(self, index: int) -> np.ndarray:
        self._arrays()
        return np.nonzero((self.born <= index) & (self.dead > index))[0]

    def shown_at(self, index: int) -> set[str]:
        """Ids of the placed nodes shown at ``index`` (born, not yet destroyed)."""
        chosen = self._chosen(index)
        ids = self.ids
        return {ids[i] for i in chosen.tolist()}

    def extent_at(self, index: int) -> tuple[float, float, float, float] | None:
        """Left, top, right, bottom of the drawing places of the nodes shown at ``index`` (None: none)."""
        chosen = self._chosen(index)
        if not len(chosen):
            return None
        slots, layers = self.slots[chosen], self.layers[chosen]
        return (float(slots.min()) * SLOT_WIDTH, float(layers.min()) * LAYER_HEIGHT,
                float(slots.max()) * SLOT_WIDTH, float(layers.max()) * LAYER_HEIGHT)
