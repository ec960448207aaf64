"""The halo: a ring of fixed size on screen that marks the cursor's node at a zoom too small to read
(readable, the node's own look marks it)."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QGraphicsView

from graphview.qt.canvas.style import colors
from graphview.qt.canvas.view_fit import WHOLE_SLACK, readable_scale

#: the radius, in screen pixels, of the halo that marks the cursor's node at a zoom too small to read
HALO_RADIUS = 24


class Halo:
    """The halo of ``view`` (its scene a :class:`~graphview.qt.canvas.scene.GraphScene`) around the
    node of the event ``cursor()`` says."""

    def __init__(self, view: QGraphicsView, cursor: Callable[[], int]) -> None:
        self._view = view
        self._cursor = cursor
        self._drawn: QRectF | None = None  # where the halo was last painted (viewport pixels)

    def rect(self) -> QRectF | None:
        """Where the halo is drawn, in viewport pixels: only at a zoom too small to read, of the
        same size on screen whatever the zoom; None when it is not drawn."""
        view = self._view
        scene = view.scene()
        if scene is None or view.transform().m11() >= readable_scale(view.logicalDpiY()) * WHOLE_SLACK:
            return None
        where = scene.place_at_event(self._cursor())
        if where is None:
            return None
        centre = QPointF(view.mapFromScene(where.center()))
        reach = HALO_RADIUS + 3  # (its pen)
        return QRectF(centre.x() - reach, centre.y() - reach, 2 * reach, 2 * reach)

    def color(self) -> QColor:
        """Orange, as a running node, in backward (from the moment a backward call starts to its
        end); the selection's blue at a forward op."""
        run = self._view.scene().run
        index = self._cursor()
        ev = run.events[index] if run is not None and 0 <= index < len(run.events) else {}
        c = colors()
        return c.q("running_border") if str(ev.get("ev", "")).startswith(("bw_", "accumulate", "backward_")) else c.q("selection")

    def paint(self, painter: QPainter) -> None:
        halo = self.rect()
        self._drawn = halo
        if halo is None:
            return
        color = self.color()
        fill = QColor(color)
        fill.setAlpha(70)
        centre = halo.center()
        painter.save()
        painter.resetTransform()  # in screen pixels: the same size at any zoom
        painter.setRenderHint(QPainter.Antialiasing, True)
        painter.setBrush(fill)
        painter.setPen(QPen(colors().q("background"), 5))  # apart from the edges under it
        painter.drawEllipse(centre, HALO_RADIUS, HALO_RADIUS)
        painter.setBrush(Qt.NoBrush)
        painter.setPen(QPen(color, 3))
        painter.drawEllipse(centre, HALO_RADIUS, HALO_RADIUS)
        painter.restore()

    def moved(self) -> None:
        """The cursor moved: repaint where the halo was and where it goes."""
        port = self._view.viewport()
        for rect in (self._drawn, self.rect()):
            if rect is not None:
                port.update(rect.toAlignedRect().adjusted(-2, -2, 2, 2))
