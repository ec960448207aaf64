"""The legend: what the canvas's fills, borders, badges and arrows mean.

:data:`LEGEND` is the one list of entries. The :class:`Legend` widget below the canvas shows it,
and exported pictures (:mod:`graphview.qt.export_page`) draw the same entries with the same
:func:`paint_swatch`, so the two cannot differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QToolButton, QWidget

from graphview.core.drawing import NODE_KINDS
from graphview.qt import theme as themes
from graphview.qt.canvas.nodes import badge_font
from graphview.qt.canvas.style import LIGHT, TENSOR_KINDS, CanvasColors, colors
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
    ink: QColor | None = None  # the word's colour (the canvas badge's text colour)
    tooltip: str = ""

    def swatch_size(self) -> QSize:
        if self.shape == "arrow":
            return QSize(int(SWATCH * 2), int(SWATCH))
        if self.shape == "badge":  # its word in the canvas's badge font, with the canvas badge's padding
            return QSize(max(int(SWATCH * 2.6), math.ceil(QFontMetricsF(badge_font()).horizontalAdvance(self.word) + 10)),
                         int(SWATCH))
        return QSize(int(SWATCH), int(SWATCH))


def legend_entries(c: CanvasColors | None = None) -> tuple[LegendEntry, ...]:
    """Every entry in the order the legend shows them (node kinds, node states, badges, edge
    kinds), in the canvas colours of theme ``c`` (the one applied now by default)."""
    c = c or colors()
    nodes = [LegendEntry(text, c.fill_of(kind), c.border_of(kind), "pill" if kind in TENSOR_KINDS else "box",
                         dashed=kind == "detached")
             for kind, text in NODE_KINDS.items()]
    return (
        *nodes,
        LegendEntry("running now (backward)", c.q("running_fill"), c.q("running_border"), width=2),
        LegendEntry("where the error happened", c.q("error_fill"), c.q("error_border"), width=2),
        LegendEntry("freed by backward", c.q("freed_fill"), c.q("freed_swatch_border"), dashed=True),
        LegendEntry("kept alive, not on the loss's path", c.q("unreachable_fill"), c.q("unreachable_border"),
                    tooltip="alive, but on no path from the loss: backward will not run it"),
        LegendEntry("bytes held for backward", c.q("saved_fill"), c.q("saved_border"), "badge", width=1, word="saved",
                    ink=c.q("saved_text")),
        # the arrows' pens are EdgeItem's (graphview.qt.canvas.edges)
        LegendEntry("forward data flow", c.q("edge"), c.q("edge"), "arrow", width=1.4,
                    tooltip="arrows follow the forward data flow: backward runs against them; an arrow marked ×2 "
                            "is one tensor given to the op twice (w * w), two entries of its next_functions"),
        LegendEntry("leaf → AccumulateGrad", c.q("edge_accumulate"), c.q("edge_accumulate"), "arrow", width=1.4,
                    tooltip="a leaf tensor into the AccumulateGrad node that adds into its .grad"),
        LegendEntry("no gradient flows", c.q("edge"), c.q("edge"), "arrow", dashed=True, width=1.4,
                    tooltip="an input that does not require grad, a detach, or an op run without grad"),
    )


#: the entries in the light theme's colours (their words are the same in every theme)
LEGEND: tuple[LegendEntry, ...] = legend_entries(LIGHT)


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
        if entry.word:  # as large as the canvas's badges' words (its smallest text), on screen and on paper
            painter.setFont(badge_font())
            painter.setPen(entry.ink or entry.border.darker(130))
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
    """Every legend entry in a line that wraps with the window's width, in the theme's colours.

    The legend takes at most :data:`SHARE` of the height of the widget it sits in (the canvas's
    column), and never less than one row: the entries that do not fit hide behind a "+N more"
    button that shows them all (and a "less" button folds them again). At 800x550 all of them
    took six rows, at 640x400 thirteen: half the canvas."""

    #: the share of its parent's height the folded legend may take
    SHARE = 0.15
    #: ... and the unfolded one (what still does not fit is named in the button's tooltip)
    EXPANDED_SHARE = 0.4

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("legend")  # the theme's stylesheet colours its words (#legend QLabel)
        self.flow = layout = FlowLayout(self, spacing=12)
        layout.setContentsMargins(6, 2, 6, 2)
        self.swatches: list[Swatch] = []
        self.words: list[QLabel] = []
        self.cells: list[QWidget] = []
        self.expanded = False  # the user asked for every entry
        for entry in legend_entries():  # a swatch and its words stay together when the legend wraps
            cell = QWidget()
            pair = QHBoxLayout(cell)
            pair.setContentsMargins(0, 0, 0, 0)
            pair.setSpacing(4)
            swatch = Swatch(entry)
            self.swatches.append(swatch)
            pair.addWidget(swatch)
            label = QLabel(entry.text)
            if entry.tooltip:
                label.setToolTip(entry.tooltip)
            self.words.append(label)
            pair.addWidget(label)
            layout.addWidget(cell)
            self.cells.append(cell)
        self.more = QToolButton()
        self.more.setObjectName("legendMore")
        self.more.setAutoRaise(True)
        self.more.clicked.connect(self.toggle)
        self.more.hide()
        layout.addWidget(self.more)
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Preferred)
        self._watched: QWidget | None = None
        self._fitting = False
        self._height = self.flow.heightForWidth(640)  # until fit() measures it at the legend's width
        themes.changes().changed.connect(self.apply_theme)

    def apply_theme(self, theme: themes.Theme | None = None) -> None:
        """The swatches in the canvas colours of the theme now applied."""
        entries = legend_entries((theme or themes.current()).canvas)
        for swatch, entry in zip(self.swatches, entries):
            swatch.entry = entry
            swatch.update()

    def hidden_entries(self) -> int:
        """How many entries are folded away behind the "more" button."""
        return sum(1 for cell in self.cells if cell.isHidden())

    def toggle(self) -> None:
        """Every entry, or only those that fit the legend's share of the column."""
        self.expanded = not self.expanded
        self.fit()

    def allowed_rows(self, expanded: bool | None = None) -> int:
        """The rows the legend may take: :data:`SHARE` of its parent's height folded,
        :data:`EXPANDED_SHARE` unfolded; at least one."""
        parent = self.parentWidget()
        if parent is None or parent.height() <= 0:
            return 1 << 20
        share = self.EXPANDED_SHARE if (self.expanded if expanded is None else expanded) else self.SHARE
        margins = self.flow.contentsMargins()
        room = parent.height() * share - margins.top() - margins.bottom()
        return max(1, int(room // self._row()))

    def _row(self) -> int:
        return max(cell.sizeHint().height() for cell in self.cells) + 1

    def fit(self) -> None:
        """Show the entries that fit in :meth:`allowed_rows` rows of the legend's width (all when expanded)."""
        if self._fitting:
            return
        self._fitting = True
        try:
            width = self.width() if self.width() > 0 else self.sizeHint().width()
            widths = [cell.sizeHint().width() for cell in self.cells]
            rows = self.allowed_rows()
            shown = len(widths)
            if self.flow.rows(widths, width) <= self.allowed_rows(False):
                button = None  # all fit folded: nothing to unfold
            else:
                self.more.setText(f"+{len(widths)} more ▾")  # the widest it gets: measured with it
                extra = self.more.sizeHint().width()
                while shown > 0 and self.flow.rows(widths[:shown] + [extra], width) > rows:
                    shown -= 1
                button = "less ▴" if self.expanded else f"+{len(widths) - shown} more ▾"
            for k, cell in enumerate(self.cells):
                if cell.isHidden() != (k >= shown):
                    cell.setVisible(k < shown)
            if button is None:
                self.more.hide()
            else:
                self.more.setText(button)
                rest = [entry.text for entry, cell in zip(legend_entries(), self.cells) if cell.isHidden()]
                tip = "show only the entries that fit a line or two" if self.expanded else "show every entry"
                self.more.setToolTip(tip + ("; not shown: " + "; ".join(rest) if rest else ""))
                self.more.show()
            height = self.flow.heightForWidth(width)
            if height != self._height:
                self._height = height
                self.updateGeometry()
        finally:
            self._fitting = False

    # the legend's height is the rows it shows, set by fit() for its width: a height for width
    # worked out by the layout (every entry, before the fold) held a shrinking window taller than asked
    def hasHeightForWidth(self) -> bool:
        return False

    def sizeHint(self) -> QSize:
        return QSize(self.flow.minimumSize().width(), self._height)

    def minimumSizeHint(self) -> QSize:
        # one row: the legend never holds the window taller than asked (it folds to fit)
        margins = self.flow.contentsMargins()
        return QSize(self.flow.minimumSize().width(), min(self._height, self._row() + margins.top() + margins.bottom()))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.fit()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        parent = self.parentWidget()
        if parent is not self._watched:
            if self._watched is not None:
                self._watched.removeEventFilter(self)
            self._watched = parent
            if parent is not None:
                parent.installEventFilter(self)
        self.fit()

    def eventFilter(self, watched, event) -> bool:
        if watched is self._watched and event.type() == QEvent.Resize:
            self.fit()  # the column grew or shrank: so does the legend's share of it
        return super().eventFilter(watched, event)
