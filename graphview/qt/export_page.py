"""ExportPage: the layout of an exported picture: a caption on top, the graph, the legend below.

Everything is in scene units (a pixel of the canvas at 100 %). :mod:`graphview.qt.export` maps
a unit to a pixel of a PNG, a user unit of an SVG or a point of a PDF, and paints the page with
:meth:`ExportPage.paint`. The legend's entries are :func:`graphview.qt.widgets.legend.legend_entries`,
drawn with the canvas legend's own :func:`~graphview.qt.widgets.legend.paint_swatch`.

The page is in one theme: the caption and legend bands take the graph's background and the
canvas colours it is drawn in (a dark graph between white bands was the dark theme's export).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QGraphicsScene

from graphview.qt.canvas.style import CanvasColors, colors as canvas_colors
from graphview.qt.widgets.legend import LEGEND, LegendEntry, legend_entries, paint_swatch

MARGIN = 16.0
MIN_WIDTH = 640.0  # with a caption or a legend: narrow graphs (a chain of nodes) get room for them
CELL_GAP, SWATCH_GAP, ROW_GAP = 16.0, 5.0, 6.0
CAPTION_FONT = QFont("DejaVu Sans", 10)
LEGEND_FONT = QFont("DejaVu Sans", 8)


@dataclass(frozen=True)
class LegendCell:
    entry: LegendEntry
    swatch: QRectF
    text: QRectF


class ExportPage:
    """Where the caption, the graph (``source``, a rectangle of the scene) and the legend go."""

    def __init__(self, source: QRectF, caption: str = "", legend: bool = True, colors: CanvasColors | None = None,
                 width: float | None = None) -> None:
        self.source = QRectF(source)
        self.caption = caption
        self.colors = colors or canvas_colors()
        self.entries = legend_entries(self.colors)
        self.width = max(source.width(), MIN_WIDTH) if caption or legend else source.width()
        if width is not None:  # the pages of one PDF: all as wide as the widest part
            self.width = max(self.width, width)
        inner = self.width - 2 * MARGIN
        self.caption_rect = QRectF()
        if caption:
            text = QFontMetricsF(CAPTION_FONT).boundingRect(QRectF(0, 0, inner, 1e6), Qt.TextWordWrap, caption)
            self.caption_rect = QRectF(MARGIN, MARGIN, inner, text.height())
        self.caption_height = self.caption_rect.bottom() + MARGIN / 2 if caption else 0.0
        self.graph_rect = QRectF((self.width - source.width()) / 2, self.caption_height,
                                 source.width(), source.height())
        self.cells: list[LegendCell] = []
        self.legend_height = 0.0
        if legend:
            self._lay_out_legend(self.graph_rect.bottom() + MARGIN / 2, inner)
        self.height = self.graph_rect.bottom() + self.legend_height

    def _lay_out_legend(self, top: float, inner: float) -> None:
        """Cells left to right, wrapped like the canvas legend; ``legend_height`` is what they take."""
        fm = QFontMetricsF(LEGEND_FONT)
        line = max(fm.height(), max(e.swatch_size().height() for e in LEGEND))
        x, y = MARGIN, top + MARGIN / 2
        for entry in self.entries:
            size = entry.swatch_size()
            width = size.width() + SWATCH_GAP + fm.horizontalAdvance(entry.text)
            if x > MARGIN and x + width > MARGIN + inner:
                x, y = MARGIN, y + line + ROW_GAP
            swatch = QRectF(x, y + (line - size.height()) / 2, size.width(), size.height())
            text = QRectF(swatch.right() + SWATCH_GAP, y, width - size.width() - SWATCH_GAP, line)
            self.cells.append(LegendCell(entry, swatch, text))
            x += width + CELL_GAP
        self.legend_top = top
        self.legend_height = y + line + MARGIN - (top - MARGIN / 2)

    def rect(self) -> QRectF:
        return QRectF(0, 0, self.width, self.height)

    def paint(self, painter: QPainter, scene: QGraphicsScene) -> None:
        """Paint the page at the painter's origin, one scene unit per painter unit."""
        c = self.colors
        painter.fillRect(self.rect(), c.q("background"))
        if self.caption:
            painter.setFont(CAPTION_FONT)
            painter.setPen(c.q("title"))
            painter.drawText(self.caption_rect, Qt.TextWordWrap | Qt.AlignLeft | Qt.AlignTop, self.caption)
        # the canvas's background across the whole band, also where the page is wider than the graph
        painter.fillRect(QRectF(0, self.graph_rect.top(), self.width, self.graph_rect.height()), scene.backgroundBrush())
        painter.save()
        # only the graph's band: a part of a tall graph (a page of a PDF) ends where its page's band does
        painter.setClipRect(QRectF(0, self.graph_rect.top(), self.width, self.graph_rect.height()), Qt.IntersectClip)
        scene.render(painter, self.graph_rect, self.source)
        painter.restore()
        if self.cells:
            painter.setPen(QPen(c.q("group_border"), 1))
            painter.drawLine(QPointF(MARGIN, self.legend_top), QPointF(self.width - MARGIN, self.legend_top))
            painter.setFont(LEGEND_FONT)
            for cell in self.cells:
                paint_swatch(painter, cell.swatch, cell.entry)
                painter.setPen(c.q("subtitle"))
                painter.drawText(cell.text, Qt.AlignLeft | Qt.AlignVCenter, cell.entry.text)
