"""The memory tab: the chart and, beside it (below it in a narrow column), the what-if summary."""

from __future__ import annotations

from PySide6.QtWidgets import QBoxLayout, QWidget

from graphview.qt.panels.memory import MemoryChart
from graphview.qt.panels.whatif_summary import WhatIfSummary

#: narrower than this, the summary goes below the chart (a 1366x768 window's side column)
SIDE_BY_SIDE_WIDTH = 720


class MemoryTab(QWidget):
    def __init__(self, chart: MemoryChart, summary: WhatIfSummary, parent=None) -> None:
        super().__init__(parent)
        self.chart, self.summary = chart, summary
        self.box = QBoxLayout(QBoxLayout.LeftToRight, self)
        self.box.setContentsMargins(0, 0, 0, 0)
        self.box.setSpacing(0)
        self.box.addWidget(chart, 1)
        self.box.addWidget(summary)

    def resizeEvent(self, event) -> None:
        wide = event.size().width() >= SIDE_BY_SIDE_WIDTH
        direction = QBoxLayout.LeftToRight if wide else QBoxLayout.TopToBottom
        if self.box.direction() != direction:
            self.box.setDirection(direction)
            self.summary.setMaximumWidth(340 if wide else 16777215)
        super().resizeEvent(event)
