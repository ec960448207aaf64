"""The code pane: the script's source with line numbers, the cursor's line and the error line marked.

Long lines wrap at the pane's width, after a dot, a bracket or a comma where a line has no space
(an invisible zero-width space marks each such place; copying and ``toPlainText`` leave them out).
The cursor's line and the error's line are marked on every row they wrap to, numbered on the first."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QTextCursor, QTextFormat
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QWidget

from graphview.core import timeline
from graphview.core.run import Run
from graphview.qt import theme as themes
from graphview.qt.widgets.fonts import MONO


#: an invisible break point: a long line wraps after a dot, a bracket or a comma, not inside a name
_BREAK = "\u200b"
_AFTER = str.maketrans({mark: mark + _BREAK for mark in ".([,"})


def _breakable(source: str) -> str:
    """``source`` with a zero-width space after each dot, opening bracket and comma: a narrow pane
    wraps ``torch.optim.SGD(model.parameters(), lr=0.1)`` at ``model.`` instead of inside
    ``parameters`` (Qt breaks a line with no space in it anywhere)."""
    return source.replace(_BREAK, "").translate(_AFTER)


class _LineNumbers(QWidget):
    def __init__(self, editor: "CodeView") -> None:
        super().__init__(editor)
        self.editor = editor

    def sizeHint(self) -> QSize:
        return QSize(self.editor.number_width(), 0)

    def paintEvent(self, event) -> None:
        self.editor.paint_numbers(event)


class CodeView(QPlainTextEdit):
    """The script's source, the line at the cursor highlighted; a click selects what it created."""

    sigLineClicked = Signal(int)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setFont(MONO)
        self.setMinimumWidth(300)
        self.setLineWrapMode(QPlainTextEdit.WidgetWidth)  # long docstring lines stay readable
        self._numbers = _LineNumbers(self)
        self.blockCountChanged.connect(lambda _: self.setViewportMargins(self.number_width(), 0, 0, 0))
        self.updateRequest.connect(self._scroll_numbers)
        self._run: Run | None = None
        self.current_line: int | None = None
        self.error_line: int | None = None
        self.setViewportMargins(self.number_width(), 0, 0, 0)
        themes.changes().changed.connect(self.apply_theme)

    def apply_theme(self, theme=None) -> None:
        """The theme changed: mark the lines again in its colours (the text follows the palette)."""
        self.highlight(self.current_line, self.error_line, scroll=False)

    def number_width(self) -> int:
        digits = len(str(max(1, self.blockCount())))
        return 14 + self.fontMetrics().horizontalAdvance("9") * max(3, digits)

    def _scroll_numbers(self, rect, dy) -> None:
        if dy:
            self._numbers.scroll(0, dy)
        else:
            self._numbers.update(0, rect.y(), self._numbers.width(), rect.height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        cr = self.contentsRect()
        self._numbers.setGeometry(QRect(cr.left(), cr.top(), self.number_width(), cr.height()))

    def paint_numbers(self, event) -> None:
        painter = QPainter(self._numbers)
        t = themes.current()
        painter.fillRect(event.rect(), QColor(t.gutter))
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        bottom = top + round(self.blockBoundingRect(block).height())
        while block.isValid() and top <= event.rect().bottom():
            number = block.blockNumber() + 1
            if block.isVisible() and bottom >= event.rect().top():
                painter.setPen(QColor(t.error) if number == self.error_line else
                               QColor(t.gutter_current) if number == self.current_line else QColor(t.gutter_text))
                painter.drawText(0, top, self._numbers.width() - 6, self.fontMetrics().height(),
                                 Qt.AlignRight, str(number))
            block = block.next()
            top = bottom
            bottom = top + round(self.blockBoundingRect(block).height())

    def set_run(self, run: Run) -> None:
        self._run = run

    def set_cursor(self, index: int) -> None:
        """Mark the line of the event at ``index`` and the line of an error raised by then."""
        self.highlight(timeline.line_at(self._run, index), timeline.error_line(self._run, index))

    def set_source(self, text: str) -> None:
        self.setPlainText(_breakable(text))
        self.current_line = None
        self.error_line = None

    def highlight(self, line: int | None, error_line: int | None = None, scroll: bool = True) -> None:
        self.current_line, self.error_line = line, error_line
        selections = []
        t = themes.current()
        for number, color in ((error_line, t.code_error), (line, t.code_current)):
            if number is None or number < 1 or number > self.blockCount():
                continue
            selections += self._marks(number, QColor(color), QColor(t.text))
        self.setExtraSelections(selections)
        if scroll and line is not None and 1 <= line <= self.blockCount():
            block = self.document().findBlockByNumber(line - 1)
            end = QTextCursor(block)
            end.movePosition(QTextCursor.EndOfBlock)
            self.setTextCursor(end)  # a long line wraps in a narrow pane: its end in view too...
            self.ensureCursorVisible()
            self.setTextCursor(QTextCursor(block))  # ...and its start
            self.ensureCursorVisible()
        self._numbers.update()

    def _marks(self, number: int, background: QColor, ink: QColor) -> list[QTextEdit.ExtraSelection]:
        """The pane's width marked behind each row of line ``number``: a line the pane wraps is marked
        on all its rows, not only its first. A full-width mark with no text selected marks only the
        row of its cursor; one over the line's text marks each row it ends after in full, its last
        row only as far as the text goes: the line's text, then its last row (its end) in full."""
        block = self.document().findBlockByNumber(number - 1)
        marks = []
        for keep in (QTextCursor.KeepAnchor, QTextCursor.MoveAnchor):
            mark = QTextEdit.ExtraSelection()
            mark.format.setBackground(background)
            mark.format.setForeground(ink)  # the code stays readable on the mark, in either theme
            mark.format.setProperty(QTextFormat.FullWidthSelection, True)
            cursor = QTextCursor(block)
            cursor.movePosition(QTextCursor.EndOfBlock, keep)
            mark.cursor = cursor
            marks.append(mark)
        return marks

    def toPlainText(self) -> str:
        """The script's source as it is (without the pane's invisible break points)."""
        return super().toPlainText().replace(_BREAK, "")

    def createMimeDataFromSelection(self):
        """What a copy takes: the selected source as it is."""
        data = super().createMimeDataFromSelection()
        data.setText(data.text().replace(_BREAK, ""))
        return data

    def mouseReleaseEvent(self, event) -> None:
        super().mouseReleaseEvent(event)
        line = self.cursorForPosition(event.position().toPoint()).blockNumber() + 1
        self.sigLineClicked.emit(line)
