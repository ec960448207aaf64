"""PulseItem: a gradient travelling backwards along an edge while backward is animated."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QFont, QFontMetricsF, QPen
from PySide6.QtWidgets import QGraphicsObject

from graphview.qt.canvas.edges import EdgeItem
from graphview.qt.canvas.style import colors


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
        c = colors()
        painter.setPen(QPen(c.q("pulse_border"), 1.5))
        painter.setBrush(c.q("pulse_fill"))
        painter.drawEllipse(QPointF(0, 0), 8, 8)
        if self.text:  # the gradient it carries, on a label that stays readable over edges
            painter.setFont(self.FONT)
            fm = QFontMetricsF(self.FONT)
            text = fm.elidedText(self.text, Qt.ElideRight, 160)
            label = QRectF(12, -10, fm.horizontalAdvance(text) + 10, 20)
            painter.setPen(QPen(c.q("pulse_label_border"), 1))
            painter.setBrush(c.q("pulse_label_fill"))
            painter.drawRoundedRect(label, 6, 6)
            painter.setPen(c.q("pulse_label_text"))
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
