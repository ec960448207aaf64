"""EdgeItem: an arrow between two nodes, its routing (S-curves, lanes between columns) and style."""

from __future__ import annotations

import zlib

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QPainterPath, QPen, QPolygonF
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPathItem

from graphview.core.drawing import LAYER_HEIGHT, SLOT_WIDTH, DrawEdge
from graphview.core.text import label_text
from graphview.qt.canvas.nodes import NodeItem, arrowhead
from graphview.qt.canvas.style import NODE_H, SMALLEST_TEXT_PT, colors, stacking


class EdgeItem(QGraphicsPathItem):
    def __init__(self, edge: DrawEdge, source: NodeItem, target: NodeItem, clear: bool = False) -> None:
        super().__init__()
        self._head: tuple[QPainterPath, QPolygonF] | None = None  # (the path it was worked out for, the arrowhead)
        self.bind(edge, source, target, clear)

    def bind(self, edge: DrawEdge, source: NodeItem, target: NodeItem, clear: bool = False) -> None:
        """Draw ``edge`` between two node items, as a new item would (an item a big scene took
        away is used again)."""
        self.edge = edge
        self.setZValue(stacking(1, edge.source + edge.target))
        self.label = edge.label
        self.source, self.target = source, target
        self.clear = clear  # no node ever sits on the straight way: no detour needed
        self.freed = False
        self.rerouted = False
        self.route_between_nodes()
        self._style()

    def default_route(self) -> None:
        if self.rerouted:
            self.rerouted = False
            self.route_between_nodes()

    def route_between_nodes(self) -> None:
        self.route_down(self.source.pos() + QPointF(0, NODE_H / 2), self.target.pos() - QPointF(0, NODE_H / 2 + 2),
                        self.clear)

    def route_down(self, start: QPointF, end: QPointF, clear: bool) -> None:
        """Adjacent rows, or nothing on the straight way (``clear``): one S-curve. Farther apart:
        the edge leaves its node (or shut box), runs down the lane between two columns (nodes never
        sit there) and turns into its target, instead of cutting straight across the nodes of the
        rows in between."""
        if end.y() - start.y() <= LAYER_HEIGHT or clear:
            self.route(start, end)
            return
        side = 1.0 if end.x() >= start.x() else -1.0
        # edges sharing a lane are kept apart by a few pixels, so each stays traceable
        lane = start.x() + side * SLOT_WIDTH / 2 + ((zlib.crc32((self.edge.source + self.edge.target).encode()) % 5) - 2) * 4.0
        bend = (LAYER_HEIGHT - NODE_H) / 2
        top, bottom = QPointF(lane, start.y() + bend), QPointF(lane, end.y() - bend)
        path = QPainterPath(start)
        path.cubicTo(start + QPointF(0, bend * 0.7), top - QPointF(0, bend * 0.7), top)
        path.lineTo(bottom)
        path.cubicTo(bottom + QPointF(0, bend * 0.7), end - QPointF(0, bend * 0.7), end)
        self.setPath(path)

    def route(self, start: QPointF, end: QPointF) -> None:
        path = QPainterPath(start)
        dy = max(30.0, abs(end.y() - start.y()) / 2)
        if end.y() <= start.y():  # drawn upwards (rare): loop around the side
            path.cubicTo(start + QPointF(80, 60), end + QPointF(80, -60), end)
        else:
            path.cubicTo(start + QPointF(0, dy), end - QPointF(0, dy), end)
        self.setPath(path)

    def _style(self) -> None:
        c = colors()
        color = c.q("edge_freed") if self.freed else c.q("edge_accumulate" if self.edge.kind == "accumulate" else "edge")
        pen = QPen(color, 1.4)
        if self.edge.kind in ("detach", "no_grad_op", "input"):
            pen.setStyle(Qt.DashLine)
        self.setPen(pen)

    def apply_theme(self) -> None:
        """The theme changed: take its colours."""
        self._style()

    def set_freed(self, freed: bool) -> None:
        if freed != self.freed:
            self.freed = freed
            self._style()

    def paint(self, painter, option, widget=None) -> None:
        super().paint(painter, option, widget)
        painter.setBrush(self.pen().color())
        painter.setPen(Qt.NoPen)
        painter.drawPolygon(self.head())

    def head(self) -> QPolygonF:
        """The arrowhead at the end of its path, worked out once a path: every paint of the edge, and
        of its target's saved badge (NodeItem.arrivals), asks for it, and a path's pointAtPercent
        measures all of the path each time (7-26 us an edge)."""
        path = self.path()
        if self._head is None or self._head[0] != path:
            self._head = (path, arrowhead(path))
        return self._head[1]


#: a label's height, and its room on either side of its text
LABEL_H, LABEL_PAD = 14.0, 4.0


#: the font of edge labels
LABEL_FONT = QFont("DejaVu Sans", SMALLEST_TEXT_PT)


def label_width(text: str) -> float:
    """The width of a label box holding ``text``."""
    return QFontMetricsF(LABEL_FONT).horizontalAdvance(text) + 2 * LABEL_PAD


class LabeledEdgeItem(EdgeItem):
    """An edge with a label beside it (``detach``, the op of a no-grad edge), where the scene's
    :class:`~graphview.qt.canvas.edge_labels.EdgeLabels` puts it (until then, beside its middle).
    Only these widen their bounding box in Python: a Python override on all 20,000 edges of a big
    graph costs a third of a zoomed-out frame."""

    label_rect = QRectF()
    #: where its label is: beside a point along its path (0 its start, 1 its end), on its right or
    #: left, above or below the point
    label_spot = (0.5, True, False)

    def bind(self, edge: DrawEdge, source: NodeItem, target: NodeItem, clear: bool = False) -> None:
        self.own_label = label_text(edge.label)  # (a trace's string: cut, on one line)
        self._label_width = label_width(self.own_label) if self.own_label else 0.0
        self.label_spot = LabeledEdgeItem.label_spot  # (an item used again: not its last edge's spot)
        self.relabelled = False
        super().bind(edge, source, target, clear)
        self.label = self.own_label
        self.put_label(*self.label_spot)  # (the same path as its last edge's: no setPath to place it)

    #: whether it says another text than its own label (see :meth:`show_label`)
    relabelled = False

    def show_label(self, text: str) -> None:
        """Say ``text`` beside the edge instead of its own label (nothing: ``""``)."""
        self.relabelled = text != self.own_label
        if text != self.label:
            self.label = text
            self._label_width = label_width(text) if text else 0.0
            self.put_label(*self.label_spot)

    def label_rect_at(self, along: float, right: bool, below: bool = False) -> QRectF:
        """Where the label goes beside the point ``along`` its path."""
        return self.label_rect_beside(self.path().pointAtPercent(along), right, below)

    def label_rect_beside(self, point: QPointF, right: bool, below: bool = False) -> QRectF:
        """Where the label goes beside ``point`` (on its path)."""
        left = point.x() + 6 if right else point.x() - 6 - self._label_width
        return QRectF(left, point.y() + 2 if below else point.y() - LABEL_H - 2, self._label_width, LABEL_H)

    @property
    def label_width(self) -> float:
        """The width of its label's box (0: no label)."""
        return self._label_width

    def put_label(self, along: float, right: bool, below: bool = False) -> None:
        """Put the label beside the point ``along`` its path."""
        self.label_spot = (along, right, below)
        rect = self.label_rect_at(along, right, below)
        if rect != self.label_rect:
            self.prepareGeometryChange()
            self.label_rect = rect
            self.update()

    def setPath(self, path: QPainterPath) -> None:
        if path == self.path():  # (routed again at every step of the cursor, mostly the same way)
            return
        super().setPath(path)
        self.put_label(*self.label_spot)  # where it was along the edge, until the labels are placed again
        self._labels_moved()

    def itemChange(self, change, value):
        if change in (QGraphicsItem.ItemVisibleHasChanged, QGraphicsItem.ItemSceneHasChanged):
            self._labels_moved()
        return super().itemChange(change, value)

    def _labels_moved(self) -> None:
        scene = self.scene()
        labels = getattr(scene, "edge_labels", None)
        if labels is not None:
            labels.schedule()

    def boundingRect(self) -> QRectF:
        return super().boundingRect().adjusted(-9, -9, 9, 9).united(self.label_rect)

    def paint(self, painter, option, widget=None) -> None:
        super().paint(painter, option, widget)
        if self.label and option.levelOfDetailFromTransform(painter.worldTransform()) > 0.5:
            painter.setFont(LABEL_FONT)
            painter.fillRect(self.label_rect, colors().q("background"))  # readable where it lies over another edge
            painter.setPen(colors().q("edge_label"))
            painter.drawText(self.label_rect, Qt.AlignCenter, self.label)
