"""The start page, shown when graphview starts without a file: open, recent files, bundled samples."""

from __future__ import annotations

import ast
import os

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from graphview.core.trace import SUFFIX
from graphview.qt.plain import text_tip


def _first_line_of_docstring(path: str) -> str:
    """What a sample shows, from the first line of its docstring (read, not imported)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = ast.get_docstring(ast.parse(f.read()))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ""
    if not doc:
        return ""
    first = doc.strip().splitlines()[0]
    return first.split(". ")[0].rstrip(".")  # the first sentence


def _sample_label(path: str) -> str:
    parts = os.path.normpath(path).split(os.sep)
    return "/".join(parts[parts.index("sample_models") + 1:]) if "sample_models" in parts else os.path.basename(path)


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
            widget = QListWidget()
            for path in paths:
                text = path
                if heading == "Samples":
                    about = _first_line_of_docstring(path)
                    text = f"{_sample_label(path)}  —  {about}" if about else _sample_label(path)
                item = QListWidgetItem(text)
                item.setToolTip(text_tip(path))
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
