"""View > Theme: System, Light or Dark, switched live and remembered in the window's settings."""

from __future__ import annotations

from PySide6.QtCore import QObject, QSettings
from PySide6.QtGui import QAction, QActionGroup, QGuiApplication
from PySide6.QtWidgets import QMenu

from graphview.qt import theme as themes

LABELS = {"system": "&System (follow the desktop)", "light": "&Light", "dark": "&Dark"}


class ThemeMenu(QObject):
    """The View menu's Theme submenu; applies the remembered choice at once (at start: System)."""

    KEY = "theme"

    def __init__(self, view_menu: QMenu, settings: QSettings) -> None:
        super().__init__(view_menu)
        self.settings = settings
        self.menu = view_menu.addMenu("&Theme")
        group = QActionGroup(self)
        group.setExclusive(True)
        self.actions: dict[str, QAction] = {}
        for name in themes.CHOICES:
            action = QAction(LABELS[name], self.menu, checkable=True)
            action.triggered.connect(lambda _=False, name=name: self.select(name))
            group.addAction(action)
            self.menu.addAction(action)
            self.actions[name] = action
        saved = settings.value(self.KEY, "system")
        self.select(saved if saved in themes.CHOICES else "system", remember=False)
        hints = QGuiApplication.styleHints()
        if hasattr(hints, "colorSchemeChanged"):  # Qt 6.5+: the desktop switched between light and dark
            hints.colorSchemeChanged.connect(self._on_desktop_changed)

    @property
    def choice(self) -> str:
        return next(name for name, action in self.actions.items() if action.isChecked())

    def select(self, name: str, remember: bool = True) -> themes.Theme:
        """Switch to ``name`` (``"system"``, ``"light"``, ``"dark"``) now and, by default, for the next start."""
        self.actions[name].setChecked(True)
        if remember:
            self.settings.setValue(self.KEY, name)
        return themes.apply(name)

    def _on_desktop_changed(self, scheme) -> None:
        if self.choice == "system":
            themes.apply("system")
