"""The window's panels as docks: the code pane, the inspector, the run options, and the timeline
views in tabs (the memory chart first, then the findings, the console, the ledger), below the
canvas in a big window, right of it under the other panels in a small one.

:class:`WindowDocks` makes the docks and the tabs; which panel goes where is the window's
``_build_docks``. How the docks are arranged for the window's size is
:mod:`graphview.qt.window_layout`'s.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow, QStyle, QTabBar, QTabWidget, QWidget

from graphview.qt.session import Session
from graphview.qt.widgets.outlined import OutlinedControls


class NarrowTabs(OutlinedControls):
    """The application's style (:class:`OutlinedControls`, the selected tab's line with it) with
    less room left and right of a tab's title (14 px in all, where Fusion leaves 24), and less
    still, down to 6 px, where the titles would not fit the tab widget whole: "Diagnostics (1)"
    took the four titles 2 to 8 px past the 314 px column at 1366x768, and every title was elided
    ("Mem…", "Cons…", the count cut off)."""

    TAB_PADDING = 14
    LEAST_PADDING = 6

    def pixelMetric(self, metric, option=None, widget=None) -> int:
        if metric == QStyle.PM_TabBarTabHSpace:
            return self.padding(widget)
        return super().pixelMetric(metric, option, widget)

    def padding(self, bar) -> int:
        """The room beside each title of ``bar`` (a QTabBar), for the width of the widget it is in."""
        if not isinstance(bar, QTabBar) or bar.parentWidget() is None or not bar.count():
            return self.TAB_PADDING
        metrics = bar.fontMetrics()
        texts = sum(metrics.size(Qt.TextShowMnemonic, bar.tabText(i)).width() for i in range(bar.count()))
        spare = (bar.parentWidget().width() - texts - 2) // bar.count()  # (2: the bar's frame)
        return max(self.LEAST_PADDING, min(self.TAB_PADDING, spare))


class WindowDocks(QObject):
    """The docks of ``window``, and the tabs of the timeline views, each attached to ``session``."""

    def __init__(self, window: QMainWindow, session: Session) -> None:
        super().__init__(window)
        self._window = window
        self._session = session
        window.setDockOptions(QMainWindow.AnimatedDocks | QMainWindow.AllowNestedDocks | QMainWindow.AllowTabbedDocks)
        window.setTabPosition(Qt.AllDockWidgetAreas, QTabWidget.North)
        self.tabs = QTabWidget()
        # the column at 1366x768 (314 px) holds the four titles whole with narrower padding (they
        # read "Mem…", "Diagnos…", "Cons…", "Grad led…"); one the user narrows further shows every
        # tab, its title elided, rather than scroll arrows hiding the last ones
        self._tab_style = NarrowTabs()  # (a widget does not own its style: kept here)
        self.tabs.tabBar().setStyle(self._tab_style)
        self.tabs.setElideMode(Qt.ElideRight)
        self.tabs.setUsesScrollButtons(False)
        self.tabs.installEventFilter(self)  # (its width sets the room beside the titles)
        self.timeline: QDockWidget | None = None  # the tabs' dock

    def eventFilter(self, watched, event) -> bool:
        """The tabs' widget was resized: the tab bar lays its titles out again for the room beside
        them (:class:`NarrowTabs`; a bar narrower than the widget is not resized with it)."""
        if watched is self.tabs and event.type() == QEvent.Resize:
            bar = self.tabs.tabBar()
            bar.setIconSize(bar.iconSize())  # (marks its layout stale and asks for a new size)
        return super().eventFilter(watched, event)

    def add_timeline_tab(self, panel: QWidget, title: str) -> None:
        """A panel in the timeline views' tabs that follows the session (a SessionView)."""
        self.tabs.addTab(panel, title)
        self._session.attach(panel)

    def dock(self, title: str, name: str, widget: QWidget, area) -> QDockWidget:
        """A dock beside the canvas, hidden until the first run (the start page needs no empty panels)."""
        return self._make(title, name, widget, area)

    def timeline_dock(self, title: str, name: str, area) -> QDockWidget:
        """The dock of the tabs: it can be moved and floated, never closed (the memory chart is in it)."""
        self.timeline = self._make(title, name, self.tabs, area)
        self.timeline.setFeatures(QDockWidget.DockWidgetMovable | QDockWidget.DockWidgetFloatable)
        return self.timeline

    def _make(self, title: str, name: str, widget: QWidget, area) -> QDockWidget:
        dock = QDockWidget(title, self._window)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self._window.addDockWidget(area, dock)
        dock.hide()
        return dock
