"""File > Open recent: the ten scripts and traces opened last (those still on disk), remembered in
the window's settings; the start page lists them too."""

from __future__ import annotations

import os

from PySide6.QtCore import QObject, QSettings, SignalInstance
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from graphview.qt.plain import button_text

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
        self.menu.clear()
        for path in recent_paths(self._settings):
            self.menu.addAction(button_text(path), lambda p=path: self._open.emit(p))
