"""Which items a big graph has as the canvas's view moves: those around what the view shows.

A big drawing makes items only where the view looks and a viewport around it each side (so a pan
reaches items before it reaches the sketch), and none at all zoomed out beyond reading (the sketch,
:mod:`graphview.qt.canvas.sketch`, draws it). :class:`RegionFollow` tells the scene's
:class:`~graphview.qt.canvas.region.ItemRegion` where that is, each time the view scrolls, zooms or
resizes.
"""

from __future__ import annotations

from contextlib import contextmanager

from PySide6.QtCore import QRectF, QTimer
from PySide6.QtWidgets import QGraphicsView

from graphview.qt.canvas.region import VIRTUAL_ABOVE

#: below this zoom a big graph has no items at all: its sketch draws it (no text could be read)
SKETCH_BELOW = 0.3
#: after a jump, items are made around what is seen only once the view has rested this long
WIDEN_AFTER_MS = 120


class RegionFollow:
    """Keeps the scene's item region around what ``view`` shows.

    ``widen`` is a timer, a child of the view, that the view connects to ``update(widen=True)``:
    a jump (a view that lands clear of every item: an overview click, a search hit, a long scroll)
    first makes the items of what is seen and a quarter viewport around it, and the rest of the
    margin once the view has rested, so a run of jumps pays for what each shows, not for nine
    viewports each."""

    def __init__(self, view: QGraphicsView) -> None:
        self._view = view
        self.widen = QTimer(view)
        self.widen.setSingleShot(True)
        self.widen.setInterval(WIDEN_AFTER_MS)
        self._held = 0  # inside a fit: the items near the view are made once, where it ends

    def update(self, widen: bool = False) -> None:
        """Move the scene's item region to what the view shows now (see the class)."""
        view = self._view
        scene = view.scene()
        if scene is None or len(scene._placed) <= VIRTUAL_ABOVE or self._held:
            return
        if view.transform().m11() < SKETCH_BELOW:
            if scene.region is None or not scene.region.isEmpty():
                scene.set_region(QRectF())
            return
        seen = view.mapToScene(view.viewport().rect()).boundingRect()
        region = scene.region
        w, h = seen.width(), seen.height()
        full = seen.adjusted(-w, -h, w, h)
        landed = region is None or region.isEmpty() or not region.intersects(seen)
        if widen:
            if region is not None and not region.isEmpty() and region.contains(full.adjusted(w / 4, h / 4, -w / 4, -h / 4)):
                return  # the margin is there already
        elif region is not None and not region.isEmpty() and region.contains(seen) \
                and region.width() <= seen.width() * 4:
            return  # still well inside what has items
        if landed and not widen:
            scene.set_region(seen.adjusted(-w / 4, -h / 4, w / 4, h / 4))
            self.widen.start()
            return
        scene.set_region(full)

    @contextmanager
    def held(self):
        """Zooms and scrolls made one after another (a fit): the items near the view are made
        once, for where the view ends up, not at each step (each made and dropped a viewport's items)."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held:
                self.update()
