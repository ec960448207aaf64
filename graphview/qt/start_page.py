"""The start page, shown when graphview starts without a file: open, recent files, bundled samples."""

from __future__ import annotations

import ast
import os

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListView,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from graphview.core.trace import SUFFIX
from graphview.qt.plain import text_tip
from graphview.qt.recent_files import recent_labels


def _summary(path: str) -> str:
    """What a sample shows: the first sentence of its docstring (read, not imported), however
    many lines it takes."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = ast.get_docstring(ast.parse(f.read()))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ""
    if not doc:
        return ""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    return paragraph.split(". ")[0].rstrip(".")


def _sample_label(path: str) -> str:
    parts = os.path.normpath(path).split(os.sep)
    return "/".join(parts[parts.index("sample_models") + 1:]) if "sample_models" in parts else os.path.basename(path)


class WholeRows(QListWidget):
    """A list of one-line rows that shows only whole rows, a long one elided with "…": the room
    under the last whole row is left empty (a row cut in half reads as text cut off), and it
    scrolls a row at a time, so the last row ends at the bottom."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setUniformItemSizes(True)  # every row as wide as the list: longer text is elided
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.setTextElideMode(Qt.ElideRight)
        self.setResizeMode(QListView.Adjust)
        self.setVerticalScrollMode(QListView.ScrollPerItem)
        self.setBackgroundRole(QPalette.Base)  # the room under the last row: as the rows' background
        self.setAutoFillBackground(True)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        row = self.sizeHintForRow(0) if self.count() else 0
        if row > 0:
            inside = self.height() - 2 * self.frameWidth()
            self.setViewportMargins(0, 0, 0, inside % row)


class StartPage(QWidget):
    """Shown when graphview starts without a file: open, recent files, bundled samples."""

    sigOpen = Signal(str)

    def __init__(self, samples: list[str], recent: list[str], parent=None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        title = QLabel("<h1>graphview</h1><p>Open a PyTorch script and watch autograd build, run and free "
                       "its graph, one step at a time.</p>")
        title.setWordWrap(True)
        layout.addWidget(title)
        buttons = QHBoxLayout()
        open_script = QPushButton("Open script…")
        open_trace = QPushButton("Open trace…")
        open_script.clicked.connect(lambda: self._pick("Python scripts (*.py)"))
        open_trace.clicked.connect(lambda: self._pick(f"graphview traces (*{SUFFIX})"))
        buttons.addWidget(open_script)
        buttons.addWidget(open_trace)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        lists = QHBoxLayout()
        for heading, paths in (("Recent files", recent), ("Samples", samples)):
            column = QVBoxLayout()
            column.addWidget(QLabel(f"<b>{heading}</b>"))
            widget = WholeRows()
            texts = recent_labels(paths) if heading == "Recent files" else paths  # (a sample's is below)
            for path, text in zip(paths, texts):
                tip = path
                if heading == "Samples":
                    about = _summary(path)
                    text = f"{_sample_label(path)}  —  {about}" if about else _sample_label(path)
                    tip = f"{about}\n{path}" if about else path
                item = QListWidgetItem(text)
                item.setToolTip(text_tip(tip))
                item.setData(Qt.UserRole, path)
                widget.addItem(item)
            if not paths:
                empty = QListWidgetItem("none yet: files you open are listed here")
                empty.setFlags(Qt.NoItemFlags)
                widget.addItem(empty)
            widget.itemActivated.connect(lambda item: item.data(Qt.UserRole) and self.sigOpen.emit(item.data(Qt.UserRole)))
            widget.itemClicked.connect(lambda item: item.data(Qt.UserRole) and self.sigOpen.emit(item.data(Qt.UserRole)))
            column.addWidget(widget)
            lists.addLayout(column, 1 if heading == "Recent files" else 2)
        layout.addLayout(lists, 1)

    def _pick(self, pattern: str) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open", "", pattern + ";;All files (*)")
        if path:
            self.sigOpen.emit(path)
