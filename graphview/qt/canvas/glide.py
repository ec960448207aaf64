"""Glide: nodes moving to their new places after a module box opens or shuts.

A plain part of :class:`~graphview.qt.canvas.module_boxes.ModuleBoxes`: its animation is a child
of that QObject (so it goes with the scene), and its end is connected to that QObject's ``settle``,
never to a method of this part (a signal connected to a plain object's method would still fire
while the scene is deleted).
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QEasingCurve, QObject, QPointF, QVariantAnimation

#: how long nodes take to glide to their places after a box opens or shuts
GLIDE_MS = 280


class Glide:
    """The glide of one scene's nodes, from where they were to where the layout has them."""

    def __init__(self, scene, parent: QObject, hidden_by: Callable[[], dict], on_finished: Callable[[], None]) -> None:
        self.scene = scene
        self._parent = parent  # the QObject the animation is a child of
        self._hidden_by = hidden_by  # node id -> the shut box that hides it, now
        self._on_finished = on_finished  # a method of ``parent`` (see the module's note)
        self._animation: QVariantAnimation | None = None
        self._moves: list = []

    @property
    def gliding(self) -> bool:
        return self._animation is not None

    def start(self, old: dict[str, QPointF]) -> None:
        """Glide the nodes in ``old`` (node id -> where it was) from there to where they are now."""
        scene = self.scene
        items = scene.node_items
        # (a big scene drops the items far from the view when the cursor is set again: those just appear)
        moves = [(items[i], start, QPointF(items[i].pos())) for i, start in old.items()
                 if i in items and items[i].isVisible()]
        if not moves:
            return
        edges = {e for item, _, _ in moves for e in scene.edges_into(item.node.id)
                 + scene._edges_from.get(item.node.id, []) if e.isVisible()}
        animation = QVariantAnimation(self._parent)
        animation.setDuration(GLIDE_MS)
        animation.setStartValue(0.0)
        animation.setEndValue(1.0)
        animation.setEasingCurve(QEasingCurve.InOutCubic)

        def step(t) -> None:
            hidden_by = self._hidden_by()
            for item, start, end in moves:
                item.setPos(start + (end - start) * float(t))
            for edge in edges:
                scene.route_edge(edge, hidden_by, moving=True)

        animation.valueChanged.connect(step)
        animation.finished.connect(self._on_finished)
        self._moves = moves
        self._animation = animation
        step(0.0)
        animation.start()

    def settle(self) -> None:
        """End a glide now: every node at its place, every edge routed to it."""
        animation, self._animation = self._animation, None
        if animation is None:
            return
        animation.stop()
        for item, _, end in self._moves:
            item.setPos(end)
        self._moves = []
        scene = self.scene
        hidden_by = self._hidden_by()
        for edge in scene.edge_items:
            if edge.isVisible():
                scene.route_edge(edge, hidden_by, moving=True)
