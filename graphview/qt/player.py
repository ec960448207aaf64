"""Player: play / pause the timeline, and the pulses that carry gradients along edges while it plays."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QSlider

from graphview.qt.canvas import GraphScene, first_drawn
from graphview.qt.formatting import short_value
from graphview.qt.session import Session


class Player(QObject):
    """Steps the session's cursor forward on a timer, ``speed`` steps a second, as Step (→) does
    (a run of stops where the canvas draws nothing goes by in one step); ``scene`` shows the
    pulses, ``keep_in_view`` scrolls the canvas to the cursor's node after each step.

    Attributes
    ----------
    speed : QSlider
        Steps per second (1 to 60); the window puts it on the stepping toolbar.
    """

    def __init__(self, session: Session, scene: GraphScene, keep_in_view: Callable[[], None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.scene = scene
        self.keep_in_view = keep_in_view
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
        run, cursor = self.session.run, self.session.cursor
        if run is not None and cursor >= len(run.events) - 1:
            self.session.set_cursor(0)  # at the end: play from the start
        self.timer.start(int(1000 / self.speed.value()))

    def stop(self) -> None:
        self.timer.stop()

    def _on_speed(self, value: int) -> None:
        if self.timer.isActive():
            self.timer.start(int(1000 / value))

    def _tick(self) -> None:
        session = self.session
        run = session.run
        if run is None or session.cursor >= len(run.events) - 1:
            self.timer.stop()
            return
        session.follow_live = False
        first_drawn.step(self.scene, run, session.cursor, True, self.step_to)  # past what draws nothing
        self.keep_in_view()

    def step_to(self, index: int) -> None:
        """Move the cursor to event ``index``, with pulses for the gradients sent on the way forward."""
        previous = self.session.cursor
        self.session.set_cursor(index)
        if previous < self.session.cursor:
            self.animate(previous, self.session.cursor)

    def animate(self, start: int, end: int) -> None:
        """Pulses for the gradients sent by nodes that finished between two cursor positions."""
        run = self.session.run
        duration = int(900 / max(1, self.speed.value()))
        for i in range(start + 1, end + 1):
            ev = run.events[i]
            if ev.get("ev") != "bw_node_done":
                continue
            op = run.op_nodes.get(ev["vid"])
            if op is None:
                continue
            texts = [short_value(g) if g is not None else "" for g in ev.get("grads_out") or []]
            self.scene.pulse(op.id, [t for t in texts if t][:1], duration)
