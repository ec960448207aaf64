"""The Help menu's dialogs: the keyboard shortcuts and About graphview.

The shortcut sheet is written from the window's table of actions
(:func:`graphview.qt.actions.shortcut_sheet`), never by hand. About reads the versions of what
is installed through ``importlib.metadata``: the GUI never imports torch.
"""

from __future__ import annotations

import html
import platform
from importlib import metadata

import PySide6
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QTextBrowser, QVBoxLayout, QWidget

import graphview
from graphview.core.run import Run
from graphview.qt.actions import shortcut_sheet
from graphview.qt.widgets.buttons import words_only


def installed(distribution: str, fallback: str = "not installed") -> str:
    """The version of an installed distribution, as ``importlib.metadata`` reports it."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return fallback


def versions() -> list[tuple[str, str]]:
    """(what, version) for graphview, torch, Qt, PySide6 and Python, as installed here."""
    return [
        ("graphview", installed("graphview", graphview.__version__)),
        ("torch", installed("torch")),
        ("Qt", qVersion()),
        ("PySide6", PySide6.__version__),
        ("Python", platform.python_version()),
    ]


def _with_close(dialog: QDialog, body: QWidget) -> None:
    layout = QVBoxLayout(dialog)
    layout.addWidget(body)
    buttons = words_only(QDialogButtonBox(QDialogButtonBox.Close))
    buttons.rejected.connect(dialog.reject)
    layout.addWidget(buttons)


class ShortcutSheet(QDialog):
    """Help > Keyboard shortcuts: every key of the window, grouped as the menus are."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.sheet = QTextBrowser()
        self.sheet.setHtml(shortcut_sheet())
        self.sheet.setOpenLinks(False)
        self.resize(420, 560)
        _with_close(self, self.sheet)


class AboutDialog(QDialog):
    """Help > About graphview: what graphview is, and the versions it runs with."""

    def __init__(self, parent: QWidget | None = None, run: Run | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("About graphview")
        rows = "".join(f"<tr><td style='padding-right:16px'>{html.escape(name)}</td><td><b>{html.escape(version)}</b></td></tr>"
                       for name, version in versions())
        recorded = ""
        start = run.start if run is not None else None
        if start and start.get("torch"):
            recorded = (f"<p>The run shown was recorded with torch {html.escape(str(start['torch']))} on Python "
                        f"{html.escape(str(start.get('python', '?')))}.</p>")
        self.text = QLabel(f"<h3>graphview</h3><p>Watch PyTorch autograd build, run and free its graph, one step "
                           f"at a time.</p><table>{rows}</table>{recorded}")
        self.text.setTextFormat(Qt.RichText)
        self.text.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.text.setWordWrap(True)
        self.setMinimumWidth(380)
        _with_close(self, self.text)
