"""Player: play / pause the timeline, and the pulses that carry gradients along edges while it plays."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QSlider

from graphview.core import timeline
from graphview.qt.formatting import short_value

if TYPE_CHECKING:
    from graphview.qt.main_window import MainWindow


class Player(QObject):
    """Steps the window's cursor forward on a timer, ``speed`` steps a second.

    Attributes
    ----------
    speed : QSlider
        Steps per second (1 to 60); the window puts it on the stepping toolbar.
    """

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.timer = QTimer(self)
        self.timer.timeout.connect(self._tick)
        self.speed = QSlider(Qt.Horizontal)
        self.speed.setRange(1, 60)
        self.speed.setValue(6)
        self.speed.setFixedWidth(90)
        self.speed.setToolTip("animation speed: steps per second")
        self.speed.valueChanged.connect(self._on_speed)

    @property
    def playing(self) -> bool:
        return self.timer.isActive()

    def toggle(self) -> None:
        if self.timer.isActive():
            self.timer.stop()
            return
        run, cursor = self.window.run, self.window.cursor
        if run is not None and cursor >= len(run.events) - 1:
            self.window.set_cursor(0)  # at the end: play from the start
        self.timer.start(int(1000 / self.speed.value()))

    def stop(self) -> None:
        self.timer.stop()

    def _on_speed(self, value: int) -> None:
        if self.timer.isActive():
            self.timer.start(int(1000 / value))

    def _tick(self) -> None:
        window = self.window
        run = window.run
        if run is None or window.cursor >= len(run.events) - 1:
            self.timer.stop()
            return
        window.session.follow_live = False
        window.set_cursor(timeline.step_forward(run, window.cursor), animate=True)
        window.keep_in_view()

    def animate(self, start: int, end: int) -> None:
        """Pulses for the gradients sent by nodes that finished between two cursor positions."""
        run = self.window.run
        duration = int(900 / max(1, self.speed.value()))
        for i in range(start + 1, end + 1):
            ev = run.events[i]
            if ev.get("ev") != "bw_node_done":
                continue
            op = run.op_nodes.get(ev["vid"])
            if op is None:
                continue
            texts = [short_value(g) if g is not None else "" for g in ev.get("grads_out") or []]
            self.window.scene.pulse(op.id, [t for t in texts if t][:1], duration)
