"""NodeItem: one drawn node (a box for autograd nodes, a pill for tensors) with its badges."""

from __future__ import annotations

import math
import re

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPen, QPolygonF
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from graphview.core.drawing import NODE_KINDS, DrawNode
from graphview.qt.canvas.ring_clear import clip_marks
from graphview.qt.canvas.style import NAME_PT, NODE_H, NODE_W, SMALLEST_TEXT_PT, TENSOR_KINDS, colors, stacking
from graphview.qt.formatting import elided, short_bytes, short_value
from graphview.qt.plain import esc


#: where the saved-bytes badge starts, right of the top centre where edges end in arrowheads (left
#: of it, mirrored, where arrows come in from the right alone), at the least
SAVED_BADGE_LEFT = 8.0
#: an arrowhead's length, and the half of its angle (radians)
ARROWHEAD, ARROWHEAD_HALF_ANGLE = 8.0, 0.45
#: room kept between the saved badge and an arrowhead on its side of the top centre, an arrowhead's
#: length (4.5 units beside a straight arrow's head, 5.3 beside AddmmBackward0's three, read as
#: sitting on them at the zoom a graph opens at)
ARROWHEAD_CLEARANCE = ARROWHEAD
#: room kept between the saved badge and the glow of a running (failed) node or a selected node's
#: ring, which break for it: drawn under it, the glow's colour ran into the badge's
GLOW_BREAK = 2.5
#: how far right of the box a left-aligned badge may reach (a node beside it starts 28 further),
#: and left of it a right-aligned one
BADGE_REACH = 24.0
#: where the gradient badge's centre is, below the box: its top stays 5 units clear of the box's
#: border (at 2.5 it read as touching it at the zoom a graph opens at)
GRAD_BADGE_Y = NODE_H / 2 + 13
#: a node item's bounds around its centre: its box, and its badges (they reach out right or left, and below)
ITEM_BOUNDS = QRectF(-NODE_W / 2 - BADGE_REACH - 1, -NODE_H / 2 - 14, NODE_W + 2 * BADGE_REACH + 2, NODE_H + 38)
#: the band above and below a node's top border that the saved badge takes: an arrow passing
#: through it more than ARRIVAL_SIDE right (left) of the top centre comes in from that side
BADGE_BAND = (-NODE_H / 2 - 12, -NODE_H / 2 + 6)
ARRIVAL_SIDE = 4.0
#: where along the last piece of an arrow's path (a curve, or a line) it is looked at: its second
#: half, where it comes down into the node's top (a point a unit or less below the last)
_LAST_STRETCH = tuple(0.5 + k / 64 for k in range(32))
#: room kept between an arrow passing through the badge's band and a badge moved past it
BADGE_CLEARANCE = 3.0


def _last_stretch(path: QPainterPath) -> list[tuple[float, float]]:
    """Points along the last piece of ``path`` (a cubic curve, or a line), towards its end."""
    n = path.elementCount()
    if n < 2:
        return []
    if n >= 4 and path.elementAt(n - 3).type == QPainterPath.CurveToElement:
        (x0, y0), (x1, y1), (x2, y2), (x3, y3) = ((e.x, e.y) for e in (path.elementAt(k) for k in range(n - 4, n)))
        points = []
        for t in _LAST_STRETCH:
            u = 1 - t
            a, b, c, d = u * u * u, 3 * u * u * t, 3 * u * t * t, t * t * t
            points.append((a * x0 + b * x1 + c * x2 + d * x3, a * y0 + b * y1 + c * y2 + d * y3))
        return points
    start, end = path.elementAt(n - 2), path.elementAt(n - 1)
    return [(start.x + (end.x - start.x) * t, start.y + (end.y - start.y) * t) for t in _LAST_STRETCH]


def arrowhead(path: QPainterPath) -> QPolygonF:
    """The arrowhead at the end of an edge's ``path``: its point, and its two barbs."""
    end = path.pointAtPercent(1.0)
    before = path.pointAtPercent(0.93)
    angle = math.atan2(end.y() - before.y(), end.x() - before.x())
    return QPolygonF([end] + [end - QPointF(math.cos(angle + turn) * ARROWHEAD, math.sin(angle + turn) * ARROWHEAD)
                              for turn in (-ARROWHEAD_HALF_ANGLE, ARROWHEAD_HALF_ANGLE)])


def badge_font() -> QFont:
    """The font of a node's badges (saved bytes, its gradient): not bold, so "saved 1000 MiB"
    fits beside the arrowheads at the smallest size text takes on the canvas."""
    return QFont("DejaVu Sans", SMALLEST_TEXT_PT)


def badge_room(left: float) -> float:
    """The widest text a left-aligned badge starting at ``left`` holds."""
    return NODE_W / 2 + BADGE_REACH - left - 10


def badge_pill(text: str, anchor: QPointF, align: str) -> tuple[str, QRectF]:
    """A badge's text, elided to its room, and its pill: ``anchor`` is its left end, centre or
    right end (``align``)."""
    fm = QFontMetricsF(badge_font())
    room = NODE_W + 10 if align == "center" else badge_room(abs(anchor.x()))
    text = fm.elidedText(text, Qt.ElideRight, room)
    w, h = fm.horizontalAdvance(text) + 10, fm.height() + 2
    left = {"left": anchor.x(), "center": anchor.x() - w / 2}.get(align, anchor.x() - w)
    return text, QRectF(left, anchor.y() - h / 2, w, h)


def title_font(title: str) -> QFont:
    """The font a node's name is drawn in: bold, smaller for a long name (which is elided
    beyond that), never under :data:`SMALLEST_TEXT_PT`."""
    font = QFont("DejaVu Sans", NAME_PT)
    font.setBold(True)
    if QFontMetricsF(font).horizontalAdvance(title) > NODE_W - 14:
        font.setPointSizeF(SMALLEST_TEXT_PT)
    return font
#: a gradient's text that holds a NaN or an Inf ("[nan, 0]", "norm inf")
_NON_FINITE = re.compile(r"\b(nan|inf)\b", re.IGNORECASE)


class NodeItem(QGraphicsItem):
    """One drawn node: a box for autograd nodes, a pill for tensors."""

    def __init__(self, node: DrawNode) -> None:
        super().__init__()
        self.setFlag(QGraphicsItem.ItemIsSelectable, True)
        self.setAcceptHoverEvents(True)
        self.setCursor(Qt.PointingHandCursor)
        self.bind(node)

    def bind(self, node: DrawNode) -> None:
        """Show ``node``, as a new item would (an item a big scene took away is used again)."""
        self.node = node
        self.setZValue(stacking(2, node.id))
        self.state = "live"  # live | running | done | freed | error | unreachable
        self.kind = node.kind
        self.saved = 0
        #: where the saved badge is: left of the top centre or right of it, and how far from it its
        #: nearer end is (see :meth:`badge_place`)
        self.badge_spot = (False, SAVED_BADGE_LEFT)
        self.grad: str | None = None  # a tensor: its .grad as text; an autograd node: its NaN/Inf note
        self.setPos(node.x, node.y)
        self._tooltip()
        self.update()

    def _tooltip(self) -> None:
        n = self.node
        # names, ops and module paths come from the trace: escaped (graphview.qt.plain)
        parts = [f"<b>{esc(n.title)}</b>", esc(n.subtitle), esc(NODE_KINDS.get(self.kind, self.kind))]
        if n.module:
            parts.append(f"module {esc(n.module)}")
        self.setToolTip("<qt>" + "<br>".join(p for p in parts if p) + "</qt>")

    def boundingRect(self) -> QRectF:
        return QRectF(ITEM_BOUNDS)

    def drawn_rect(self) -> QRectF:
        """What the item paints now, in its coordinates: its box with the glow or ring around it,
        and the badges it has (its bounds keep room for badges it may not have: 38 units more
        down, for a fit that showed every row whole that left its last row out of view)."""
        ring = 9 if self.isSelected() else 7 if self.state in ("running", "error") else 1.5
        rect = QRectF(-NODE_W / 2 - ring, -NODE_H / 2 - ring, NODE_W + 2 * ring, NODE_H + 2 * ring)
        if self.saved > 0:
            rect = rect.united(self.saved_badge()[1].adjusted(-1, -1, 1, 1))
        if self.grad is not None:
            text = f"grad {self.grad}" if self.kind in TENSOR_KINDS else self.grad
            rect = rect.united(badge_pill(text, QPointF(0, GRAD_BADGE_Y), "center")[1].adjusted(-1, -1, 1, 1))
        return rect

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
        c = colors()
        if self.state == "freed":
            return c.q("freed_fill")
        if self.state == "running":
            return c.q("running_fill")
        return c.fill_of(self.kind)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        if self.state == "unreachable":  # alive, but backward will never run it: dimmed
            painter.setOpacity(0.38)
        rect = QRectF(-NODE_W / 2, -NODE_H / 2, NODE_W, NODE_H)
        badge = lod >= 0.35 and self.saved > 0
        if badge:
            # beside the top centre, where arrows end: the badge never covers an arrowhead, nor
            # (where it has the room) the arrows coming in (one from the right ran under it)
            spot = self.badge_place()
            if spot != self.badge_spot:  # an arrow came or went: all of the item again, not the part painted now
                self.badge_spot = spot
                self.update()
        self._paint_box(painter, rect, self.saved_badge()[1] if badge else None)
        if lod < 0.35:
            return
        self._paint_text(painter)
        c = colors()
        if badge:
            anchor, align = self._saved_anchor()
            self._badge(painter, f"saved {short_bytes(self.saved)}", anchor, c.q("saved_fill"), c.q("saved_border"),
                        c.q("saved_text"), align=align)
        if self.grad is not None and self.kind in TENSOR_KINDS:
            if _NON_FINITE.search(self.grad):  # a NaN or Inf in .grad: not drawn as a healthy gradient
                fill, border, text = c.q("error_fill"), c.q("error_border"), c.q("error_border")
            elif self.grad == "None":  # read by the script, and None: no gradient at all
                fill, border, text = c.q("freed_fill"), c.q("freed_border"), c.q("subtitle")
            else:
                fill, border, text = c.q("grad_fill"), c.q("grad_border"), c.q("grad_text")
            self._badge(painter, f"grad {self.grad}", QPointF(0, GRAD_BADGE_Y), fill, border, text, align="center")
        elif self.grad is not None:  # an autograd node that sent NaN or Inf on (see Run.non_finite_out)
            self._badge(painter, self.grad, QPointF(0, GRAD_BADGE_Y), c.q("error_fill"), c.q("error_border"),
                        c.q("error_border"), align="center")

    @property
    def badge_left(self) -> bool:
        """Whether the saved badge is drawn left of the top centre."""
        return self.badge_spot[0]

    def badge_place(self) -> tuple[bool, float]:
        """Where the saved badge goes (as :attr:`badge_spot`): right of the top centre, or left of
        it where the arrows shown come in from the right alone; with arrows on both sides, on the
        side where they pass nearer the centre, moved past them where its text keeps its room."""
        (left, right), heads = self.arrivals()
        if not right or not left:
            side = bool(right)
            return side, max(SAVED_BADGE_LEFT, heads[0 if side else 1] + ARROWHEAD_CLEARANCE)
        side = left < right
        least = max(SAVED_BADGE_LEFT, heads[0 if side else 1] + ARROWHEAD_CLEARANCE)
        near = min(left, right) + BADGE_CLEARANCE
        text = f"saved {short_bytes(self.saved)}"
        if near > least and QFontMetricsF(badge_font()).horizontalAdvance(text) <= badge_room(near):
            return side, near
        return side, least

    def arrivals(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """How far left, and right, of the top centre the arrows shown coming into the node's top
        pass through the saved badge's band (:data:`BADGE_BAND`) at most (0: none on that side);
        and how far left, and right, of it their arrowheads reach (0: none)."""
        scene = self.scene()
        into = getattr(scene, "edges_into", None)
        left = right = 0.0
        heads = [0.0, 0.0]
        if into is None:
            return (left, right), (0.0, 0.0)
        for edge in into(self.node.id):
            if not edge.isVisible() or edge.target is not self:
                continue
            centre = edge.mapFromScene(self.pos())
            for point in edge.head():
                off = point.x() - centre.x()
                heads[0], heads[1] = max(heads[0], -off), max(heads[1], off)
            top, bottom = centre.y() + BADGE_BAND[0], centre.y() + BADGE_BAND[1]
            for x, y in _last_stretch(edge.path()):  # (worked out here: a paint asks, and a path's
                if top <= y <= bottom:               # pointAtPercent measures all of it each time)
                    off = x - centre.x()
                    if off > ARRIVAL_SIDE:
                        right = max(right, off)
                    elif off < -ARRIVAL_SIDE:
                        left = max(left, -off)
        return (left, right), (heads[0], heads[1])

    def _paint_box(self, painter: QPainter, rect: QRectF, badge: QRectF | None = None) -> None:
        """The box (or pill) in its kind's colours, with a glow when running or failed and a ring
        when selected; those break around the saved badge's pill ``badge`` (GLOW_BREAK)."""
        c = colors()
        pen = QPen(c.border_of(self.kind), 1.4)
        if self.kind in ("detached",):
            pen.setStyle(Qt.DashLine)
        if self.state == "freed":
            pen = QPen(c.q("freed_border"), 1.2, Qt.DashLine)
        painter.save()
        if self.state in ("running", "error") or self.isSelected():  # (the marks break round the badge, boxes' names)
            cut = QPainterPath()
            if badge is not None:
                cut.addRoundedRect(badge.adjusted(-GLOW_BREAK, -GLOW_BREAK, GLOW_BREAK, GLOW_BREAK),
                                   badge.height() / 2 + GLOW_BREAK, badge.height() / 2 + GLOW_BREAK)
            clip_marks(painter, self, ITEM_BOUNDS, rect.adjusted(-11, -11, 11, 11), cut)
        if self.state == "running":
            painter.setPen(Qt.NoPen)
            painter.setBrush(c.q("running_glow"))
            painter.drawRoundedRect(rect.adjusted(-7, -7, 7, 7), 14, 14)
            pen = QPen(c.q("running_border"), 3)
        if self.state == "error":
            painter.setPen(Qt.NoPen)
            painter.setBrush(c.q("error_glow"))
            painter.drawRoundedRect(rect.adjusted(-7, -7, 7, 7), 14, 14)
            pen = QPen(c.q("error_border"), 3)
        if self.isSelected():
            # a blue ring outside; a running or failing node keeps its own border inside it
            painter.setPen(QPen(c.q("selection"), 2.5))
            painter.setBrush(Qt.NoBrush if self.state in ("running", "error") else c.q("selection_fill"))
            painter.drawRoundedRect(rect.adjusted(-9, -9, 9, 9), 15, 15)
            if self.state not in ("running", "error"):
                pen = QPen(c.q("selection"), 3)
        painter.restore()  # (the box itself is whole: the badge is drawn over its border)
        painter.setPen(pen)
        painter.setBrush(self.fill_color())
        radius = NODE_H / 2 if self.kind in TENSOR_KINDS else 8
        painter.drawRoundedRect(rect, radius, radius)

    def _paint_text(self, painter: QPainter) -> None:
        """The title and subtitle, shrunk or elided to fit the box."""
        c = colors()
        painter.setPen(c.q("freed_text") if self.state == "freed" else c.q("title"))
        title = self.node.title
        font = title_font(title)  # long names: a smaller font before eliding
        painter.setFont(font)
        # names shorten at word boundaries: a dotted one from the left (…layers.0.linear1.weight),
        # an op name in the middle (Native…NormBackward0)
        title = elided(title, font, NODE_W - 14)
        painter.drawText(QRectF(-NODE_W / 2 + 6, -NODE_H / 2 + 4, NODE_W - 12, 20), Qt.AlignCenter, title)
        sub_font = QFont("DejaVu Sans", SMALLEST_TEXT_PT)
        painter.setFont(sub_font)
        sub = elided(self.node.subtitle, sub_font, NODE_W - 14)
        painter.setPen(c.q("freed_text") if self.state == "freed" else c.q("subtitle"))
        painter.drawText(QRectF(-NODE_W / 2 + 6, 0, NODE_W - 12, 18), Qt.AlignCenter, sub)

    def saved_badge(self) -> tuple[str, QRectF]:
        """The saved badge's text and its pill, in the item's coordinates, on the side it is drawn
        on now (:attr:`badge_spot`)."""
        return badge_pill(f"saved {short_bytes(self.saved)}", *self._saved_anchor())

    def _saved_anchor(self) -> tuple[QPointF, str]:
        left, near = self.badge_spot
        if left:
            return QPointF(-near, -NODE_H / 2 - 2), "right"
        return QPointF(near, -NODE_H / 2 - 2), "left"

    @staticmethod
    def _badge(painter: QPainter, text: str, anchor: QPointF, fill: QColor, edge: QColor, ink: QColor,
               align: str = "right") -> None:
        """A pill with ``text``; ``anchor`` is its left end, centre or right end (``align``)."""
        painter.setFont(badge_font())
        text, rect = badge_pill(text, anchor, align)
        h = rect.height()
        painter.setPen(QPen(edge, 1))
        painter.setBrush(fill)
        painter.drawRoundedRect(rect, h / 2, h / 2)
        painter.setPen(ink)
        painter.drawText(rect, Qt.AlignCenter, text)
