"""EdgeLabels: where each edge's label goes, beside its edge and clear of the other labels and
of the nodes.

A label (``detach``, the op of an edge no gradient flows along) was drawn beside its edge's
middle, wherever that fell: two edges between the same nodes (Whisper's ``masked_fill_`` and
``__eq__`` into the decoder's labels) wrote one label over the other, and a long edge's middle
could lie on a node. Labels are few (only edges with one have them, see
:class:`~graphview.qt.canvas.edges.LabeledEdgeItem`), so they are placed together, one after the
other from the top: each takes the first of a few spots along its edge (above or below it,
right or left of it) that no label placed before it and no node covers; if none is free, the one
that covers no node and the least of those labels.

A placement is asked for whenever a labelled edge's route, visibility or scene changes, and done
once the event loop is free (many edges move in one turn) and no nodes glide (a box opened or
shut routes its edges again at every frame of the glide: each label follows its edge meanwhile,
and placing them all at every frame took 35-50 ms a frame with 240 labels); the scene settles any
waiting one before it paints a picture of itself (an export, an animation frame).
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QRectF, Qt, QTimer
from PySide6.QtGui import QPainterPath, QPainterPathStroker
from PySide6.QtWidgets import QGraphicsItem

from graphview.core.drawing.nodes import LAYER_HEIGHT
from graphview.qt.canvas.edges import LABEL_H
from graphview.qt.canvas.groups import solid

if TYPE_CHECKING:
    from graphview.qt.canvas.edges import LabeledEdgeItem

#: where along its edge a label may go, the first free one taken (0.5: the middle)
ALONG = (0.5, 0.38, 0.62, 0.26, 0.74, 0.16, 0.84)
#: a longer edge's label goes first this far along its path before its arrowhead (scene units):
#: it names the op that made the tensor the edge goes into, and at the middle of a long edge it
#: stood rows from both ends (a Llama's rotary "sin", 12 rows long, floated beside nothing)
NEAR_HEAD = (0.5 * LAYER_HEIGHT, LAYER_HEIGHT, 1.5 * LAYER_HEIGHT)
#: an edge longer than this (scene units) has its label near its head first
LONG_EDGE = 3 * LAYER_HEIGHT
#: room kept between a label and its edge, and between two labels
GAP = 6.0
#: how often a placement asked for while nodes glide looks whether they stopped (ms)
GLIDE_POLL_MS = 40


class EdgeLabels:
    """The labels of one scene's edges, placed together."""

    def __init__(self, scene) -> None:
        """``scene``: the :class:`~graphview.qt.canvas.scene.GraphScene` that holds them."""
        self.scene = scene
        self._pending = False

    def schedule(self) -> None:
        """A labelled edge moved, appeared or went: place the labels again soon."""
        if not self._pending:
            self._pending = True
            QTimer.singleShot(0, self.scene, self._settle_when_still)

    def _settle_when_still(self) -> None:
        if self.scene.boxes.gliding:
            QTimer.singleShot(GLIDE_POLL_MS, self.scene, self._settle_when_still)
            return
        self.settle()

    def settle(self) -> None:
        """Place the labels now if a placement waits (before a picture of the scene is painted)."""
        if self._pending:
            self._pending = False
            self.place()

    def place(self) -> None:
        edges = _one_label_a_route([edge for edge in self.scene.labeled_edges() if edge.isVisible()])
        edges.sort(key=_placed_first)
        solids = _SolidItems(self.scene)
        lines = _Lines(self.scene)
        placed: list[QRectF] = []
        for edge in edges:
            edge.put_label(*self._best_spot(edge, placed, solids, lines))
            placed.append(edge.label_rect.adjusted(-GAP / 2, -GAP / 2, GAP / 2, GAP / 2))

    @staticmethod
    def _best_spot(edge: "LabeledEdgeItem", placed: list[QRectF], solids: "_SolidItems",
                   lines: "_Lines") -> tuple[float, bool, bool]:
        """The first spot clear of the labels placed, of the nodes and of the lines (another edge's,
        an open box's frame); where none is, the first clear of the labels and the nodes; where
        none is, the one that covers no node and the least of those labels (the middle if every
        spot covers a node)."""
        best, least, uncrossed = (0.5, True, False), None, None
        # what lies anywhere near the label's spots, found once: each spot asks these alone
        area = edge.mapRectToScene(edge.path().boundingRect()).adjusted(
            -edge.label_width - 8, -LABEL_H - 4, edge.label_width + 8, LABEL_H + 4)
        near_solids, near_lines = solids.near(area), lines.near(area, edge)
        for along in _spots(edge.path().length()):
            point = edge.path().pointAtPercent(along)
            for below in (False, True):
                for right in (True, False):
                    rect = edge.label_rect_beside(point, right, below)
                    if solids.meet(rect, near_solids):
                        continue
                    covered = sum(_area(rect.intersected(other)) for other in placed if rect.intersects(other))
                    if not covered:
                        if not lines.cross(rect, near_lines):
                            return along, right, below
                        uncrossed = uncrossed or (along, right, below)
                    elif uncrossed is None and (least is None or covered < least):
                        best, least = (along, right, below), covered
        return uncrossed or best


class _SolidItems:
    """The solid items of a scene (see :func:`~graphview.qt.canvas.groups.solid`) as one placement
    finds them, asked whether a spot meets one."""

    def __init__(self, scene) -> None:
        self.items = [item for item in chain(scene.node_items.values(), scene.groups.values()) if solid(item)]
        self.rects = np.array([item.sceneBoundingRect().getCoords() for item in self.items]).reshape(-1, 4)

    def near(self, area: QRectF) -> list[tuple[QGraphicsItem, QRectF]]:
        """The solid items whose bounds meet ``area``, with their bounds."""
        items = self.items
        return [(items[i], _row_rect(self.rects, i)) for i in _meeting(self.rects, area)]

    @staticmethod
    def meet(rect: QRectF, near: list[tuple[QGraphicsItem, QRectF]]) -> bool:
        """Whether the shape of a solid item of ``near`` (a node's: its body, not the room kept for
        its badges) meets ``rect``, as ``scene.items(rect)`` tells it, asked of the solid items
        near alone: the scene asked every item whose bounding rect holds the spot, each long
        edge's too (a no-grad GPT-2 generating tokens: 0.4 s a placement, after every step)."""
        spot = None
        for item, bounds in near:
            if bounds.intersects(rect):
                if spot is None:
                    spot = QPainterPath()
                    spot.addRect(rect)
                if item.collidesWithPath(item.mapFromScene(spot), Qt.IntersectsItemShape):
                    return True
        return False


#: what :meth:`_Lines.near` finds besides edges (whose index it gives): an open box's frame, its name
_FRAME, _NAME = -1, -2


class _Lines:
    """The lines a label is kept off where a spot clear of them is free (a label is painted on
    the background's colour: a line under it is cut there): the edges shown, and the frames and
    names of the open module boxes."""

    def __init__(self, scene) -> None:
        # each line once: the edges of a bundle (fifty weights a later call reads) run on a few curves
        lines: dict[tuple, tuple] = {}
        for edge in scene.edge_items:
            if edge.isVisible():
                rect = edge.mapRectToScene(edge.path().boundingRect()).getCoords()
                ends = _ends(edge)
                lines.setdefault((ends, tuple(round(v) for v in rect)), (edge, ends, rect))
        self.edges = [edge for edge, _, _ in lines.values()]
        self.ends = [ends for _, ends, _ in lines.values()]
        self.rects = np.array([rect for _, _, rect in lines.values()]).reshape(-1, 4)
        self.frames = [(group.mapRectToScene(group.rect), group.mapRectToScene(group.label_rect()))
                       for group in scene.groups.values() if group.isVisible() and not group.collapsed]
        self._strokes: dict[int, QPainterPath] = {}
        self._stroker = QPainterPathStroker()

    def near(self, area: QRectF, edge: "LabeledEdgeItem") -> list[tuple[int, QRectF]]:
        """The lines whose bounds meet ``area`` near ``edge``'s label, with their bounds: the frames
        and names of open boxes, and the edges shown but ``edge`` and those running the same way
        (whose label it is too)."""
        near: list[tuple[int, QRectF]] = []
        for frame, name in self.frames:
            near += [(at, rect) for at, rect in ((_FRAME, frame), (_NAME, name)) if rect.intersects(area)]
        ends = _ends(edge)
        for i in _meeting(self.rects, area):
            if self.edges[i] is not edge and self.ends[i] != ends:
                near.append((int(i), _row_rect(self.rects, i)))
        return near

    def cross(self, rect: QRectF, near: list[tuple[int, QRectF]]) -> bool:
        """Whether a line of ``near`` crosses ``rect``: an open box's frame (its inside is clear)
        or name, or an edge."""
        for i, bounds in near:
            if not bounds.intersects(rect) or i == _FRAME and bounds.contains(rect):
                continue
            if i < 0:
                return True
            stroke = self._strokes.get(i)
            if stroke is None:  # the line as drawn (an item's shape holds the area its curve bounds too)
                other = self.edges[i]
                self._stroker.setWidth(other.pen().widthF())
                stroke = self._strokes[i] = other.mapToScene(self._stroker.createStroke(other.path()))
            if stroke.intersects(rect):
                return True
        return False


def _meeting(rects: np.ndarray, area: QRectF) -> np.ndarray:
    """The indices of the rects (rows of left, top, right, bottom) that meet ``area``."""
    left, top, right, bottom = area.getCoords()
    return np.flatnonzero((rects[:, 0] <= right) & (rects[:, 2] >= left) & (rects[:, 1] <= bottom)
                          & (rects[:, 3] >= top))


def _row_rect(rects: np.ndarray, i) -> QRectF:
    """Row ``i`` of ``rects`` (left, top, right, bottom) as a QRectF."""
    left, top, right, bottom = rects[i]
    return QRectF(left, top, right - left, bottom - top)


def _ends(edge) -> tuple[int, int, int, int]:
    """Where an edge's route starts and ends, to the unit."""
    path = edge.path()
    start, end = path.elementAt(0), path.currentPosition()
    return round(start.x), round(start.y), round(end.x()), round(end.y())


#: the ops a label of edges that run one way names, at most
NAMED_OPS = 3


def _one_label_a_route(edges: list["LabeledEdgeItem"]) -> list["LabeledEdgeItem"]:
    """The edges whose labels are placed: of those that run one way to or from a shut box (the
    weights of a model's first call, read by each later call, both boxes shut: fifty edges on one
    curve), the first, saying their ops, each once, and how many they are (``layer_norm, addmm
    ×50``; each op's name as its own label says it, cut: at most some 160 characters in all); the
    others say nothing. Every other edge says its own label."""
    routes: dict[tuple, list] = {}
    kept = []
    for edge in edges:
        if not edge.rerouted:
            if edge.relabelled:  # (one that said what a bundle of edges did: its own again)
                edge.show_label(edge.own_label)
            kept.append(edge)
            continue
        path = edge.path()
        start, end = path.pointAtPercent(0.0), path.pointAtPercent(1.0)
        routes.setdefault((round(start.x()), round(start.y()), round(end.x()), round(end.y())), []).append(edge)
    for same in routes.values():
        if len(same) == 1:
            text = same[0].own_label
        else:
            ops = list(dict.fromkeys(edge.own_label for edge in same if edge.own_label))
            text = ", ".join(ops[:NAMED_OPS]) + (", …" if len(ops) > NAMED_OPS else "") + f" ×{len(same)}"
        same[0].show_label(text)
        for edge in same[1:]:
            edge.show_label("")
        kept.append(same[0])
    return kept


def _spots(length: float) -> tuple[float, ...]:
    """Where along an edge of ``length`` its label may go, in the order tried: :data:`ALONG`; on an
    edge longer than :data:`LONG_EDGE`, first :data:`NEAR_HEAD` before its arrowhead."""
    if length <= LONG_EDGE:
        return ALONG
    return tuple(1 - back / length for back in NEAR_HEAD) + ALONG


def _area(rect: QRectF) -> float:
    return rect.width() * rect.height()


def _placed_first(edge: "LabeledEdgeItem") -> tuple[bool, float, float]:
    """The order labels are placed in: those of edges between nodes a row apart from the top, then
    the others from the top. Such an edge has a few spots, beside the gap between its two nodes;
    a longer edge passes many. Placed from the top alone, a long edge's label could take the gap
    first (a GPT-2 generating under no_grad: "embedding, layer_norm, addmm ×52", the weights the
    first call's box hands each later call, in the gap between the generated ids and the next
    call's box) and the short edge's own ("view") was written over it."""
    path = edge.path()
    middle = path.pointAtPercent(0.5)
    return path.length() > LAYER_HEIGHT, middle.y(), middle.x()
