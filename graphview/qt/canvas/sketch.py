"""SketchItem: the nodes and edges of a big drawing that have no item, drawn in bulk.

A virtual scene (see :mod:`graphview.qt.canvas.scene`) makes items only near the view. Whatever
else is shown at the cursor, this one item paints: each node as a box in its kind's colours (a tensor's pill too) (grey
when freed, lit when running), each edge as a straight line, all of one colour in one call, and no
text (a zoomed-out view could not read it; the items that take over near the view have it). It
draws only what lies in the part of the scene being painted, found through the scene's index of
places, so a zoomed-out pan costs what is on screen, not what the graph holds.
"""

from __future__ import annotations

from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QPen
from PySide6.QtWidgets import QGraphicsItem

from graphview.qt.canvas.style import NODE_H, NODE_W, colors

#: how far an edge may reach out of the painted area and still be drawn (scene units)
EDGE_REACH = 600.0
#: below this size of a node on the screen (pixels wide), each cell of the scene's index of places
#: that holds a shown node is drawn as one box instead of its nodes (the overview of a big graph)
CELLS_BELOW_PX = 2.0


class SketchItem(QGraphicsItem):
    """Paints, without text, the shown nodes and edges of a virtual scene that have no item."""

    def __init__(self, scene) -> None:
        super().__init__()
        self._scene = scene
        self._bounds = QRectF()
        self._states: dict[str, str] = {}  # node id -> its state at the cursor, found when first painted
        self._cursor = -2
        self.setZValue(-20)
        self.setAcceptedMouseButtons(Qt.NoButton)
        self.setFlag(QGraphicsItem.ItemUsesExtendedStyleOption, True)  # paint() learns what is exposed
        scene.addItem(self)

    def changed(self) -> None:
        """The drawing grew or its layout changed: the area to paint may be larger."""
        bounds = self._scene.sceneRect() if self._scene.drawing is not None else QRectF()
        if bounds != self._bounds:
            self.prepareGeometryChange()
            self._bounds = QRectF(bounds)
        self._states.clear()
        self.update()

    def boundingRect(self) -> QRectF:
        return self._bounds

    def _state(self, node) -> str:
        state = self._states.get(node.id)
        if state is None:
            scene = self._scene
            if node.kind in ("op", "accumulate"):
                state = scene.drawing.op_state(node.ref, scene.cursor)
            else:
                state = scene.drawing.tensor_state(node, scene.cursor)
            self._states[node.id] = state
        return state

    def paint(self, painter, option, widget=None) -> None:
        scene = self._scene
        if not scene.virtual or scene.drawing is None:
            return
        if scene.cursor != self._cursor:
            self._states.clear()
            self._cursor = scene.cursor
        exposed = option.exposedRect if option.exposedRect.isValid() else self._bounds
        if painter.hasClipping():  # scene.render (the overview, exports) exposes the whole item: its clip says what is drawn
            clip = painter.clipBoundingRect()
            if clip.isValid():
                exposed = exposed.intersected(clip)
        area = exposed.adjusted(-NODE_W, -NODE_H, NODE_W, NODE_H)
        reach = area.adjusted(-EDGE_REACH, -EDGE_REACH, EDGE_REACH, EDGE_REACH)
        region = scene.region
        if region is not None and region.contains(reach):
            return  # every shown node there, and every edge it could draw there, has an item
        if option.levelOfDetailFromTransform(painter.worldTransform()) * NODE_W < CELLS_BELOW_PX:
            self._paint_cells(painter, area)
            return
        shown, hidden = scene.at_cursor.visible, scene.boxes._hidden_by
        places: dict[str, tuple[float, float]] = {}
        for node_id in scene.ids_in(reach):
            if node_id in shown and node_id not in hidden:
                where = scene.place_of(node_id)
                if where is not None:
                    places[node_id] = where
        self._draw_lines(painter, self._edge_lines(places, area))
        self._draw_boxes(painter, self._node_boxes(places, area))

    def _node_boxes(self, places: dict[str, tuple[float, float]], area: QRectF) -> dict[tuple[str, str], list[QRectF]]:
        """The boxes of the nodes placed in ``area`` that have no item shown, by kind and state."""
        nodes, items = self._scene.drawing.nodes, self._scene.node_items
        boxes: dict[tuple[str, str], list[QRectF]] = {}
        for node_id, (x, y) in places.items():
            if not area.contains(x, y):
                continue
            item = items.get(node_id)
            if item is not None and item.isVisible():
                continue
            node = nodes[node_id]
            boxes.setdefault((node.kind, self._state(node)), []).append(
                QRectF(x - NODE_W / 2, y - NODE_H / 2, NODE_W, NODE_H))
        return boxes

    def _edge_lines(self, places: dict[str, tuple[float, float]], area: QRectF) -> dict[bool, list[QLineF]]:
        """The straight lines of the edges born by the cursor between ``places`` that cross ``area``
        and have no item shown, the freed ones (either end freed) apart."""
        scene = self._scene
        nodes, edges, drawn = scene.drawing.nodes, scene.drawing.edges, scene.edge_routes.item_of
        lines: dict[bool, list[QLineF]] = {False: [], True: []}
        for node_id in places:
            for number in scene.edge_routes.ids_of.get(node_id, ()):
                edge = edges[number]
                if edge.source != node_id or edge.born > scene.cursor or edge.target not in places:
                    continue
                item = drawn.get(number)
                if item is not None and item.isVisible():
                    continue
                (x0, y0), (x1, y1) = places[node_id], places[edge.target]
                if not area.intersects(QRectF(min(x0, x1), min(y0, y1), abs(x1 - x0) + 1, abs(y1 - y0) + 1)):
                    continue
                freed = self._state(nodes[node_id]) == "freed" or self._state(nodes[edge.target]) == "freed"
                lines[freed].append(QLineF(x0, y0 + NODE_H / 2, x1, y1 - NODE_H / 2))
        return lines

    @staticmethod
    def _draw_lines(painter, lines: dict[bool, list[QLineF]]) -> None:
        c = colors()
        for freed, batch in lines.items():
            if batch:
                painter.setPen(QPen(c.q("edge_freed" if freed else "edge"), 1.4))
                painter.drawLines(batch)

    @staticmethod
    def _draw_boxes(painter, boxes: dict[tuple[str, str], list[QRectF]]) -> None:
        c = colors()
        for (kind, state), rects in boxes.items():
            if state == "freed":
                painter.setPen(QPen(c.q("freed_border"), 1.2, Qt.DashLine))
                painter.setBrush(c.q("freed_fill"))
            elif state == "running":
                painter.setPen(QPen(c.q("running_border"), 3))
                painter.setBrush(c.q("running_fill"))
            else:
                painter.setPen(QPen(c.border_of(kind), 1.4))
                painter.setBrush(c.fill_of(kind))
            painter.drawRects(rects)  # tensors' pills as boxes too: one call per colour

    def _paint_cells(self, painter, area: QRectF) -> None:
        """Nodes smaller than a pixel or two: each cell of the index of places that holds a shown
        node (one a box does not hide) as one box in that node's colours, so the picture of a
        graph of 10^5 nodes costs its cells, not its nodes."""
        scene = self._scene
        grid = scene.cells_in(area)
        shown = scene.at_cursor.visible
        hidden = scene.boxes._hidden_by
        nodes = scene.drawing.nodes
        step = scene.GRID
        boxes: dict[str, list[QRectF]] = {}
        for (gx, gy), ids in grid:
            for node_id in ids:
                if node_id in shown and node_id not in hidden:
                    boxes.setdefault(nodes[node_id].kind, []).append(QRectF(gx * step, gy * step, step, step))
                    break
        c = colors()
        painter.setPen(Qt.NoPen)
        for kind, rects in boxes.items():
            painter.setBrush(c.border_of(kind))
            painter.drawRects(rects)
