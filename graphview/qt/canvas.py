"""The graph canvas: a QGraphicsScene drawing a :class:`graphview.core.drawing.Drawing`.

Every view shows the state at the timeline's cursor: :meth:`GraphScene.set_cursor` hides what
was not born yet, greys what a backward freed, lights the node the engine is executing, shows
saved-tensor badges with the bytes still held and each leaf's ``.grad``. Pulses travel along
edges while backward is animated.
"""

from __future__ import annotations

import math
import time
import zlib

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import (QAction, QColor, QFont, QFontMetricsF, QKeySequence, QPainter, QPainterPath, QPen,
                           QPixmap, QPolygonF)
from PySide6.QtWidgets import (QGraphicsItem, QGraphicsObject, QGraphicsPathItem, QGraphicsScene, QGraphicsView,
                               QMenu, QStyleOptionGraphicsItem, QWidget)

from graphview.core.drawing import LAYER_HEIGHT, NODE_KINDS, SLOT_WIDTH, DrawEdge, DrawNode, Drawing
from graphview.core.run import Run

NODE_W, NODE_H = 172.0, 48.0
FILL = {
    "param": QColor("#b7e4b9"),
    "input_grad": QColor("#ffe08a"),
    "input": QColor("#e3e6ea"),
    "intermediate": QColor("#ffffff"),
    "output": QColor("#f7b4ae"),
    "op": QColor("#c9dcf5"),
    "accumulate": QColor("#dccff2"),
    "detached": QColor("#eeeeee"),
}
BORDER = {
    "param": QColor("#2e7d32"), "input_grad": QColor("#b8860b"), "input": QColor("#8a8f96"),
    "intermediate": QColor("#6b7280"), "output": QColor("#c62828"), "op": QColor("#1f5fa8"),
    "accumulate": QColor("#6a4bb0"), "detached": QColor("#9e9e9e"),
}
RUNNING = QColor("#ff8c00")
FREED_FILL = QColor("#f1f1f1")
FREED_TEXT = QColor("#a0a0a0")
TENSOR_KINDS = ("param", "input_grad", "input", "intermediate", "output", "detached")


def short_value(summary) -> str:
    """A badge-sized form of a value summary: the value of a scalar, else a norm."""
    if not isinstance(summary, dict):
        return "None" if summary is None else str(summary)
    values = summary.get("values")
    if values is not None:
        shown = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in values[:3]]
        if len(values) == 1:
            return shown[0]
        return "[" + ", ".join(shown) + (", …]" if len(values) > 3 else "]")
    stats = summary.get("stats") or {}
    if stats.get("nan") or stats.get("inf"):
        return f"{stats.get('nan', 0)} NaN, {stats.get('inf', 0)} Inf"
    norm = stats.get("norm")
    return f"norm {norm:.4g}" if isinstance(norm, float) else f"{stats.get('numel', '?')} values"


def human_bytes(n: float) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


class NodeItem(QGraphicsItem):
    """One drawn node: a box for autograd nodes, a pill for tensors."""

    def __init__(self, node: DrawNode) -> None:
        super().__init__()
        self.node = node
        self.state = "live"  # live | running | done | freed | error | unreachable
        self.kind = node.kind
        self.saved = 0
        self.grad: str | None = None
        self.setPos(node.x, node.y)
        self.setFlag(QGraphicsItem.ItemIsSelectable, True)
        self.setAcceptHoverEvents(True)
        self.setCursor(Qt.PointingHandCursor)
        self.setZValue(2)
        self._tooltip()

    def _tooltip(self) -> None:
        n = self.node
        parts = [f"<b>{n.title}</b>", n.subtitle, NODE_KINDS.get(self.kind, self.kind)]
        if n.module:
            parts.append(f"module {n.module}")
        self.setToolTip("<br>".join(p for p in parts if p))

    def boundingRect(self) -> QRectF:
        return QRectF(-NODE_W / 2 - 11, -NODE_H / 2 - 14, NODE_W + 22, NODE_H + 34)

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        path.addRoundedRect(QRectF(-NODE_W / 2, -NODE_H / 2, NODE_W, NODE_H), 8, 8)
        return path

    def set_value(self, summary) -> None:
        """Tensors: show the value the tensor had at the cursor (parameters change every step)."""
        if summary is None:
            return
        shape = summary.get("shape") or []
        dims = "×".join(str(d) for d in shape) if shape else "scalar"
        values = summary.get("values")
        text = f"{dims} = {short_value(summary)}" if values is not None and len(values) == 1 else self.node.subtitle
        if text != self.node.subtitle:
            self.node.subtitle = text
            self.update()

    def set_state(self, state: str, kind: str, saved: int, grad: str | None) -> None:
        if (state, kind, saved, grad) != (self.state, self.kind, self.saved, self.grad):
            self.state, self.kind, self.saved, self.grad = state, kind, saved, grad
            self.update()

    def fill_color(self) -> QColor:
        if self.state == "freed":
            return FREED_FILL
        if self.state == "running":
            return QColor("#ffd59e")
        return FILL.get(self.kind, QColor("white"))

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        if self.state == "unreachable":  # alive, but backward will never run it: dimmed
            painter.setOpacity(0.38)
        rect = QRectF(-NODE_W / 2, -NODE_H / 2, NODE_W, NODE_H)
        border = BORDER.get(self.kind, QColor("#555"))
        pen = QPen(border, 1.4)
        if self.kind in ("detached",):
            pen.setStyle(Qt.DashLine)
        if self.state == "freed":
            pen = QPen(QColor("#bdbdbd"), 1.2, Qt.DashLine)
        if self.state == "running":
            painter.setPen(Qt.NoPen)
            painter.setBrush(QColor(255, 140, 0, 90))
            painter.drawRoundedRect(rect.adjusted(-7, -7, 7, 7), 14, 14)
            pen = QPen(RUNNING, 3)
        if self.state == "error":
            painter.setPen(Qt.NoPen)
            painter.setBrush(QColor(198, 40, 40, 70))
            painter.drawRoundedRect(rect.adjusted(-7, -7, 7, 7), 14, 14)
            pen = QPen(QColor("#c62828"), 3)
        if self.isSelected():
            # a blue ring outside; a running or failing node keeps its own border inside it
            painter.setPen(QPen(QColor("#0b57d0"), 2.5))
            painter.setBrush(Qt.NoBrush if self.state in ("running", "error") else QColor(11, 87, 208, 60))
            painter.drawRoundedRect(rect.adjusted(-9, -9, 9, 9), 15, 15)
            if self.state not in ("running", "error"):
                pen = QPen(QColor("#0b57d0"), 3)
        painter.setPen(pen)
        painter.setBrush(self.fill_color())
        radius = NODE_H / 2 if self.kind in TENSOR_KINDS else 8
        painter.drawRoundedRect(rect, radius, radius)
        if lod < 0.35:
            return
        painter.setPen(FREED_TEXT if self.state == "freed" else QColor("#1b1b1b"))
        title_font = QFont("DejaVu Sans", 9)
        title_font.setBold(True)
        painter.setFont(title_font)
        fm = QFontMetricsF(title_font)
        title = self.node.title
        if fm.horizontalAdvance(title) > NODE_W - 14:  # long names: a smaller font before eliding
            title_font.setPointSizeF(7.5)
            painter.setFont(title_font)
            fm = QFontMetricsF(title_font)
        # a dotted name differs at its end (…layers.0.linear1.weight), an op name at both ends
        title = fm.elidedText(title, Qt.ElideLeft if "." in title else Qt.ElideMiddle, NODE_W - 14)
        painter.drawText(QRectF(-NODE_W / 2 + 6, -NODE_H / 2 + 4, NODE_W - 12, 20), Qt.AlignCenter, title)
        sub_font = QFont("DejaVu Sans", 8)
        painter.setFont(sub_font)
        fm = QFontMetricsF(sub_font)
        sub = self.node.subtitle
        if sub.startswith("into "):  # into encoder.layers.0.linear1.weight.grad: keep the end
            sub = "into " + fm.elidedText(sub[5:], Qt.ElideLeft, NODE_W - 14 - fm.horizontalAdvance("into "))
        else:
            sub = fm.elidedText(sub, Qt.ElideMiddle, NODE_W - 14)
        painter.setPen(FREED_TEXT if self.state == "freed" else QColor("#454b54"))
        painter.drawText(QRectF(-NODE_W / 2 + 6, 0, NODE_W - 12, 18), Qt.AlignCenter, sub)
        if self.saved > 0:
            self._badge(painter, f"saved {human_bytes(self.saved)}", QPointF(NODE_W / 2 - 4, -NODE_H / 2 - 2),
                        QColor("#fff1c4"), QColor("#b8860b"))
        if self.grad is not None and self.kind in TENSOR_KINDS:
            self._badge(painter, f"grad {self.grad}", QPointF(0, NODE_H / 2 + 10), QColor("#e8f5e9"),
                        QColor("#2e7d32"), centered=True)

    @staticmethod
    def _badge(painter: QPainter, text: str, anchor: QPointF, fill: QColor, edge: QColor, centered: bool = False) -> None:
        font = QFont("DejaVu Sans", 7)
        font.setBold(True)
        painter.setFont(font)
        fm = QFontMetricsF(font)
        text = fm.elidedText(text, Qt.ElideRight, NODE_W + 20)
        w, h = fm.horizontalAdvance(text) + 10, fm.height() + 2
        left = anchor.x() - w / 2 if centered else anchor.x() - w
        rect = QRectF(left, anchor.y() - h / 2, w, h)
        painter.setPen(QPen(edge, 1))
        painter.setBrush(fill)
        painter.drawRoundedRect(rect, h / 2, h / 2)
        painter.setPen(edge.darker(130))
        painter.drawText(rect, Qt.AlignCenter, text)


class EdgeItem(QGraphicsPathItem):
    def __init__(self, edge: DrawEdge, source: NodeItem, target: NodeItem, clear: bool = False) -> None:
        super().__init__()
        self.edge = edge
        self.label = edge.label
        self.source, self.target = source, target
        self.clear = clear  # no node ever sits on the straight way: no detour needed
        self.freed = False
        self.rerouted = False
        self.route_between_nodes()
        self.setZValue(1)
        self._style()

    def default_route(self) -> None:
        if self.rerouted:
            self.rerouted = False
            self.route_between_nodes()

    def route_between_nodes(self) -> None:
        """Adjacent rows: one S-curve. Farther apart: the edge leaves its node, runs down the lane
        between two columns (nodes never sit there) and turns into its target, instead of
        cutting straight across the nodes of the rows in between."""
        start = self.source.pos() + QPointF(0, NODE_H / 2)
        end = self.target.pos() - QPointF(0, NODE_H / 2 + 2)
        if end.y() - start.y() <= LAYER_HEIGHT or self.clear:
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
        color = QColor("#7d8590") if not self.freed else QColor("#d0d0d0")
        pen = QPen(color, 1.4)
        if self.edge.kind in ("detach", "no_grad_op", "input"):
            pen.setStyle(Qt.DashLine)
        if self.edge.kind == "accumulate":
            pen.setColor(QColor("#6a4bb0") if not self.freed else QColor("#d0d0d0"))
        self.setPen(pen)

    def set_freed(self, freed: bool) -> None:
        if freed != self.freed:
            self.freed = freed
            self._style()

    def paint(self, painter, option, widget=None) -> None:
        super().paint(painter, option, widget)
        path = self.path()
        end = path.pointAtPercent(1.0)
        before = path.pointAtPercent(0.93)
        angle = math.atan2(end.y() - before.y(), end.x() - before.x())
        size = 8.0
        p1 = end - QPointF(math.cos(angle - 0.45) * size, math.sin(angle - 0.45) * size)
        p2 = end - QPointF(math.cos(angle + 0.45) * size, math.sin(angle + 0.45) * size)
        painter.setBrush(self.pen().color())
        painter.setPen(Qt.NoPen)
        painter.drawPolygon(QPolygonF([end, p1, p2]))
        if self.label and option.levelOfDetailFromTransform(painter.worldTransform()) > 0.5:
            font = QFont("DejaVu Sans", 7)
            painter.setFont(font)
            mid = path.pointAtPercent(0.5)
            box = QRectF(mid.x() + 6, mid.y() - 16, QFontMetricsF(font).horizontalAdvance(self.label) + 8, 14)
            painter.fillRect(box, QColor("#fbfbfc"))  # readable where it lies over another edge
            painter.setPen(QColor("#6b7280"))
            painter.drawText(box, Qt.AlignCenter, self.label)


class GroupItem(QGraphicsObject):
    """A box around the nodes of one ``nn.Module`` call path; double-click collapses it."""

    sigToggled = Signal(str)
    LABEL_FONT = QFont("DejaVu Sans", 8)
    LABEL_H = 14.0

    def __init__(self, path: str, depth: int) -> None:
        super().__init__()
        self.path = path
        self.depth = depth
        self.collapsed = False
        self.rect = QRectF()
        self.members = 0
        self.label_shift = 0.0  # moved right when an enclosing box's label sits at the same height
        self.setZValue(-10 + depth)
        self.setAcceptHoverEvents(True)
        self.setToolTip(f"module {path} (double-click to collapse or expand)")

    def set_box(self, rect: QRectF, members: int) -> None:
        box = QRectF(rect.left(), rect.top(), NODE_W + 20, NODE_H + 10) if self.collapsed else rect
        if box != self.rect or members != self.members:
            self.prepareGeometryChange()
            self.rect, self.members = box, members
            self.update()

    def anchor_in(self) -> QPointF:
        return QPointF(self.rect.center().x(), self.rect.top())

    def anchor_out(self) -> QPointF:
        return QPointF(self.rect.center().x(), self.rect.bottom())

    def label_rect(self, shift: float | None = None) -> QRectF:
        """Where the module's name sits: on the top border, breaking the dashed line."""
        width = min(QFontMetricsF(self.LABEL_FONT).horizontalAdvance(self.path) + 10, self.rect.width() - 20)
        left = self.rect.left() + 10 + (self.label_shift if shift is None else shift)
        return QRectF(left, self.rect.top() - self.LABEL_H / 2, max(0.0, width), self.LABEL_H)

    def boundingRect(self) -> QRectF:
        return self.rect.adjusted(-2, -self.LABEL_H / 2 - 2, 2, 2).united(self.label_rect().adjusted(-1, -1, 1, 1))

    def paint(self, painter, option, widget=None) -> None:
        if self.collapsed:
            painter.setPen(QPen(QColor("#5b6b82"), 1.6))
            painter.setBrush(QColor("#e6ecf5"))
            painter.drawRoundedRect(self.rect, 8, 8)
            painter.setPen(QColor("#1f2937"))
            font = QFont("DejaVu Sans", 9)
            font.setBold(True)
            painter.setFont(font)
            painter.drawText(self.rect.adjusted(6, 4, -6, -self.rect.height() / 2), Qt.AlignCenter,
                             QFontMetricsF(font).elidedText(f"▸ {self.path}", Qt.ElideMiddle, self.rect.width() - 12))
            painter.setFont(QFont("DejaVu Sans", 8))
            painter.drawText(self.rect.adjusted(6, self.rect.height() / 2, -6, -4), Qt.AlignCenter,
                             f"{self.members} nodes (collapsed)")
            return
        painter.setPen(QPen(QColor(150, 160, 175), 1, Qt.DashLine))
        painter.setBrush(Qt.NoBrush)  # outline only: translucent fills of big boxes make panning slow
        painter.drawRoundedRect(self.rect, 10, 10)
        if option.levelOfDetailFromTransform(painter.worldTransform()) > 0.3:
            label = self.label_rect()
            painter.setPen(Qt.NoPen)
            painter.setBrush(QColor("#fbfbfc"))  # the scene's background: the border breaks for the name
            painter.drawRect(label)
            painter.setPen(QColor("#5b6b82"))
            painter.setFont(self.LABEL_FONT)
            painter.drawText(label, Qt.AlignCenter,
                             QFontMetricsF(self.LABEL_FONT).elidedText(self.path, Qt.ElideLeft, label.width() - 4))

    def mouseDoubleClickEvent(self, event) -> None:
        self.collapsed = not self.collapsed
        self.sigToggled.emit(self.path)


def _calls(items: list) -> list[list]:
    """A module's shown nodes, split where a row between them holds none of them: the layout
    stacks each module call in rows of its own, so a module called twice (``self.pool`` after
    two convolutions) gets two boxes rather than one spanning whatever ran in between."""
    rows: dict[float, list] = {}
    for item in items:
        rows.setdefault(item.pos().y(), []).append(item)
    calls: list[list] = []
    previous = None
    for y in sorted(rows):
        if previous is None or y - previous > LAYER_HEIGHT * 1.5:
            calls.append([])
        calls[-1].extend(rows[y])
        previous = y
    return calls


class LabeledEdgeItem(EdgeItem):
    """An edge with a label beside its middle (``detach``, the op of a no-grad edge). Only these
    widen their bounding box in Python: a Python override on all 20,000 edges of a big graph
    costs a third of a zoomed-out frame."""

    def boundingRect(self) -> QRectF:
        rect = super().boundingRect().adjusted(-9, -9, 9, 9)
        mid = self.path().pointAtPercent(0.5)
        return rect.united(QRectF(mid.x() + 4, mid.y() - 18, 130, 20))


class PulseItem(QGraphicsObject):
    """A gradient travelling along an edge, backwards (from the edge's target to its source)."""

    def __init__(self, edge: EdgeItem, text: str, duration_ms: int) -> None:
        super().__init__()
        self.edge = edge
        self.text = text
        self.t = 0.0
        self.duration = max(60, duration_ms)
        self.setZValue(5)
        self._elapsed = 0
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._tick)
        self._timer.start(16)
        self._move()

    FONT = QFont("DejaVu Sans", 9, QFont.Bold)

    def boundingRect(self) -> QRectF:
        return QRectF(-10, -11, 180, 22)

    def paint(self, painter, option, widget=None) -> None:
        painter.setPen(QPen(QColor("#c2410c"), 1.5))
        painter.setBrush(QColor("#ff8c00"))
        painter.drawEllipse(QPointF(0, 0), 8, 8)
        if self.text:  # the gradient it carries, on a label that stays readable over edges
            painter.setFont(self.FONT)
            fm = QFontMetricsF(self.FONT)
            text = fm.elidedText(self.text, Qt.ElideRight, 160)
            label = QRectF(12, -10, fm.horizontalAdvance(text) + 10, 20)
            painter.setPen(QPen(QColor("#fdba74"), 1))
            painter.setBrush(QColor("#fff7ed"))
            painter.drawRoundedRect(label, 6, 6)
            painter.setPen(QColor("#9a3412"))
            painter.drawText(label, Qt.AlignCenter, text)

    def _move(self) -> None:
        self.setPos(self.edge.path().pointAtPercent(1.0 - self.t))

    def _tick(self) -> None:
        self._elapsed += 16
        self.t = min(1.0, self._elapsed / self.duration)
        self._move()
        if self.t >= 1.0:
            self._timer.stop()
            scene = self.scene()
            if scene is not None:
                scene.removeItem(self)
            self.deleteLater()


class GraphScene(QGraphicsScene):
    """Holds the items of one run's drawing and shows them at a cursor."""

    sigNodeSelected = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.run: Run | None = None
        self.drawing: Drawing | None = None
        self.node_items: dict[str, NodeItem] = {}
        self.edge_items: list[EdgeItem] = []
        self._edges_into: dict[str, list[EdgeItem]] = {}
        self._waiting: list[str] = []
        self.groups: dict[str, GroupItem] = {}
        self.collapsed: set[str] = set()
        self.live = False  # a runner is streaming into this scene
        self._groups_at = 0.0
        self._complete = False  # every item has been brought to the cursor once
        self._fresh: set[str] = set()  # items created since the last cursor move
        self._visible: set[str] = set()  # node ids shown at the cursor (module boxes look only at these)
        self._edges_from: dict[str, list] = {}
        self._tensors_of_op: dict[int, list[str]] = {}  # grad_fn vid -> tensor items it made
        self.cursor = -1
        self.setBackgroundBrush(QColor("#fbfbfc"))
        self.selectionChanged.connect(self._on_selection)

    def set_run(self, run: Run) -> None:
        self.clear()
        self.node_items.clear()
        self.edge_items.clear()
        self._edges_into.clear()
        self._waiting = []
        self.groups = {}
        self._complete = False
        self._fresh = set()
        self._visible = set()
        self._edges_from = {}
        self._tensors_of_op = {}
        self.run = run
        self.drawing = Drawing(run)
        self.cursor = -1
        self.grow()

    def grow(self, budget: int | None = None) -> bool:
        """Add items for what the run gained since the last call (positions never change).

        With ``budget``, create at most that many items now (the GUI thread stays responsive
        while a big graph streams in); returns True when items are still waiting.
        """
        if self.drawing is None:
            return False
        self._waiting.extend(self.drawing.update(final=self.run is not None and self.run.end is not None))
        made = taken = 0
        unplaced = []
        waiting = self._waiting
        while taken < len(waiting) and (budget is None or made < budget):
            node_id = waiting[taken]
            taken += 1
            node = self.drawing.nodes[node_id]
            if not node.placed:  # a leaf still waiting for its first user: no position yet
                unplaced.append(node_id)
                continue
            item = NodeItem(node)
            self._show(item, node.born <= self.cursor)
            self.node_items[node_id] = item
            self._fresh.add(node_id)
            tnode = self.drawing.run.tensor_nodes.get(node_id)
            if tnode is not None and tnode.grad_fn is not None:
                self._tensors_of_op.setdefault(tnode.grad_fn, []).append(node_id)
            made += 1
        self._waiting = unplaced + waiting[taken:]
        for edge in self.drawing.edges[len(self.edge_items):]:
            if edge.source not in self.node_items or edge.target not in self.node_items:
                break  # edges come in order; the rest wait for their nodes
            source, target = self.node_items.get(edge.source), self.node_items.get(edge.target)
            item = (LabeledEdgeItem if edge.label else EdgeItem)(
                edge, source, target, clear=self.drawing.path_clear(source.node, target.node, NODE_W / 2 + 12))
            self._show(item, edge.born <= self.cursor and source.isVisible() and target.isVisible())
            self.edge_items.append(item)
            self._edges_into.setdefault(edge.target, []).append(item)
            self._edges_from.setdefault(edge.source, []).append(item)
        x0, y0, x1, y1 = self.drawing.bounds()
        self.setSceneRect(QRectF(x0 - NODE_W, y0 - NODE_H * 2, x1 - x0 + NODE_W * 2, y1 - y0 + NODE_H * 4))
        return any(self.drawing.nodes[n].placed for n in self._waiting)

    def set_cursor(self, index: int) -> None:
        """Show the state after event ``index``.

        A move of up to a few thousand events, either way (streaming, stepping, scrubbing),
        only revisits the items the events in between touch; a longer jump, or one with a module
        box collapsed, checks them all.
        """
        previous = self.cursor
        self.cursor = index
        drawing = self.drawing
        if drawing is None:
            return
        incremental = self._complete and previous >= 0 and abs(index - previous) <= 3000 and not self.collapsed
        if incremental:
            touched = self._touched(min(previous, index), max(previous, index))
            items = [self.node_items[i] for i in touched if i in self.node_items]
        else:
            items = list(self.node_items.values())
        self._fresh.clear()
        for item in items:
            self._update_item(item, index)
        now = time.monotonic()
        if self.live and now - self._groups_at < 0.5 and not self.collapsed:
            hidden_by = {}  # streaming: module boxes catch up twice a second
        else:
            self._groups_at = now
            hidden_by = self._update_groups()
        if incremental and not hidden_by:
            # nothing collapsed: only the edges of the items revisited can change
            edges = {e for item in items for e in self._edges_into.get(item.node.id, []) + self._edges_from.get(item.node.id, [])}
        else:
            edges = self.edge_items
        for edge in edges:
            self._update_edge(edge, index, hidden_by)
        self._complete = True

    def _show(self, item: QGraphicsItem, visible: bool) -> None:
        """Show or hide an item for the cursor. A hidden one also leaves the scene: every step of
        a long training run leaves a destroyed graph behind, and thousands of hidden items in
        the scene's index would slow down every repaint of the whole view."""
        item.setVisible(visible)
        if visible:
            if item.scene() is None:
                self.addItem(item)
        elif item.scene() is not None:
            self.removeItem(item)

    def _update_item(self, item: NodeItem, index: int) -> None:
        drawing = self.drawing
        run = drawing.run
        node = item.node
        visible = drawing.visible(node, index)
        self._show(item, visible)
        if not visible:
            self._visible.discard(node.id)
            return
        self._visible.add(node.id)
        if node.kind in ("op", "accumulate"):
            state = drawing.op_state(node.ref, index)
            item.set_state(state, node.kind, drawing.saved_bytes(node.ref, index), None)
            return
        kind = "output" if node.kind == "intermediate" and drawing.is_output(node.ref, index) else node.kind
        name = run.tensor_name(node.ref)
        if name and not node.title.startswith(name):
            node.title = name + (node.title[node.title.index(" ("):] if " (v" in node.title else "")
            item.update()
        entry = run.grad_at(node.ref, index)
        item.set_value(run.value_at(node.ref, index))
        grad = short_value(entry.value) if entry is not None and entry.value is not None else None
        state = "error" if run.errors and node.ref in drawing.failed_roots(index) else "live"
        item.set_state(state, kind, 0, grad)

    def _update_edge(self, edge: "EdgeItem", index: int, hidden_by: dict) -> None:
        source_group = hidden_by.get(edge.source.node.id)
        target_group = hidden_by.get(edge.target.node.id)
        visible = (edge.edge.born <= index and (edge.source.isVisible() or source_group is not None)
                   and (edge.target.isVisible() or target_group is not None)
                   and not (source_group is not None and source_group is target_group))
        self._show(edge, visible)
        if not visible:
            return
        if source_group is not None or target_group is not None:
            start = source_group.anchor_out() if source_group else edge.source.pos() + QPointF(0, NODE_H / 2)
            end = target_group.anchor_in() if target_group else edge.target.pos() - QPointF(0, NODE_H / 2 + 2)
            edge.route(start, end)
            edge.rerouted = True
        else:
            edge.default_route()
        edge.set_freed(not {"freed", "unreachable"}.isdisjoint((edge.target.state, edge.source.state)))

    def item_at_event(self, index: int) -> NodeItem | None:
        """The shown node event ``index`` is about: the grad_fn node a backward step runs, or the
        node an op made (its output tensor, else its grad_fn)."""
        run = self.run
        if run is None or not 0 <= index < len(run.events):
            return None
        ev = run.events[index]
        candidates: list[str] = []
        if ev.get("vid") is not None:
            candidates.append(f"op{ev['vid']}")
        for tid, _ in ev.get("outputs") or ():
            candidates.extend(n.id for n in run._tensor_nodes_of.get(tid, ()))
        if ev.get("grad_fn") is not None:
            candidates.append(f"op{ev['grad_fn']}")
        if ev.get("tid") is not None:
            candidates.extend(n.id for n in run._tensor_nodes_of.get(ev["tid"], ()))
        for node_id in candidates:
            item = self.node_items.get(node_id)
            if item is not None and item.isVisible():
                return item
        return None

    def _touched(self, previous: int, index: int) -> set[str]:
        """Ids of the items whose look can differ between cursor positions ``previous`` < ``index``."""
        run = self.drawing.run
        events = run.events
        touched: set[str] = set(self._fresh)

        def op(vid):
            if vid is not None:
                touched.add(f"op{vid}")
                touched.update(self._tensors_of_op.get(vid, ()))

        def tensor(tid):
            if tid is not None:
                touched.update(n.id for n in run._tensor_nodes_of.get(tid, ()))

        ends = False
        for i in range(max(previous, 0), min(index, len(events) - 1) + 1):
            ev = events[i]
            kind = ev.get("ev")
            if kind in ("node_dead", "step_end"):
                ends = True  # a derived no-grad tensor goes with what it feeds, or its step
            if kind in ("bw_node", "bw_node_done", "node", "node_dead", "error"):
                op(ev.get("vid"))
            if kind == "error" and ev.get("bid") in run.backwards:
                for tid in run.backwards[ev["bid"]].roots_tensors:
                    tensor(tid)
            elif kind == "accumulate":
                op(ev.get("vid"))
                tensor(ev.get("tid"))
            elif kind in ("tensor", "name", "value", "tensor_grad"):
                tensor(ev.get("tid"))
            elif kind == "grad_reset":
                for tid in ev.get("tids") or ():
                    tensor(tid)
            elif kind in ("saved", "own"):
                op(ev.get("owner"))
            elif kind == "release":
                saved = run.saved.get(ev["sid"])
                op(saved.owner if saved else None)
            elif kind == "backward_start":
                for tid in ev.get("root_tensors") or ():
                    tensor(tid)
            elif kind == "op":
                for tid, _ in list(ev.get("outputs") or ()) + list(ev.get("inputs") or ()):
                    tensor(tid)
        if ends:
            touched.update(self.drawing.derived_changing(previous, index))
        return touched

    def module_of(self, item: NodeItem) -> str | None:
        return item.node.module

    def _update_groups(self) -> dict[str, GroupItem]:
        """Boxes around each module path's visible nodes; returns node id -> collapsed group hiding it."""
        members: dict[str, list[NodeItem]] = {}
        for node_id in self._visible:
            item = self.node_items[node_id]
            if not item.isVisible():
                continue
            path = self.module_of(item)
            while path:
                members.setdefault(path, []).append(item)
                path = path.rpartition(".")[0]
        # a module whose nodes are all its only child's (encoder > layers > 0) would draw the same
        # box again a few pixels out: the child's box, whose name holds the whole path, stands for it
        same_as_child = {path.rpartition(".")[0] for path in members
                         if "." in path and len(members.get(path.rpartition(".")[0], ())) == len(members[path])}
        hidden: dict[str, GroupItem] = {}
        shown: list[GroupItem] = []
        used: set[str] = set()
        for path in sorted(members, key=lambda p: p.count(".")):
            if path in same_as_child and path not in self.collapsed:
                continue
            inside_collapsed = any(path.startswith(c + ".") for c in self.collapsed)
            for number, items in enumerate(_calls(members[path])):
                if len(items) < 2:
                    continue
                key = path if number == 0 else f"{path}#{number + 1}"  # a module called again
                used.add(key)
                group = self.groups.get(key)
                if group is None:
                    group = self.groups[key] = GroupItem(path, path.count("."))
                    group.sigToggled.connect(self._toggle_group)
                    self.addItem(group)
                group.collapsed = path in self.collapsed
                group.setVisible(not inside_collapsed)
                xs = [item.pos().x() for item in items]
                ys = [item.pos().y() for item in items]
                rect = QRectF(min(xs) - NODE_W / 2, min(ys) - NODE_H / 2, max(xs) - min(xs) + NODE_W,
                              max(ys) - min(ys) + NODE_H)
                # nested boxes step inwards; vertically they stay inside the gap between rows, so the
                # boxes of two modules one after the other (the layout stacks them) never overlap
                level = 3 - min(3, path.count("."))
                pad_x, pad_y = 10 + 7 * level, 6 + 5 * level
                group.set_box(rect.adjusted(-pad_x, -pad_y, pad_x, pad_y), len(items))
                if not inside_collapsed:
                    shown.append(group)
                if group.collapsed and not inside_collapsed:
                    for item in items:
                        item.setVisible(False)
                        hidden[item.node.id] = group
        for key, group in self.groups.items():
            if key not in used:
                group.setVisible(False)
        self._place_group_labels(shown)
        return hidden

    def _place_group_labels(self, groups: list[GroupItem]) -> None:
        """A nested box often starts on the same row as its parent: move its name right of the parent's."""
        placed: dict[str, list[tuple[GroupItem, QRectF]]] = {}  # path -> its boxes' labels
        for group in sorted(groups, key=lambda g: g.depth):
            shift = 0.0
            others = []
            parent = group.path.rpartition(".")[0]
            while parent:
                others += [label for outer, label in placed.get(parent, ()) if outer.rect.intersects(group.rect)]
                parent = parent.rpartition(".")[0]
            for _ in range(len(others) + 1):
                label = group.label_rect(shift)
                blocking = [r for r in others if r.intersects(label)]
                if not blocking:
                    break
                shift = max(r.right() for r in blocking) + 6 - (group.rect.left() + 10)
            if shift != group.label_shift:
                group.prepareGeometryChange()
                group.label_shift = shift
                group.update()
            placed.setdefault(group.path, []).append((group, group.label_rect()))

    def _toggle_group(self, path: str) -> None:
        if path in self.collapsed:
            self.collapsed.discard(path)
        else:
            self.collapsed.add(path)
        self._complete = False  # members of the box change visibility: revisit every item
        self.set_cursor(self.cursor)

    def set_collapsed(self, path: str, collapsed: bool) -> None:
        if collapsed != (path in self.collapsed):
            group = self.groups.get(path)
            if group is not None:
                group.collapsed = collapsed
            self._toggle_group(path)

    def edges_into(self, node_id: str) -> list[EdgeItem]:
        return self._edges_into.get(node_id, [])

    def pulse(self, node_id: str, grads: list, duration_ms: int) -> None:
        """Animate the gradients a node sends backwards along its incoming edges."""
        for edge in self.edges_into(node_id):
            if edge.isVisible() and edge.edge.kind in ("flow", "accumulate"):
                text = ""
                if grads:
                    text = grads[0] if isinstance(grads[0], str) else ""
                self.addItem(PulseItem(edge, text, duration_ms))

    def select_node(self, node_id: str) -> None:
        item = self.node_items.get(node_id)
        if item is None:
            return
        self.clearSelection()
        item.setSelected(True)

    def _on_selection(self) -> None:
        selected = [i for i in self.selectedItems() if isinstance(i, NodeItem)]
        if selected:
            self.sigNodeSelected.emit(selected[0].node.id)
        else:
            self.sigNodeSelected.emit("")  # a click on empty canvas: nothing is selected


class Overview(QWidget):
    """A minimap of the whole graph (a picture redrawn when the graph changes) with the main
    view's visible area marked; click or drag to move there."""

    def __init__(self, view: "GraphView") -> None:
        super().__init__(view)
        self.view = view
        self.setFixedSize(170, 120)
        self.enabled = True  # View > Overview in the corner
        self.pixmap: QPixmap | None = None
        self.source = QRectF()
        self.setCursor(Qt.PointingHandCursor)
        self.setToolTip("overview: click to move the view")
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(300)
        self._timer.timeout.connect(self.redraw)
        for bar in (view.horizontalScrollBar(), view.verticalScrollBar()):
            bar.valueChanged.connect(self.sync)
            bar.rangeChanged.connect(self.sync)

    def sync(self) -> None:
        """Shown only while part of the graph is out of view; then the marked area follows the view."""
        if self.pixmap is None or not self.enabled:
            self.setVisible(False)
            return
        visible = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
        self.setVisible(not visible.contains(self.source.adjusted(30, 30, -30, -30)))
        self.update()

    def schedule(self) -> None:
        if self.pixmap is None:
            self.redraw()  # the first picture at once; later ones when changes settle
        else:
            self._timer.start()

    def redraw(self) -> None:
        scene = self.view.scene()
        rect = QRectF()
        for item in scene.node_items.values():
            if item.isVisible():
                rect = rect.united(item.sceneBoundingRect())
        self.source = rect.adjusted(-40, -40, 40, 40)
        if rect.isNull():
            self.pixmap = None
            self.sync()
            return
        pixmap = QPixmap(self.size())
        pixmap.fill(QColor("#ffffff"))
        painter = QPainter(pixmap)
        s, ox, oy = self._scale()  # the same mapping the marked area and clicks use
        scene.render(painter, QRectF(ox, oy, self.source.width() * s, self.source.height() * s), self.source,
                     Qt.IgnoreAspectRatio)
        painter.end()
        self.pixmap = pixmap
        self.sync()

    def _scale(self) -> tuple[float, float, float]:
        s = min(self.width() / max(1.0, self.source.width()), self.height() / max(1.0, self.source.height()))
        ox = (self.width() - self.source.width() * s) / 2
        oy = (self.height() - self.source.height() * s) / 2
        return s, ox, oy

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(255, 255, 255, 230))
        painter.setPen(QPen(QColor("#9ca3af"), 1))
        painter.drawRect(self.rect().adjusted(0, 0, -1, -1))
        if self.pixmap is None:
            return
        painter.drawPixmap(0, 0, self.pixmap)
        s, ox, oy = self._scale()
        visible = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
        r = QRectF(ox + (visible.left() - self.source.left()) * s, oy + (visible.top() - self.source.top()) * s,
                   visible.width() * s, visible.height() * s)
        painter.setPen(QPen(QColor("#c62828"), 1.5))
        painter.setBrush(QColor(198, 40, 40, 30))
        painter.drawRect(r.intersected(QRectF(self.rect())))

    def _jump(self, pos) -> None:
        s, ox, oy = self._scale()
        if s > 0:
            self.view.centerOn(QPointF(self.source.left() + (pos.x() - ox) / s, self.source.top() + (pos.y() - oy) / s))

    def mousePressEvent(self, event) -> None:
        self._jump(event.position())

    def mouseMoveEvent(self, event) -> None:
        self._jump(event.position())


class GraphView(QGraphicsView):
    """Zoom (wheel, +/-), pan (drag), fit (F), zoom to selection (Z), context menu."""

    sigDetachRequested = Signal(str)
    sigGradcheckRequested = Signal(str)

    def __init__(self, scene: GraphScene, parent=None) -> None:
        super().__init__(scene, parent)
        self.setRenderHints(QPainter.Antialiasing | QPainter.TextAntialiasing)
        self.setDragMode(QGraphicsView.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.SmartViewportUpdate)
        self.setCacheMode(QGraphicsView.CacheBackground)
        self.setOptimizationFlag(QGraphicsView.DontSavePainterState, True)
        self.setMinimumSize(300, 200)
        self.message = ""
        self.overview = Overview(self)
        # the zoom and fit keys (F, Z, Ctrl +/-) belong to the window's View menu: the same keys
        # here as well would make Qt refuse both as ambiguous

    def set_overview_enabled(self, enabled: bool) -> None:
        self.overview.enabled = enabled
        self.overview.sync()

    def set_message(self, text: str) -> None:
        """A note drawn in the middle of an empty canvas (a run that failed before any op)."""
        self.message = text
        self.viewport().update()

    def drawForeground(self, painter, rect) -> None:
        super().drawForeground(painter, rect)
        if not self.message or any(item.isVisible() for item in self.scene().node_items.values()):
            return
        painter.save()
        painter.resetTransform()
        area = QRectF(self.viewport().rect()).adjusted(40, 40, -40, -40)
        painter.setPen(QColor("#7f1d1d"))
        painter.setFont(QFont("DejaVu Sans", 11))
        painter.drawText(area, Qt.AlignCenter | Qt.TextWordWrap, self.message)
        painter.restore()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        # a fifth of the canvas at most: on a small window the overview must not hide the graph
        width = int(max(90, min(170, self.viewport().width() * 0.2)))
        if width != self.overview.width():
            self.overview.setFixedSize(width, int(width * 0.7))
            self.overview.pixmap = None
            self.overview.schedule()
        self.overview.move(self.viewport().width() - self.overview.width() - 8,
                           self.viewport().height() - self.overview.height() - 8)
        self.overview.sync()

    def wheelEvent(self, event) -> None:
        factor = 1.15 if event.angleDelta().y() > 0 else 1 / 1.15
        self.zoom(factor)

    def zoom(self, factor: float) -> None:
        scale = self.transform().m11() * factor
        if 0.02 <= scale <= 6:
            self.scale(factor, factor)

    #: the smallest zoom the window picks by itself: node names can still be read
    READABLE_ZOOM = 0.55

    def fit(self) -> None:
        """Show every node shown at the cursor (View > Fit to window)."""
        scene = self.scene()
        visible = [i for i in scene.node_items.values() if i.isVisible()]
        rect = visible[0].sceneBoundingRect() if visible else scene.sceneRect()
        for item in visible[1:]:
            rect = rect.united(item.sceneBoundingRect())
        self.fitInView(rect.adjusted(-40, -40, 40, 40), Qt.KeepAspectRatio)
        if self.transform().m11() > 1.4:  # a tiny graph: do not blow it up
            self.resetTransform()
            self.scale(1.4, 1.4)
            self.centerOn(rect.center())

    def fit_readable(self) -> None:
        """What the window shows by itself after opening or finishing a run: the whole graph if
        it fits at a zoom where node names can be read, else that zoom around the newest node
        (where the run is; the overview in the corner shows the rest, F fits it all)."""
        self.fit()
        if self.transform().m11() >= self.READABLE_ZOOM:
            return
        visible = [i for i in self.scene().node_items.values() if i.isVisible()]
        self.resetTransform()
        self.scale(self.READABLE_ZOOM, self.READABLE_ZOOM)
        if visible:  # the newest node in the lower part of the view, what led to it above
            newest = max(visible, key=lambda i: i.node.born).pos()
            height = self.viewport().height() / self.READABLE_ZOOM
            self.centerOn(QPointF(newest.x(), newest.y() - height * 0.25))

    def zoom_to_selection(self) -> None:
        items = self.scene().selectedItems()
        if items:
            rect = items[0].sceneBoundingRect()
            for item in items[1:]:
                rect = rect.united(item.sceneBoundingRect())
            self.fitInView(rect.adjusted(-200, -150, 200, 150), Qt.KeepAspectRatio)

    def center_on_node(self, node_id: str) -> None:
        item = self.scene().node_items.get(node_id)
        if item is not None:
            self.centerOn(item)

    def contextMenuEvent(self, event) -> None:
        item = self.itemAt(event.pos())
        if not isinstance(item, NodeItem):
            return
        node = item.node
        menu = QMenu(self)
        specs = []
        run = self.scene().run
        if node.kind == "op" and run is not None:
            oid = next((op["oid"] for _, op in run.ops if op.get("grad_fn") == node.ref), None)
            if oid is not None:
                specs.append((f"Detach here (op {oid}: {node.title})", f"op:{oid}"))
        if node.module:
            specs.append((f"Detach output of module {node.module}", node.module))
        if node.line is not None:
            specs.append((f"Detach every result of line {node.line}", f"line:{node.line}"))
        for text, spec in specs:
            menu.addAction(text, lambda s=spec: self.sigDetachRequested.emit(s))
        if node.kind in ("param", "input_grad") and run is not None and run.tensor_name(node.ref):
            name = run.tensor_name(node.ref)
            menu.addAction(f"Check the gradient of {name} (finite differences, float64)",
                           lambda n=name: self.sigGradcheckRequested.emit(n))
        if not menu.isEmpty():
            menu.exec(event.globalPos())
