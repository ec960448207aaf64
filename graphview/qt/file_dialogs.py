"""Where the file dialogs start: the folder last used, and a file name made from the run.

Open and save dialogs each remember their folder in the window's ``QSettings`` (as the
recent-files list is), so the next dialog, in this window or a new one, starts there. Save
dialogs also suggest a name (``transformer_block-step1-event120.svg``,
``transformer_block.gvtrace``: :func:`graphview.core.captions.file_stem`).
"""

from __future__ import annotations

import os
import re

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog, QWidget

OPEN, SAVE = "open", "save"


class Folders:
    """The last folder of each kind of dialog (``OPEN``, ``SAVE``), kept in ``settings``."""

    def __init__(self, settings: QSettings) -> None:
        self.settings = settings

    def last(self, kind: str) -> str:
        """The folder the last dialog of ``kind`` went to; the working directory before the first
        (or once that folder is gone)."""
        folder = self.settings.value(f"folders/{kind}", "")
        return folder if isinstance(folder, str) and os.path.isdir(folder) else os.getcwd()

    def remember(self, kind: str, path: str) -> None:
        """``path`` was chosen in a dialog of ``kind``: its folder is where the next one starts."""
        self.settings.setValue(f"folders/{kind}", os.path.dirname(os.path.abspath(path)))

    def start(self, kind: str, name: str = "") -> str:
        """Where a dialog of ``kind`` starts: the last folder, with ``name`` in it when given."""
        return os.path.join(self.last(kind), name) if name else self.last(kind)


def with_suffix(path: str, pattern: str) -> str:
    """A name typed without a suffix gets the one of the file type chosen (``"SVG (*.svg)"``)."""
    if path and not os.path.splitext(path)[1]:
        match = re.search(r"\(\*(\.[\w.]+)\)", pattern)
        if match:
            path += match.group(1)
    return path


def ask_open(parent: QWidget, folders: Folders, title: str, pattern: str) -> str | None:
    """A file to open, asked for in the folder last opened from; None if the user cancelled."""
    path, _ = QFileDialog.getOpenFileName(parent, title, folders.start(OPEN), pattern)
    if path:
        folders.remember(OPEN, path)
    return path or None


def ask_save(parent: QWidget, folders: Folders, title: str, name: str, pattern: str) -> str | None:
    """A path to write, asked for with ``name`` suggested in the folder last saved to; None if
    cancelled. The caller remembers the folder (``folders.remember(SAVE, path)``) once the file
    is written."""
    path, chosen = QFileDialog.getSaveFileName(parent, title, folders.start(SAVE, name), pattern)
    return with_suffix(path, chosen or pattern) or None
