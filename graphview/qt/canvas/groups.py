"""Module boxes: GroupItem draws the nodes of one nn.Module call in a dashed box; split_calls finds the calls."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QFont, QFontMetricsF, QPen
from PySide6.QtWidgets import QGraphicsObject

from graphview.core.drawing import LAYER_HEIGHT
from graphview.qt.canvas.style import NODE_H, NODE_W, colors


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
        c = colors()
        if self.collapsed:
            painter.setPen(QPen(c.q("collapsed_border"), 1.6))
            painter.setBrush(c.q("collapsed_fill"))
            painter.drawRoundedRect(self.rect, 8, 8)
            painter.setPen(c.q("collapsed_text"))
            font = QFont("DejaVu Sans", 9)
            font.setBold(True)
            painter.setFont(font)
            painter.drawText(self.rect.adjusted(6, 4, -6, -self.rect.height() / 2), Qt.AlignCenter,
                             QFontMetricsF(font).elidedText(f"▸ {self.path}", Qt.ElideMiddle, self.rect.width() - 12))
            painter.setFont(QFont("DejaVu Sans", 8))
            painter.drawText(self.rect.adjusted(6, self.rect.height() / 2, -6, -4), Qt.AlignCenter,
                             f"{self.members} nodes (collapsed)")
            return
        painter.setPen(QPen(c.q("group_border"), 1, Qt.DashLine))
        painter.setBrush(Qt.NoBrush)  # outline only: translucent fills of big boxes make panning slow
        painter.drawRoundedRect(self.rect, 10, 10)
        if option.levelOfDetailFromTransform(painter.worldTransform()) > 0.3:
            label = self.label_rect()
            painter.setPen(Qt.NoPen)
            painter.setBrush(c.q("background"))  # the scene's background: the border breaks for the name
            painter.drawRect(label)
            painter.setPen(c.q("group_label"))
            painter.setFont(self.LABEL_FONT)
            painter.drawText(label, Qt.AlignCenter,
                             QFontMetricsF(self.LABEL_FONT).elidedText(self.path, Qt.ElideLeft, label.width() - 4))

    def mouseDoubleClickEvent(self, event) -> None:
        self.collapsed = not self.collapsed
        self.sigToggled.emit(self.path)


def split_calls(items: list) -> list[list]:
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
