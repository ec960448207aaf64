"""RunProgress: what a live run is doing, in the status bar, with a busy bar while it works.

A runner first starts Python, then imports torch (the runner's ``phase`` event says so), then
runs the script (``run_start``), a step script step by step (``step_start``); the events taken in
so far are counted. When the run has ended and is drawn, the words give way to the run's summary.
"""

from __future__ import annotations

import os

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QWidget

from graphview.core.run import Run

#: the words for each phase a runner announces before the script starts
PHASES = {"python": "starting Python", "torch": "importing torch"}


class RunProgress(QWidget):
    """A label and a busy bar for the status bar; hidden while no run is in progress."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 6, 0)
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)  # busy: how long a script runs is unknown
        self.bar.setTextVisible(False)
        self.bar.setFixedSize(90, 12)
        self.label = QLabel("")
        layout.addWidget(self.bar)
        layout.addWidget(self.label)
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

    def set_phase(self, phase: str) -> None:
        """A phase the runner announced (``python``, ``torch``) before the script starts."""
        self.phase = phase
        self.label.setText(f"{PHASES.get(phase, phase)} for {self.script}…")

    def update_run(self, run: Run, steps: int) -> None:
        """The run grew: what it is running now, and how many events came so far."""
        if run.start is None:
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
        self.label.setText("")
        self.hide()
