"""The window's menus and toolbars: the commands of :mod:`graphview.qt.actions` in the menu bar and
on the stepping toolbar (with the playing speed and the search field), the timeline bar below it,
File > Open recent (:mod:`graphview.qt.recent_files`), View > Theme (:mod:`graphview.qt.theme_menu`)
and, in View, an entry per dock (a panel closed with its × comes back from there)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from PySide6.QtCore import QSettings, Qt, SignalInstance
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow, QMenu, QToolBar, QWidget

from graphview.qt.actions import build_actions
from graphview.qt.recent_files import RecentMenu
from graphview.qt.theme_menu import ThemeMenu


@dataclass
class WindowMenus:
    actions: dict[str, QAction]  # by the id of their ActionSpec
    menus: dict[str, QMenu]  # by path: "&File/&Export"
    recent: RecentMenu
    themes: ThemeMenu


def build_menus(window: QMainWindow, settings: QSettings, open: SignalInstance, speed: QWidget, search: QWidget,
                timeline_bar: QToolBar, docks: Sequence[QDockWidget]) -> WindowMenus:
    """The menus and toolbars of ``window``, which is also the :class:`~graphview.qt.actions.Commands`
    the actions call; ``open`` is emitted with a recent file picked. The remembered theme is applied."""
    stepping = QToolBar("Stepping")
    stepping.setObjectName("stepping")
    window.addToolBar(Qt.TopToolBarArea, stepping)
    actions, menus = build_actions(window, stepping)
    recent = RecentMenu(settings, menus["&File"], menus["&File/&Export"].menuAction(), open)
    stepping.addSeparator()
    stepping.addWidget(QLabel(" speed "))
    stepping.addWidget(speed)
    stepping.addSeparator()
    stepping.addWidget(search)
    window.addToolBarBreak(Qt.TopToolBarArea)
    window.addToolBar(Qt.TopToolBarArea, timeline_bar)
    view_menu = menus["&View"]
    themes = ThemeMenu(view_menu, settings)  # applies the remembered theme (System at first)
    view_menu.addSeparator()  # panels closed with their × come back from here
    for dock in docks:
        if dock.features() & QDockWidget.DockWidgetClosable:  # (the timeline views are never closed: an
            view_menu.addAction(dock.toggleViewAction())      # entry would sit there checked and greyed)
    return WindowMenus(actions, menus, recent, themes)
