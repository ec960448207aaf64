"""The legend: what the canvas's fills, borders, badges and arrows mean.

:data:`LEGEND` is the one list of entries. The :class:`Legend` widget below the canvas shows it,
and exported pictures (:mod:`graphview.qt.export_page`) draw the same entries with the same
:func:`paint_swatch`, so the two cannot differ.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QWidget

from graphview.core.drawing import NODE_KINDS
from graphview.qt.canvas.style import BORDER, FILL, FREED_FILL, RUNNING, TENSOR_KINDS
from graphview.qt.widgets.flow_layout import FlowLayout

SWATCH = 14.0  # a node swatch is SWATCH square; an arrow swatch is twice as wide
TEXT_COLOR = QColor("#374151")


@dataclass(frozen=True)
class LegendEntry:
    """One entry: a swatch and the words beside it.

    ``shape`` is ``"pill"`` (a tensor), ``"box"`` (an autograd node or a node state),
    ``"badge"`` (a rounded tag with ``word`` in it) or ``"arrow"`` (an edge).
    """

    text: str
    fill: QColor
    border: QColor
    shape: str = "box"
    dashed: bool = False
    width: float = 1.5
    word: str = ""
    tooltip: str = ""

    def swatch_size(self) -> QSize:
        if self.shape == "arrow":
            return QSize(int(SWATCH * 2), int(SWATCH))
        if self.shape == "badge":
            return QSize(int(SWATCH * 2.6), int(SWATCH))
        return QSize(int(SWATCH), int(SWATCH))


def _node_entries() -> list[LegendEntry]:
    return [LegendEntry(text, FILL[kind], BORDER[kind], "pill" if kind in TENSOR_KINDS else "box",
                        dashed=kind == "detached")
            for kind, text in NODE_KINDS.items()]


#: every entry, in the order the legend shows them: node kinds, node states, badges, edge kinds
LEGEND: tuple[LegendEntry, ...] = (
    *_node_entries(),
    LegendEntry("running now (backward)", QColor("#ffd59e"), RUNNING, width=2),
    LegendEntry("where the error happened", QColor("#f7d4d4"), QColor("#c62828"), width=2),
    LegendEntry("freed by backward", FREED_FILL, QColor("#bdbdbd"), dashed=True),
    LegendEntry("kept alive, not on the loss's path", QColor(219, 234, 254, 102), QColor(37, 99, 235, 102),
                tooltip="alive, but on no path from the loss: backward will not run it"),
    LegendEntry("bytes held for backward", QColor("#fff1c4"), QColor("#b8860b"), "badge", width=1, word="saved"),
    # the arrows' pens are EdgeItem's (graphview.qt.canvas.edges)
    LegendEntry("forward data flow", QColor("#7d8590"), QColor("#7d8590"), "arrow", width=1.4,
                tooltip="arrows follow the forward data flow: backward runs against them"),
    LegendEntry("leaf → AccumulateGrad", QColor("#6a4bb0"), QColor("#6a4bb0"), "arrow", width=1.4,
                tooltip="a leaf tensor into the AccumulateGrad node that adds into its .grad"),
    LegendEntry("no gradient flows", QColor("#7d8590"), QColor("#7d8590"), "arrow", dashed=True, width=1.4,
                tooltip="an input that does not require grad, a detach, or an op run without grad"),
)


def paint_swatch(painter: QPainter, rect: QRectF, entry: LegendEntry) -> None:
    """Draw ``entry``'s swatch into ``rect`` (its :meth:`~LegendEntry.swatch_size`)."""
    painter.save()
    painter.setRenderHint(QPainter.Antialiasing)
    pen = QPen(entry.border, entry.width, Qt.DashLine if entry.dashed else Qt.SolidLine)
    if entry.shape == "arrow":
        y = rect.center().y()
        tip = QPointF(rect.right() - 1, y)
        painter.setPen(pen)
        painter.drawLine(QPointF(rect.left() + 1, y), tip - QPointF(5, 0))
        painter.setPen(Qt.NoPen)
        painter.setBrush(entry.fill)
        painter.drawPolygon(QPolygonF([tip, tip - QPointF(7, 3.5), tip - QPointF(7, -3.5)]))
    else:
        inner = rect.adjusted(entry.width / 2, entry.width / 2, -entry.width / 2, -entry.width / 2)
        radius = inner.height() / 2 if entry.shape in ("pill", "badge") else 2.0
        painter.setPen(pen)
        painter.setBrush(entry.fill)
        painter.drawRoundedRect(inner, radius, radius)
        if entry.word:
            font = QFont("DejaVu Sans", 6)
            font.setBold(True)
            painter.setFont(font)
            painter.setPen(entry.border.darker(130))
            painter.drawText(inner, Qt.AlignCenter, entry.word)
    painter.restore()


class Swatch(QWidget):
    """One entry's swatch, painted by :func:`paint_swatch`."""

    def __init__(self, entry: LegendEntry, parent=None) -> None:
        super().__init__(parent)
        self.entry = entry
        self.setFixedSize(entry.swatch_size())
        if entry.tooltip:
            self.setToolTip(entry.tooltip)

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        paint_swatch(painter, QRectF(self.rect()), self.entry)
        painter.end()


class Legend(QWidget):
    """Every entry of :data:`LEGEND` in a line that wraps with the window's width."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        layout = FlowLayout(self, spacing=12)
        layout.setContentsMargins(6, 2, 6, 2)
        for entry in LEGEND:  # a swatch and its words stay together when the legend wraps
            cell = QWidget()
            pair = QHBoxLayout(cell)
            pair.setContentsMargins(0, 0, 0, 0)
            pair.setSpacing(4)
            pair.addWidget(Swatch(entry))
            label = QLabel(entry.text)
            label.setStyleSheet(f"color:{TEXT_COLOR.name()}")
            if entry.tooltip:
                label.setToolTip(entry.tooltip)
            pair.addWidget(label)
            layout.addWidget(cell)
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Preferred)
