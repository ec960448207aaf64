"""The memory tab: the chart and, beside it (below it in a narrow column), the what-if summary.

The chart keeps a readable height whatever the summary says (:meth:`MemoryChart.readable_height`):
the summary scrolls in the room left beside or below the chart, and a tab too short for the chart
and a few lines of the summary scrolls as a whole rather than squeezing the chart. At 1366x768 the
tab is a column about 310 px wide: the summary of a what-if re-run, laid out below the chart and
not scrolled, had squeezed the chart to a strip 20 px tall with its axis labels on top of each other.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtWidgets import QBoxLayout, QFrame, QScrollArea, QWidget

from graphview.qt.panels.memory import MemoryChart
from graphview.qt.panels.whatif_summary import WhatIfSummary

#: narrower than this, the summary goes below the chart (a 1366x768 window's side column)
SIDE_BY_SIDE_WIDTH = 720
#: the summary's width beside the chart
SUMMARY_WIDTH = 340
#: below the chart, the summary shows at least this many pixels (a few lines), scrolling the rest
SUMMARY_MIN_HEIGHT = 64
#: when the summary appears, the tab asks the window for room for this much of it
SUMMARY_WANTED = 120


class MemoryTab(QScrollArea):
    """The chart and the summary, in a scroll area that scrolls only when the tab is shorter than
    the chart's readable height (plus a few lines of the summary below it).

    ``sigShort(pixels)``: the tab is ``pixels`` short of showing the chart at its readable height
    (the first time it is, in a short window), or the summary has just appeared below the chart and
    the tab lacks room for the chart and a few of its lines; the window may give the tab that room."""

    sigShort = Signal(int)

    def __init__(self, chart: MemoryChart, summary: WhatIfSummary, parent=None) -> None:
        super().__init__(parent)
        self.chart, self.summary = chart, summary
        self.setFrameShape(QFrame.NoFrame)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        # the summary scrolls within its own room: long comparisons never push the chart out
        self.summary_scroll = QScrollArea()
        self.summary_scroll.setObjectName("whatIfScroll")
        self.summary_scroll.setFrameShape(QFrame.NoFrame)
        self.summary_scroll.setWidgetResizable(True)
        self.summary_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        summary.setMaximumWidth(16777215)
        self.summary_scroll.setWidget(summary)
        self.content = QWidget()
        self.box = QBoxLayout(QBoxLayout.LeftToRight, self.content)
        self.box.setContentsMargins(0, 0, 0, 0)
        self.box.setSpacing(0)
        self.box.addWidget(chart, 1)
        self.box.addWidget(self.summary_scroll)
        self.setWidget(self.content)
        self.summary_scroll.setVisible(False)
        summary.installEventFilter(self)
        chart.sigReadableHeight.connect(self._arrange)
        self._wide: bool | None = None
        self._asked = False  # the room was asked for (sigShort) for the summary shown now
        self._asking = False
        self._asked_for_chart = False  # the room for the chart alone was asked for (once a window)

    @property
    def wide(self) -> bool:
        return self.width() >= SIDE_BY_SIDE_WIDTH

    def eventFilter(self, watched, event) -> bool:
        if watched is self.summary and event.type() in (QEvent.ShowToParent, QEvent.HideToParent,
                                                         QEvent.LayoutRequest, QEvent.Resize):
            self._arrange()
        return super().eventFilter(watched, event)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._arrange()

    def _arrange(self) -> None:
        """Side by side or one above the other, for the tab's width; the chart at least its readable height."""
        shown = not self.summary.isHidden()
        if self.summary_scroll.isHidden() == shown:
            self.summary_scroll.setVisible(shown)
        wide = self.wide
        if wide != self._wide:
            self._wide = wide
            self.box.setDirection(QBoxLayout.LeftToRight if wide else QBoxLayout.TopToBottom)
        room = self.viewport().height()
        chart_min = self.chart.readable_height()
        self.chart.setMinimumHeight(chart_min)
        if wide:
            self.summary_scroll.setFixedWidth(SUMMARY_WIDTH)
            self.summary_scroll.setMinimumHeight(0)
            self.summary_scroll.setMaximumHeight(16777215)
            return
        self.summary_scroll.setMinimumWidth(0)
        self.summary_scroll.setMaximumWidth(16777215)
        if not shown:
            self._asked = False
            if room < chart_min and not self._asked_for_chart and not self._asking:
                self._asking = True  # (a window a little short: the chart's room, asked for once)
                QTimer.singleShot(0, self, self._ask_room)
            return
        width = max(1, self.viewport().width() - self.summary_scroll.verticalScrollBar().sizeHint().width())
        needed = self.summary.heightForWidth(width) if self.summary.hasHeightForWidth() else self.summary.sizeHint().height()
        needed = max(needed, self.summary.minimumSizeHint().height())
        # what the chart's readable height leaves, never below a few lines (the tab then scrolls)
        height = min(needed + 2, max(SUMMARY_MIN_HEIGHT, room - chart_min))
        self.summary_scroll.setFixedHeight(height)
        if not self._asked and not self._asking:
            self._asking = True
            QTimer.singleShot(0, self, self._ask_room)

    def _ask_room(self) -> None:
        """The summary has just appeared below the chart: ask for the room of the chart's readable
        height and the summary's first lines (:data:`SUMMARY_WANTED`), if the tab lacks it. With no
        summary, the room of the chart's readable height, the first time the tab lacks it (a
        1366x768 window less a taskbar left the chart's axis scrolled out of sight); a dock the
        user makes shorter afterwards stays as they made it."""
        self._asking = False
        if self.wide or not self.isVisible():
            return  # asked again when it is next arranged (the tab brought forward)
        if self.summary.isHidden():  # the chart alone: its readable height, once (then the user's choice)
            self._asked_for_chart = True
            short = self.chart.readable_height() - self.viewport().height()
            if short > 0:
                self.sigShort.emit(short)
            return
        self._asked = True
        width = max(1, self.viewport().width() - self.summary_scroll.verticalScrollBar().sizeHint().width())
        needed = self.summary.heightForWidth(width) if self.summary.hasHeightForWidth() else self.summary.sizeHint().height()
        short = self.chart.readable_height() + min(needed + 2, SUMMARY_WANTED) - self.viewport().height()
        if short > 0:
            self.sigShort.emit(short)
