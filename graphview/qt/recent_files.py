"""File > Open recent: the ten scripts and traces opened last (those still on disk), remembered in
the window's settings; the start page lists them too."""

from __future__ import annotations

import os

from PySide6.QtCore import QObject, QSettings, SignalInstance
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from graphview.qt.plain import button_text, text_tip

#: the settings key of the list, newest first
KEY = "recent"
#: how many it keeps
KEPT = 10


def recent_paths(settings: QSettings) -> list[str]:
    """The files opened last, newest first, that still exist."""
    value = settings.value(KEY, [])
    if isinstance(value, str):  # (QSettings gives a list of one as the string)
        value = [value]
    return [p for p in (value or []) if os.path.exists(p)][:KEPT]


def recent_labels(paths: list[str]) -> list[str]:
    """Each recent file by its name, then its folder: the home folder as ``~``, only the last two
    folders of a deeper one, more where two files would read the same (the whole path is the
    row's tooltip)."""
    home = os.path.expanduser("~")
    folders = []
    for path in paths:
        folder = os.path.dirname(os.path.normpath(path))
        if home not in ("", os.sep) and (folder == home or folder.startswith(home + os.sep)):
            folder = "~" + folder[len(home):]
        folders.append(folder.split(os.sep))

    def label(k: int, depth: int) -> str:
        parts = folders[k]
        folder = os.sep.join(["…", *parts[-depth:]]) if len(parts) > depth + 1 else os.sep.join(parts)
        return f"{os.path.basename(paths[k])}  —  {folder}"

    depths = [2] * len(paths)
    for _ in range(max((len(parts) for parts in folders), default=0)):
        labels = [label(k, depths[k]) for k in range(len(paths))]
        same = {k for k in range(len(paths)) if labels.count(labels[k]) > 1}
        if not same:
            break
        for k in same:
            depths[k] += 1
    return [label(k, depths[k]) for k in range(len(paths))]


class RecentMenu(QObject):
    """The Open recent submenu, put in ``file_menu`` before ``before``; a path picked is emitted
    by ``open``."""

    def __init__(self, settings: QSettings, file_menu: QMenu, before: QAction, open: SignalInstance) -> None:
        super().__init__(file_menu)
        self._settings = settings
        self._open = open
        self.menu = QMenu("Open &recent", file_menu)
        file_menu.insertMenu(before, self.menu)
        self.fill()

    def remember(self, path: str) -> None:
        """``path`` was opened: first in the list."""
        recent = [p for p in recent_paths(self._settings) if p != path]
        self._settings.setValue(KEY, [path] + recent[:KEPT - 1])
        self.fill()

    def fill(self) -> None:
        """Each file by its name and its shortened folder, as the start page lists them; its whole
        path is the entry's tooltip."""
        self.menu.clear()
        self.menu.setToolTipsVisible(True)
        paths = recent_paths(self._settings)
        for path, label in zip(paths, recent_labels(paths)):
            action = self.menu.addAction(button_text(label), lambda p=path: self._open.emit(p))
            action.setToolTip(text_tip(path))  # (a file's name is text: `<b>.gvtrace` renders nothing)
