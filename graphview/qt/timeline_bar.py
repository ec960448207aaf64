"""TimelineBar: the toolbar with the timeline's slider and the words for the event at the cursor."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QSlider, QToolBar

from graphview.core.event_words import describe
from graphview.core.run import Run
from graphview.qt.plain import plain_label, text_tip


class TimelineBar(QToolBar):
    """Every recorded event on a slider; drag to scrub. A :class:`graphview.qt.session.SessionView`.

    Signals
    -------
    scrubbed(int)
        The user moved the slider to an event.
    """

    scrubbed = Signal(int)

    def __init__(self, parent=None) -> None:
        super().__init__("Timeline", parent)
        self.setObjectName("timeline")
        self.run: Run | None = None
        self.addWidget(QLabel(" timeline "))
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setRange(0, 0)
        self.slider.setMinimumWidth(300)
        self.slider.setToolTip("the timeline: every recorded event; drag to scrub")
        self.slider.valueChanged.connect(self.scrubbed)
        self.addWidget(self.slider)
        self.position_label = plain_label()  # what happened at the cursor, in the trace's names: text
        self.position_label.setFixedWidth(560)  # fixed: a long text must not push it out of the bar
        self.addWidget(self.position_label)

    def set_run(self, run: Run) -> None:
        self.run = run
        self.set_length(len(run.events))
        if not run.events:  # a live run whose runner is still starting (the status bar says how far)
            self.slider.blockSignals(True)
            self.slider.setValue(0)
            self.slider.blockSignals(False)
            self.position_label.setText(" no events yet")
            self.position_label.setToolTip("")

    def set_length(self, events: int) -> None:
        """The run has ``events`` events (a live run grows)."""
        self.slider.blockSignals(True)
        self.slider.setRange(0, max(0, events - 1))
        self.slider.blockSignals(False)

    def set_cursor(self, index: int) -> None:
        self.slider.blockSignals(True)
        self.slider.setValue(index)
        self.slider.blockSignals(False)
        words = describe(self.run, index)
        metrics = self.position_label.fontMetrics()
        self.position_label.setText(metrics.elidedText(f" {index} / {len(self.run.events) - 1}   {words}",
                                                       Qt.ElideRight, self.position_label.width() - 8))
        self.position_label.setToolTip(text_tip(words))
