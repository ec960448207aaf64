"""How the window fits its screen and where its docks go.

The window opens on the screen it opens on (:func:`fit_to_screen`): all of a small screen, a
share of a big one, never larger than the screen's available area. Its panels are dock widgets; :class:`DockArrangement` lays them out
for the window's size: on a large window the code pane left of the canvas, the inspector and
the run options right of it and the timeline views below; on a small one (a 1366x768 laptop)
the code pane, the inspector and the run options fold into tabs, in one column beside the
canvas with the timeline views under them, so the canvas gets most of the room. Crossing from
one size to the other re-arranges the docks, until the user moves one of them. The memory tab's
ask for room (:meth:`DockArrangement.grow_timeline`) is met in graphview's own arrangement only:
once the user has moved a dock or dragged a separator, their sizes stay.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, QSize, Qt
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


class DockArrangement(QObject):
    """The default places of the window's docks, for its size.

    ``code``, ``inspector``, ``options`` and ``timeline`` are the docks of the code pane, the
    inspector, the run options and the timeline views. :meth:`apply` arranges them for the
    window's size; :meth:`follow_size` (from the window's resize) re-arranges when the window
    crosses between small and large, unless the user has moved a dock since.
    :attr:`arranged_by_user`: the user has moved a dock (:attr:`moved_by_user`) or dragged a
    separator between docks (:attr:`resized_by_user`) since graphview last arranged them.
    """

    def __init__(self, window: QMainWindow, code: QDockWidget, inspector: QDockWidget, options: QDockWidget,
                 timeline: QDockWidget) -> None:
        super().__init__(window)
        self.window = window
        self.code, self.inspector, self.options, self.timeline = code, inspector, options, timeline
        self.compact: bool | None = None  # None: not arranged yet (the start page shows no docks)
        self.moved_by_user = False
        self.resized_by_user = False
        self._arranging = False
        self._sizes_at_press: list[QSize] | None = None
        for dock in self.docks:
            dock.dockLocationChanged.connect(self._on_moved)
            dock.topLevelChanged.connect(self._on_moved)
        window.installEventFilter(self)

    @property
    def docks(self) -> tuple[QDockWidget, ...]:
        return self.code, self.inspector, self.options, self.timeline

    @property
    def arranged_by_user(self) -> bool:
        return self.moved_by_user or self.resized_by_user

    def _on_moved(self, *args) -> None:
        if not self._arranging and self.compact is not None:
            self.moved_by_user = True

    def eventFilter(self, watched, event) -> bool:
        """A press and release of the left button on the window itself (its separators between
        docks: no widget there) that changed a dock's size is the user's sizing."""
        if watched is self.window and self.compact is not None:
            kind = event.type()
            if kind == QEvent.MouseButtonPress and event.button() == Qt.LeftButton:
                self._sizes_at_press = [dock.size() for dock in self.docks]
            elif kind == QEvent.MouseButtonRelease and self._sizes_at_press is not None:
                if [dock.size() for dock in self.docks] != self._sizes_at_press:
                    self.resized_by_user = True
                self._sizes_at_press = None
        return False

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
        self.resized_by_user = False  # graphview's own sizes again

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

    def grow_timeline(self, pixels: int) -> None:
        """The memory tab is ``pixels`` short of showing its chart (and the what-if summary below it):
        the timeline views take that much from the panels beside them (the code pane, at 1366x768),
        up to half the column (two thirds left the code pane 10 rows at 1366x768 after a re-run;
        the summary scrolls in its room). Only in graphview's own arrangement: sizes the
        user gave the docks (a separator dragged, a dock moved) stay, and the tab scrolls in them (a
        re-run's summary took the timeline views from the 162 px a user left them back to 441 px)."""
        window, dock = self.window, self.timeline
        if self.arranged_by_user or dock.isFloating() or not dock.isVisible():
            return
        neighbours = [d for d in (self.code, self.inspector, self.options) if d.isVisible() and not d.isFloating()
                      and window.dockWidgetArea(d) == window.dockWidgetArea(dock)]
        if not neighbours:
            return
        above = max(neighbours, key=lambda d: d.height())
        column = dock.height() + above.height()
        height = min(dock.height() + pixels, column // 2)
        if height > dock.height():
            window.resizeDocks([above, dock], [column - height, height], Qt.Vertical)
