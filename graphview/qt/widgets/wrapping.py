"""Lists whose lines wrap at the list's width instead of scrolling sideways.

At 1366x768 the Diagnostics and Grad ledger tabs are a column about 310 px wide: their lines (a
pitfall's title, ``step 2: .grad += tensor([...])``) ran past it behind a horizontal scroll bar.
:func:`wrap_lines` makes a ``QTreeWidget`` wrap them: the first column takes the width the others
leave, every line wraps within it, and there is no horizontal scroll bar.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPointF, QSize, Qt
from PySide6.QtGui import QPalette, QTextLayout, QTextOption
from PySide6.QtWidgets import (QAbstractItemView, QApplication, QHeaderView, QStyle, QStyledItemDelegate,
                               QStyleOptionViewItem, QTreeWidget)

PAD = 3  # pixels of room left and right of the words, as Qt's own item views leave


def wrapped(text: str, font, width: float) -> QTextLayout:
    """``text`` laid out in lines at most ``width`` wide: broken between words, and inside a word
    (``encoder.layers.0.self_attn.out_proj.weight``) only where it is wider than a line."""
    layout = QTextLayout(text, font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapAtWordBoundaryOrAnywhere)
    layout.setTextOption(option)
    layout.beginLayout()
    y = 0.0
    while True:
        line = layout.createLine()
        if not line.isValid():
            break
        line.setLineWidth(width)
        line.setPosition(QPointF(0, y))
        y += line.height()
    layout.endLayout()
    return layout


class WrappingDelegate(QStyledItemDelegate):
    """Draws an item's words wrapped at its column's width, breaking a long name where it must
    (Qt's own wrapping breaks only between words: a dotted path ran past the column)."""

    def __init__(self, tree: QTreeWidget) -> None:
        super().__init__(tree)
        self.tree = tree

    def _text_width(self, option: QStyleOptionViewItem, index) -> int:
        width = self.tree.header().sectionSize(index.column())
        if index.column() == 0:
            depth, parent = 0, index.parent()
            while parent.isValid():
                depth, parent = depth + 1, parent.parent()
            width -= self.tree.indentation() * (depth + (1 if self.tree.rootIsDecorated() else 0))
        if option.features & QStyleOptionViewItem.HasDecoration:
            width -= option.decorationSize.width() + PAD
        return max(20, width - 2 * PAD)

    def sizeHint(self, option, index) -> QSize:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        text = opt.text
        base = super().sizeHint(option, index)
        if not text:
            return base
        height = wrapped(text, opt.font, self._text_width(opt, index)).boundingRect().height()
        return QSize(base.width(), max(base.height(), int(height + 0.999) + 4))

    def paint(self, painter, option, index) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        text = opt.text
        opt.text = ""
        style = opt.widget.style() if opt.widget is not None else QApplication.style()
        style.drawControl(QStyle.CE_ItemViewItem, opt, painter, opt.widget)  # the row's background, selection, icon
        if not text:
            return
        rect = style.subElementRect(QStyle.SE_ItemViewItemText, opt, opt.widget).adjusted(PAD, 0, -PAD, 0)
        group = QPalette.Normal if opt.state & QStyle.State_Enabled else QPalette.Disabled
        role = QPalette.HighlightedText if opt.state & QStyle.State_Selected else QPalette.Text
        painter.save()
        painter.setFont(opt.font)
        foreground = index.data(Qt.ForegroundRole)
        painter.setPen(foreground.color() if foreground is not None and not opt.state & QStyle.State_Selected
                       else opt.palette.color(group, role))
        layout = wrapped(text, opt.font, rect.width())
        height = layout.boundingRect().height()
        layout.draw(painter, QPointF(rect.left(), rect.top() + max(0.0, (rect.height() - height) / 2)))
        painter.restore()


class _Columns(QObject):
    """Keeps a tree's columns after the first at their share of its width, as it is resized."""

    def __init__(self, tree: QTreeWidget, shares: dict[int, tuple[float, int, int]]) -> None:
        super().__init__(tree)
        self.tree, self.shares = tree, shares
        tree.viewport().installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Resize:
            self.apply(event.size().width())
        return False

    def apply(self, width: int) -> None:
        tree = self.tree
        for column, (share, least, most) in self.shares.items():
            size = max(least, min(most, round(width * share)))
            if tree.header().sectionSize(column) != size:
                tree.header().resizeSection(column, size)
        tree.scheduleDelayedItemsLayout()  # rows as tall as their wrapped lines at the new width


def wrap_lines(tree: QTreeWidget, shares: dict[int, tuple[float, int, int]] | None = None) -> None:
    """Wrap ``tree``'s lines at its width. ``shares``: column -> (share of the width, least, most
    pixels) for each column after the first; the first column stretches over what they leave."""
    tree.setWordWrap(True)
    tree.setUniformRowHeights(False)
    tree.setTextElideMode(Qt.ElideNone)
    tree.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    tree.setHorizontalScrollMode(QAbstractItemView.ScrollPerPixel)
    header = tree.header()
    header.setStretchLastSection(False)
    header.setSectionResizeMode(0, QHeaderView.Stretch)
    for column in range(1, tree.columnCount()):
        header.setSectionResizeMode(column, QHeaderView.Interactive)
    tree.setItemDelegate(WrappingDelegate(tree))
    tree._wrapping = _Columns(tree, dict(shares or {}))  # kept with the tree
    header.sectionResized.connect(lambda *_: tree.scheduleDelayedItemsLayout())  # rows as tall as their lines
    tree._wrapping.apply(tree.viewport().width())
