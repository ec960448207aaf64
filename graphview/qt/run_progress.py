"""RunProgress: what a live run is doing, in the status bar, with a busy bar while it works.

A trace too big to read at once is read while the window shows it: the bar then says how much
of the file is read, and a Cancel button stops the reading (what was read stays).

A runner first starts Python, then imports torch (the runner's ``phase`` event says so), then
runs the script (``run_start``), a step script step by step (``step_start``); the events taken in
so far are counted. When the run has ended and is drawn, the words give way to the run's summary.
"""

from __future__ import annotations

import os

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QToolButton, QWidget

from graphview.core.run import Run
from graphview.qt.plain import plain_label

#: the words for each phase a runner announces before the script starts
PHASES = {"python": "starting Python", "torch": "importing torch"}


class RunProgress(QWidget):
    """A label and a busy bar for the status bar; hidden while no run is in progress."""

    #: Cancel was pressed while a trace was being read
    sigCancel = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 6, 0)
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)  # busy: how long a script runs is unknown
        self.bar.setTextVisible(False)
        self.bar.setFixedSize(90, 12)
        self.label = plain_label()  # names the script or trace file: text, never HTML
        self.cancel = QToolButton()
        self.cancel.setText("Cancel")
        self.cancel.setToolTip("stop reading the trace: what was read so far stays")
        self.cancel.clicked.connect(self.sigCancel)
        self.cancel.hide()
        layout.addWidget(self.bar)
        layout.addWidget(self.label)
        layout.addWidget(self.cancel)
        self._load = None  # the trace being read (its ``fraction``), if any
        self.script = ""
        self.phase = ""
        self.hide()

    def text(self) -> str:
        return self.label.text()

    def start(self, script: str) -> None:
        """A runner is being started for ``script``."""
        self.script = os.path.basename(script)
        self.set_phase("python")
        self.show()

    def start_reading(self, name: str, load) -> None:
        """A trace ``name`` is being read; ``load.fraction`` says how much of it (0 to 1)."""
        self.script = name
        self._load = load
        self.bar.setRange(0, 1000)
        self.cancel.show()
        self.update_reading(0)
        self.show()

    def update_reading(self, events: int) -> None:
        """The events of the trace shown so far."""
        if self._load is None:
            return
        fraction = self._load.fraction
        self.bar.setValue(int(fraction * 1000))
        self.label.setText(f"reading {self.script}: {fraction:.0%} · {events:,} events")

    def set_phase(self, phase: str) -> None:
        """A phase the runner announced (``python``, ``torch``) before the script starts."""
        self.phase = phase
        self.label.setText(f"{PHASES.get(phase, phase)} for {self.script}…")

    def update_run(self, run: Run, steps: int) -> None:
        """The run grew: what it is running now, and how many events came so far."""
        if run.start is None or self._load is not None:
            return
        n = len(run.events)
        count = f"{n:,} event{'' if n == 1 else 's'}"
        if run.end is not None:
            text = f"drawing {self.script}: {count}"
        elif run.mode == "step" and run.steps:
            text = f"running {self.script}: step {run.steps[-1]['step']} of {steps} · {count}"
        elif run.mode == "step":  # the module's top level: the model is being built
            text = f"running {self.script}: its top level, then {steps} step{'' if steps == 1 else 's'} · {count}"
        else:
            text = f"running {self.script} · {count}"
        self.label.setText(text)

    def finish(self) -> None:
        """The run has ended and is drawn (or another one replaced it)."""
        self._load = None
        self.bar.setRange(0, 0)
        self.cancel.hide()
        self.label.setText("")
        self.hide()
