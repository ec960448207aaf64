"""Lifetimes: when each placed node of a run is born and destroyed, and where it is drawn.

Kept as arrays, so which nodes are shown at a cursor (and the extent they take on the canvas) is
one comparison for all of them, not a call per node: a big run's open and every long jump of its
cursor look at every node. The arrays grow with the scene: a node's birth and place never change
once it is placed, and its death, once known, neither; so when the run grew only the new nodes,
and those whose death was not known yet, are looked at again (a trace being read grows the run
hundreds of times).
"""

from __future__ import annotations

import numpy as np

from graphview.core.drawing import LAYER_HEIGHT, SLOT_WIDTH

_NEVER = np.iinfo(np.int64).max


class Lifetimes:
    """Births, deaths and drawing places of the placed nodes of one scene's drawing."""

    def __init__(self, scene) -> None:
        self.scene = scene
        self.ids: list[str] = []
        self.born = np.zeros(0, dtype=np.int64)
        self.dead = np.zeros(0, dtype=np.int64)
        self.slots = np.zeros(0, dtype=np.int64)
        self.layers = np.zeros(0, dtype=np.int64)
        self._events = -1  # the run's length when the deaths were last looked at

    def _arrays(self) -> None:
        scene = self.scene
        placed, events = len(scene._placed), len(scene.run.events)
        if placed == len(self.ids) and events == self._events:
            return
        drawing = scene.drawing
        nodes, dead_index = drawing.nodes, drawing.dead_index
        if events != self._events:  # deaths not known before may be known now
            unknown = np.nonzero(self.dead == _NEVER)[0]
            if len(unknown):
                ids = self.ids
                found = [dead_index(nodes[ids[i]]) for i in unknown.tolist()]
                self.dead[unknown] = [d if d is not None else _NEVER for d in found]
            self._events = events
        if placed != len(self.ids):
            new = [nodes[n] for n in scene._placed[len(self.ids):]]
            count = len(new)
            self.ids.extend(scene._placed[len(self.ids):])
            deaths = (d if d is not None else _NEVER for d in map(dead_index, new))
            self.born = np.concatenate([self.born, np.fromiter((n.born for n in new), np.int64, count)])
            self.dead = np.concatenate([self.dead, np.fromiter(deaths, np.int64, count)])
            self.slots = np.concatenate([self.slots, np.fromiter((n.slot for n in new), np.int64, count)])
            self.layers = np.concatenate([self.layers, np.fromiter((n.layer for n in new), np.int64, count)])

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
