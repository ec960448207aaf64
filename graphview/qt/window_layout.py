"""How the window fits its screen and where its docks go.

The window opens on the screen it opens on (:func:`fit_to_screen`): all of a small screen, a
share of a big one, never larger than the screen's available area. Its panels are dock widgets; :class:`DockArrangement` lays them out
for the window's size: on a large window the code pane left of the canvas, the inspector and
the run options right of it and the timeline views below; on a small one (a 1366x768 laptop)
the code pane, the inspector and the run options fold into tabs, in one column beside the
canvas with the timeline views under them, so the canvas gets most of the room. Crossing from
one size to the other re-arranges the docks, until the user moves one of them.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDockWidget, QMainWindow

#: below this width or height a window is small: its side panels fold into tabs
COMPACT_WIDTH = 1600
COMPACT_HEIGHT = 950
#: the largest window graphview opens by itself: a big screen gets this, not all of it
LARGEST = QSize(1800, 1150)
#: a screen up to this size is used whole (a laptop's 1366x768 has no room to spare)
USED_WHOLE = QSize(1600, 1000)
#: room for the window's frame (title bar, borders), which the window's own size leaves out
FRAME = QSize(16, 40)


def window_size(available: QRect, frame: QSize = FRAME) -> QSize:
    """The window's first size on a screen whose available area is ``available``: all of a
    small screen, 85% of a big one up to :data:`LARGEST`; never more than the screen (less the
    window's ``frame``)."""
    room = QSize(max(1, available.width() - frame.width()), max(1, available.height() - frame.height()))

    def share(side: int, whole: int, largest: int) -> int:
        return min(side, max(min(side, whole), min(largest, round(side * 0.85))))

    return QSize(share(room.width(), USED_WHOLE.width(), LARGEST.width()),
                 share(room.height(), USED_WHOLE.height(), LARGEST.height()))


def fit_to_screen(window: QMainWindow) -> None:
    """Size the window for the screen it opens on and center it there."""
    screen = window.screen()
    if screen is None:
        return
    available = screen.availableGeometry()
    # a screen without window decorations (offscreen, minimal) needs no room for a frame
    frame = QSize(0, 0) if QGuiApplication.platformName() in ("offscreen", "minimal") else FRAME
    size = window_size(available, frame)
    # setGeometry, not move: MainWindow.move moves the timeline's cursor
    window.setGeometry(QRect(available.x() + (available.width() - size.width()) // 2,
                             available.y() + (available.height() - size.height() + frame.height()) // 2,
                             size.width(), size.height()))


def is_compact(size: QSize) -> bool:
    return size.width() < COMPACT_WIDTH or size.height() < COMPACT_HEIGHT


class DockArrangement:
    """The default places of the window's docks, for its size.

    ``code``, ``inspector``, ``options`` and ``timeline`` are the docks of the code pane, the
    inspector, the run options and the timeline views. :meth:`apply` arranges them for the
    window's size; :meth:`follow_size` (from the window's resize) re-arranges when the window
    crosses between small and large, unless the user has moved a dock since.
    """

    def __init__(self, window: QMainWindow, code: QDockWidget, inspector: QDockWidget, options: QDockWidget,
                 timeline: QDockWidget) -> None:
        self.window = window
        self.code, self.inspector, self.options, self.timeline = code, inspector, options, timeline
        self.compact: bool | None = None  # None: not arranged yet (the start page shows no docks)
        self.moved_by_user = False
        self._arranging = False
        for dock in self.docks:
            dock.dockLocationChanged.connect(self._on_moved)
            dock.topLevelChanged.connect(self._on_moved)

    @property
    def docks(self) -> tuple[QDockWidget, ...]:
        return self.code, self.inspector, self.options, self.timeline

    def _on_moved(self, *args) -> None:
        if not self._arranging and self.compact is not None:
            self.moved_by_user = True

    def apply(self) -> None:
        """Arrange the docks for the window's present size; the first time, show them all (later,
        a panel the user closed stays closed)."""
        compact = is_compact(self.window.size())
        first = self.compact is None
        shown = [first or dock.isVisible() for dock in self.docks]
        self._arranging = True
        try:
            for dock in self.docks:
                dock.setFloating(False)
                dock.show()
            if compact:
                self._small()
            else:
                self._large()
            for dock, visible in zip(self.docks, shown):
                dock.setVisible(visible)
        finally:
            self._arranging = False
        self.compact = compact

    def follow_size(self) -> None:
        """The window was resized: a new arrangement if it crossed between small and large."""
        if self.compact is None or self.moved_by_user or is_compact(self.window.size()) == self.compact:
            return
        self.apply()

    def _large(self) -> None:
        w = self.window
        w.addDockWidget(Qt.LeftDockWidgetArea, self.code)
        w.addDockWidget(Qt.RightDockWidgetArea, self.inspector)
        w.splitDockWidget(self.inspector, self.options, Qt.Vertical)
        w.addDockWidget(Qt.BottomDockWidgetArea, self.timeline)
        width = w.width()
        w.resizeDocks([self.code, self.inspector], [max(320, width // 4), max(280, width // 5)], Qt.Horizontal)
        w.resizeDocks([self.inspector, self.options], [3, 2], Qt.Vertical)
        w.resizeDocks([self.timeline], [max(200, w.height() // 4)], Qt.Vertical)

    def _small(self) -> None:
        w = self.window
        w.addDockWidget(Qt.RightDockWidgetArea, self.code)
        w.splitDockWidget(self.code, self.timeline, Qt.Vertical)
        w.tabifyDockWidget(self.code, self.inspector)
        w.tabifyDockWidget(self.inspector, self.options)
        self.code.raise_()
        width, height = w.width(), w.height()
        w.resizeDocks([self.code], [max(300, min(420, width * 23 // 100))], Qt.Horizontal)
        w.resizeDocks([self.code, self.timeline], [height * 55 // 100, height * 45 // 100], Qt.Vertical)
