"""FlowLayout: items left to right, wrapped onto more rows when the width runs out."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout


class FlowLayout(QLayout):
    """Lays its items out left to right and wraps them onto more rows when the width runs out
    (Qt's flow layout example), so the legend never forces the window wider than the screen."""

    def __init__(self, parent=None, spacing: int = 4, row_spacing: int = 1) -> None:
        super().__init__(parent)
        self._items: list = []
        self._spacing, self._row_spacing = spacing, row_spacing

    def addItem(self, item) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int):
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int):
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self):
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._arrange(QRect(0, 0, width, 0), apply=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, apply=True)

    def sizeHint(self) -> QSize:
        return self.minimumSize()

    def minimumSize(self) -> QSize:
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def rows(self, widths: list[int], width: int) -> int:
        """How many rows items ``widths`` wide take in a layout ``width`` wide (margins included)."""
        margins = self.contentsMargins()
        room = width - margins.left() - margins.right()
        x, rows = 0, 1 if widths else 0
        for w in widths:
            if x > 0 and x + w > room:
                x, rows = 0, rows + 1
            x += w + self._spacing
        return rows

    def _arrange(self, rect: QRect, apply: bool) -> int:
        margins = self.contentsMargins()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        x, y, row_height = area.x(), area.y(), 0
        for item in self._items:
            if item.isEmpty():  # a hidden widget takes no room (the legend's entries that did not fit)
                continue
            hint = item.sizeHint()
            if x + hint.width() > area.right() + 1 and row_height > 0:
                x, y = area.x(), y + row_height + self._row_spacing
                row_height = 0
            if apply:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self._spacing
            row_height = max(row_height, hint.height())
        return y + row_height - rect.y() + margins.bottom()
