"""GraphView: the canvas's view, zoom (wheel, +/-), pan (drag) and the context menu; its parts do the rest.

One mechanism per module: :mod:`~graphview.qt.canvas.view_fit` (the readable zoom and the fits),
:mod:`~graphview.qt.canvas.follow` (following the cursor's node, a box kept in place as it opens),
:mod:`~graphview.qt.canvas.view_region` (which items a big graph has around the view),
:mod:`~graphview.qt.canvas.halo` (the cursor's node marked at a tiny zoom),
:mod:`~graphview.qt.canvas.canvas_notes` (what an empty canvas says), :mod:`~graphview.qt.canvas.node_menu`
(the context menu) and :mod:`~graphview.qt.canvas.overview` (the minimap). Each is a plain part
that gets the view; the view, a QObject, owns the signals and timers they use.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QGraphicsView

from graphview.core.run import Run
from graphview.qt.canvas import canvas_notes
from graphview.qt.canvas.canvas_notes import START_HINT
from graphview.qt.canvas.follow import Follow
from graphview.qt.canvas.halo import Halo
from graphview.qt.canvas.node_menu import item_menu
from graphview.qt.canvas.overview import Overview
from graphview.qt.canvas.scene import GraphScene
from graphview.qt.canvas.view_fit import ViewFit
from graphview.qt.canvas.view_region import RegionFollow
from graphview.qt.theme_changes import changes

__all__ = ["START_HINT", "GraphView"]


class GraphView(QGraphicsView):
    """Zoom (wheel, +/-), pan (drag), fit (F), zoom to selection (Z), context menu."""

    sigDetachRequested = Signal(str)
    sigGradcheckRequested = Signal(str)
    sigCheckpointRequested = Signal(str)  # a module path or pattern to re-run under checkpoint
    sigShownChanged = Signal()  # a step, a zoom, a box opened or shut: what the view shows is not what it was

    def __init__(self, scene: GraphScene, parent=None) -> None:
        super().__init__(scene, parent)
        self.setRenderHints(QPainter.Antialiasing | QPainter.TextAntialiasing)
        self.setDragMode(QGraphicsView.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.SmartViewportUpdate)
        self.setCacheMode(QGraphicsView.CacheBackground)
        self.setOptimizationFlag(QGraphicsView.DontSavePainterState, True)
        self.setMinimumSize(300, 200)
        self.message = ""
        self.cursor_index = -1  # the session's cursor: the overview keeps clear of its node
        self.follows_cursor = True  # View > Follow the current node: stepping keeps it in view
        self.overview = Overview(self)
        self.region_follow = RegionFollow(self)
        self.region_follow.widen.timeout.connect(lambda: self.update_region(widen=True))
        self.fitting = ViewFit(self, self.region_follow, lambda: self.cursor_index)
        self.follow = Follow(self, self.fitting, lambda: self.cursor_index)
        self.halo = Halo(self, lambda: self.cursor_index)
        scene.boxes.sigRelaying.connect(lambda at: self.follow.box_relaying(at))
        scene.boxes.sigRelaid.connect(lambda *moved: self.follow.box_relaid(*moved))
        scene.boxes.sigRelaid.connect(lambda *_: self.sigShownChanged.emit())
        scene.sceneRectChanged.connect(self._scene_grew)
        for bar in (self.horizontalScrollBar(), self.verticalScrollBar()):
            bar.valueChanged.connect(lambda *_: self.update_region())  # (not the bar's value as ``widen``)
            bar.rangeChanged.connect(lambda *_: self.update_region())
        changes().changed.connect(self.apply_theme)
        # the zoom and fit keys (F, Z, Ctrl +/-) belong to the window's View menu: the same keys
        # here as well would make Qt refuse both as ambiguous

    # the SessionView protocol: the view itself only keeps its message and minimap current
    def set_run(self, run: Run) -> None:
        self.set_message("")
        self.setSceneRect(QRectF())  # the new run's scene, not what a fit widened for the last one

    def set_cursor(self, index: int) -> None:
        moved, self.cursor_index = index != self.cursor_index, index
        if self.message:  # (it may say where the cursor is)
            self.viewport().update()
        self.halo.moved()
        self.overview.schedule()
        self.overview.sync()
        if moved:
            self.sigShownChanged.emit()

    def set_overview_enabled(self, enabled: bool) -> None:
        self.overview.enabled = enabled
        self.overview.sync()

    def apply_theme(self, theme=None) -> None:
        """The theme changed: the cached background goes, the minimap is pictured again."""
        self.resetCachedContent()
        self.overview.apply_theme()
        self.viewport().update()

    # ------------------------------------------------------------------ what is painted over the graph
    def set_message(self, text: str) -> None:
        """A note drawn in the middle of an empty canvas (a run that failed before any op)."""
        self.message = text
        self.viewport().update()

    def drawForeground(self, painter, rect) -> None:
        super().drawForeground(painter, rect)
        self.halo.paint(painter)
        if not self.message_drawn():
            canvas_notes.paint_graph_gone(self, painter)
            return
        canvas_notes.paint_message(self, painter, self.shown_message(), hint=self.message == START_HINT)

    def message_drawn(self) -> bool:
        """Whether the canvas draws its message (:meth:`shown_message`): only while it draws
        nothing else. A shut box with a tensor inside counts (a GPT-2's constructor writing its
        first weight: its box was drawn under "Nothing to draw yet at event 10")."""
        scene = self.scene()
        return bool(self.message) and not any(item.isVisible() for item in scene.node_items.values()) \
            and not scene.shown_anything()  # (the sketch of a big run, a shut box: nodes without an item)

    def shown_message(self) -> str:
        """The note on the empty canvas: the start hint says where the cursor is once it moved on."""
        drawing = self.scene().drawing
        if drawing is None:
            return canvas_notes.shown_message(self.message, self.cursor_index, None)
        events, cursor = drawing.run.events, self.cursor_index
        ended = 0 <= cursor == len(events) - 1 and events.kind(cursor) == "run_end"
        return canvas_notes.shown_message(self.message, cursor, len(events), ended)

    def halo_rect(self) -> QRectF | None:
        """Where the halo that marks the cursor's node is drawn (:meth:`Halo.rect`)."""
        return self.halo.rect()

    # ------------------------------------------------------------------ zoom and the items around the view
    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.overview.follow_canvas_size()

    def update_region(self, widen: bool = False) -> None:
        """The view scrolled, zoomed or was resized: the items around it (:class:`RegionFollow`)."""
        self.region_follow.update(widen)

    def setTransform(self, *args, **kwargs) -> None:
        super().setTransform(*args, **kwargs)
        self.update_region()

    def scale(self, sx: float, sy: float) -> None:
        super().scale(sx, sy)
        self.update_region()

    def resetTransform(self) -> None:
        super().resetTransform()
        self.update_region()

    def wheelEvent(self, event) -> None:
        factor = 1.15 if event.angleDelta().y() > 0 else 1 / 1.15
        self.zoom(factor)

    def zoom(self, factor: float) -> None:
        scale = self.transform().m11() * factor
        if 0.02 <= scale <= 6:
            self.scale(factor, factor)
            self.sigShownChanged.emit()

    def zoom_to_selection(self) -> None:
        items = self.scene().selectedItems()
        if items:
            rect = items[0].sceneBoundingRect()
            for item in items[1:]:
                rect = rect.united(item.sceneBoundingRect())
            self.fitInView(rect.adjusted(-200, -150, 200, 150), Qt.KeepAspectRatio)

    # ------------------------------------------------------------------ fits (:class:`ViewFit`)
    def readable_scale(self) -> float:
        """The smallest readable zoom on this screen (:func:`~graphview.qt.canvas.view_fit.readable_scale`)."""
        return self.fitting.readable_scale()

    def fits_readable(self, rows: int, columns: int) -> bool:
        """Whether a layout of ``rows`` x ``columns`` cells fits the canvas with names readable."""
        return self.fitting.readable_fit()(rows, columns)

    def readable_fit(self):
        """:meth:`fits_readable` as it is now, as a function that asks Qt nothing (a thread may call it)."""
        return self.fitting.readable_fit()

    def fit(self, whole: bool = False) -> bool:
        """View > Fit to window (:meth:`ViewFit.fit`); whether it shows the whole graph."""
        return self.fitting.fit(whole=whole)

    def showing_fit_width(self) -> bool:
        """Whether the view is as a fit showing only the graph's width left it (:meth:`ViewFit.showing_fit_width`)."""
        return self.fitting.showing_fit_width()

    def fit_readable(self) -> None:
        """What the window shows by itself after opening or finishing a run (:meth:`ViewFit.fit_readable`)."""
        self.fitting.fit_readable()

    def center_view_on(self, point: QPointF) -> None:
        """Centre the view on ``point``, past the scene's edge where that takes (:meth:`ViewFit.center_on`)."""
        self.fitting.center_on(point)

    def change_level(self, delta: int | None) -> None:
        """View > Open / shut module boxes one level (``delta`` 1 / -1), or open every box (None); then fit."""
        self.scene().boxes.change_level(delta)
        self.fitting.fit(pressed=False)
        self.overview.schedule()
        self.sigShownChanged.emit()

    # ------------------------------------------------------------------ following (:class:`Follow`)
    def follow_cursor(self) -> None:
        """Stepping: keep the cursor's node in view, at a zoom where it reads (:meth:`Follow.cursor_node`)."""
        self.follow.cursor_node()

    def set_follows_cursor(self, on: bool) -> None:
        """View > Follow the current node: whether stepping keeps the cursor's node in view."""
        self.follows_cursor = on

    def center_on_node(self, node_id: str) -> None:
        """Centre on a node, opening the shut module boxes that hide it."""
        self.scene().reveal([node_id])
        where = self.scene().place_of(node_id) if node_id in self.scene()._taken else None
        if where is not None:
            self.centerOn(QPointF(*where))

    def _scene_grew(self, rect: QRectF) -> None:
        if not self.sceneRect().contains(rect) and self.sceneRect() != rect:
            self.setSceneRect(self.sceneRect().united(rect))

    def contextMenuEvent(self, event) -> None:
        menu = item_menu(self, self.itemAt(event.pos()), self.scene().run)
        if menu is not None:
            menu.exec(event.globalPos())
