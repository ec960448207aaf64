"""GraphView: zoom, pan, fit, the empty-canvas message and the node context menu."""

from __future__ import annotations

from contextlib import contextmanager

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QGraphicsView, QMenu

from graphview.core.drawing import LAYER_HEIGHT, SLOT_WIDTH
from graphview.core.run import Run
from graphview.core.whatif import RECOMPUTE_MODULE

from graphview.qt.canvas.groups import GroupItem
from graphview.qt.canvas.nodes import NodeItem
from graphview.qt.canvas.overview import Overview
from graphview.qt.canvas.scene import VIRTUAL_ABOVE, GraphScene
from graphview.qt.canvas.style import NODE_H, NODE_W, SMALLEST_TEXT_PT, colors

#: what the empty canvas says at the start of a run
START_HINT = ("The start of the run (event 0).\nStep forward (→) to watch autograd build the graph op by op; "
              "End jumps to the end of the run.")
#: what it says once the cursor has left event 0 with nothing to draw yet (GPT-2's constructor: 60 ops)
NOTHING_YET = ("Nothing to draw yet at event {index} / {last}: a tensor is drawn once an op uses it (what a "
               "model's constructor makes waits for the forward that uses it).\nStep forward (→) goes on op by op; "
               "Next step (Shift+→) and To backward skip ahead.")
#: the room fit leaves around what it shows
FIT_MARGIN = 40
#: the largest zoom a fit takes (a tiny graph is not blown up)
FIT_LARGEST = 1.4
#: below this zoom a big graph has no items at all: its sketch draws it (no text could be read)
SKETCH_BELOW = 0.3
#: after a jump, items are made around what is seen only once the view has rested this long
WIDEN_AFTER_MS = 120
#: the radius, in screen pixels, of the halo that marks the cursor's node at a zoom too small to read
HALO_RADIUS = 24
#: the room, in screen pixels, following keeps between the cursor's node and the canvas's edges
FOLLOW_MARGIN = (60, 40)


class GraphView(QGraphicsView):
    """Zoom (wheel, +/-), pan (drag), fit (F), zoom to selection (Z), context menu."""

    sigDetachRequested = Signal(str)
    sigGradcheckRequested = Signal(str)
    sigCheckpointRequested = Signal(str)  # a module path or pattern to re-run under checkpoint

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
        self._halo_drawn: QRectF | None = None  # where the halo was last painted (viewport pixels)
        self.overview = Overview(self)
        self._widen = QTimer(self)  # a jump made items only for what is seen: the margin comes at rest
        self._widen.setSingleShot(True)
        self._widen.setInterval(WIDEN_AFTER_MS)
        self._widen.timeout.connect(lambda: self.update_region(widen=True))
        self._box_on_screen: QPointF | None = None  # where the box being opened or shut was on screen
        self._region_held = 0  # inside a fit: the items near the view are made once, where it ends
        scene.boxes.sigRelaying.connect(lambda at: setattr(self, "_box_on_screen", QPointF(self.mapFromScene(at))))
        scene.boxes.sigRelaid.connect(self._keep_box_in_place)
        scene.sceneRectChanged.connect(self._scene_grew)
        for bar in (self.horizontalScrollBar(), self.verticalScrollBar()):
            bar.valueChanged.connect(lambda *_: self.update_region())  # (not the bar's value as ``widen``)
            bar.rangeChanged.connect(lambda *_: self.update_region())
        from graphview.qt.theme import changes  # here: the theme module imports the canvas's colours

        changes().changed.connect(self.apply_theme)
        # the zoom and fit keys (F, Z, Ctrl +/-) belong to the window's View menu: the same keys
        # here as well would make Qt refuse both as ambiguous

    # the SessionView protocol: the view itself only keeps its message and minimap current
    def set_run(self, run: Run) -> None:
        self.set_message("")
        self.setSceneRect(QRectF())  # the new run's scene, not what a fit widened for the last one

    def set_cursor(self, index: int) -> None:
        self.cursor_index = index
        if self.message:  # (it may say where the cursor is)
            self.viewport().update()
        self._move_halo()
        self.overview.schedule()
        self.overview.sync()

    def set_overview_enabled(self, enabled: bool) -> None:
        self.overview.enabled = enabled
        self.overview.sync()

    def apply_theme(self, theme=None) -> None:
        """The theme changed: the cached background goes, the minimap is pictured again."""
        self.resetCachedContent()
        self.overview.apply_theme()
        self.viewport().update()

    def set_message(self, text: str) -> None:
        """A note drawn in the middle of an empty canvas (a run that failed before any op)."""
        self.message = text
        self.viewport().update()

    def drawForeground(self, painter, rect) -> None:
        super().drawForeground(painter, rect)
        self._draw_halo(painter)
        scene = self.scene()
        if not self.message or any(item.isVisible() for item in scene.node_items.values()) \
                or (scene.virtual and scene.shown_anything()):  # the sketch draws what has no item
            self._draw_graph_gone(painter)
            return
        painter.save()
        painter.resetTransform()
        area = QRectF(self.viewport().rect()).adjusted(40, 40, -40, -40)
        painter.setPen(colors().q("message"))
        painter.setFont(QFont("DejaVu Sans", 11))
        painter.drawText(area, Qt.AlignCenter | Qt.TextWordWrap, self.shown_message())
        painter.restore()

    def shown_message(self) -> str:
        """The note on the empty canvas: the start hint says where the cursor is once it moved on."""
        if self.message == START_HINT and self.cursor_index > 0:
            drawing = self.scene().drawing
            last = len(drawing.run.events) - 1 if drawing is not None else self.cursor_index  # (as the timeline counts)
            return NOTHING_YET.format(index=self.cursor_index, last=last)
        return self.message

    # ------------------------------------------------------------------ the halo
    def halo_rect(self) -> QRectF | None:
        """Where the halo that marks the cursor's node is drawn, in viewport pixels: only at a
        zoom too small to read (the node's own look marks it otherwise), of the same size on
        screen whatever the zoom; None when it is not drawn."""
        scene = self.scene()
        if scene is None or self.transform().m11() >= self.readable_scale():
            return None
        where = scene.place_at_event(self.cursor_index)
        if where is None:
            return None
        centre = QPointF(self.mapFromScene(where.center()))
        reach = HALO_RADIUS + 3  # (its pen)
        return QRectF(centre.x() - reach, centre.y() - reach, 2 * reach, 2 * reach)

    def _halo_color(self) -> QColor:
        """Orange, as a running node, in backward; the selection's blue at a forward op."""
        run = self.scene().run
        ev = run.events[self.cursor_index] if run is not None and 0 <= self.cursor_index < len(run.events) else {}
        c = colors()
        return c.q("running_border") if str(ev.get("ev", "")).startswith(("bw_", "accumulate")) else c.q("selection")

    def _draw_halo(self, painter) -> None:
        halo = self.halo_rect()
        self._halo_drawn = halo
        if halo is None:
            return
        color = self._halo_color()
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

    def _move_halo(self) -> None:
        """The cursor moved: repaint where the halo was and where it goes."""
        port = self.viewport()
        for rect in (self._halo_drawn, self.halo_rect()):
            if rect is not None:
                port.update(rect.toAlignedRect().adjusted(-2, -2, 2, 2))

    def _draw_graph_gone(self, painter) -> None:
        """Between steps and after the run, autograd holds no graph: only leaves are left, spread
        over the rows their graph took. A note says why the canvas is nearly empty, where it hides
        no node (at the top, else at the bottom, else in a corner)."""
        gone = self.scene().graph_gone_at()
        if gone is None:
            return
        text = (f"No autograd graph at this point: the last one was destroyed at event {gone} "
                "(nothing referenced its output any more). Leaves keep their .grad; step back (←) to see the graph.")
        painter.save()
        painter.resetTransform()
        font = QFont("DejaVu Sans", 9)
        painter.setFont(font)
        port = QRectF(self.viewport().rect())
        width = min(port.width() - 40, 440.0)
        height = QFontMetricsF(font).boundingRect(QRectF(0, 0, width - 20, 400), Qt.TextWordWrap, text).height() + 12
        # where it hides no node (its leaves sit all over the rows their graph took): top, bottom, corners
        xs = (port.center().x() - width / 2, 10.0, port.width() - width - 10)
        places = [QRectF(x, y, width, height) for x in xs for y in (10.0, port.height() - height - 10)]
        note = next((place for place in places if not any(
            item.isVisible() and (isinstance(item, NodeItem) or isinstance(item, GroupItem) and item.collapsed)
            for item in self.items(place.toRect()))), places[0])
        c = colors()
        painter.setPen(QPen(c.q("group_border"), 1))
        painter.setBrush(c.q("overview_fill"))
        painter.drawRoundedRect(note, 6, 6)
        painter.setPen(c.q("group_label"))
        painter.drawText(note.adjusted(10, 6, -10, -6), Qt.AlignCenter | Qt.TextWordWrap, text)
        painter.restore()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        # a fifth of the canvas at most: on a small window the overview must not hide the graph
        width = int(max(90, min(170, self.viewport().width() * 0.2)))
        if width != self.overview.width():
            self.overview.setFixedSize(width, int(width * 0.7))
            self.overview.pixmap = None
            self.overview.schedule()
        self.overview.sync()  # placed in a corner clear of the nodes being shown

    def update_region(self, widen: bool = False) -> None:
        """A big graph makes items only where this view looks and around it (a viewport each
        side, so a pan reaches items before it reaches the sketch); zoomed out beyond reading,
        none at all. Called as the view scrolls, zooms or resizes.

        A jump (a view that lands clear of every item: an overview click, a search hit, a long
        scroll) first makes the items of what is seen and a quarter viewport around it; the
        rest of the margin comes once the view has rested (``widen``), so a run of jumps pays
        for what each shows, not for nine viewports each."""
        scene = self.scene()
        if scene is None or len(scene._placed) <= VIRTUAL_ABOVE or self._region_held:
            return
        if self.transform().m11() < SKETCH_BELOW:
            if scene.region is None or not scene.region.isEmpty():
                scene.set_region(QRectF())
            return
        seen = self.mapToScene(self.viewport().rect()).boundingRect()
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
            self._widen.start()
            return
        scene.set_region(full)

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

    #: the smallest height of a text on screen, in pixels, that fit and opening a level keep
    READABLE_TEXT_PX = 9.0

    def readable_scale(self) -> float:
        """The smallest readable zoom: the one at which the smallest text on the canvas
        (:data:`SMALLEST_TEXT_PT`: a long name shrunk, subtitles, badges, box labels) is
        READABLE_TEXT_PX high on this screen."""
        return self.READABLE_TEXT_PX / (SMALLEST_TEXT_PT * self.logicalDpiY() / 72.0)

    def fits_readable(self, rows: int, columns: int) -> bool:
        """Whether a layout of ``rows`` x ``columns`` cells fits the canvas with names readable."""
        width = (columns - 1) * SLOT_WIDTH + NODE_W + 2 * FIT_MARGIN
        height = (rows - 1) * LAYER_HEIGHT + NODE_H + 2 * FIT_MARGIN + 30
        viewport = self.viewport()
        return min(viewport.width() / width, viewport.height() / height) >= self.readable_scale()

    def readable_fit(self):
        """:meth:`fits_readable` as it is now, as a function that asks Qt nothing (a thread may call it)."""
        port = self.viewport()
        width, height, scale = port.width(), port.height(), self.readable_scale()

        def fits(rows: int, columns: int) -> bool:
            w = (columns - 1) * SLOT_WIDTH + NODE_W + 2 * FIT_MARGIN
            h = (rows - 1) * LAYER_HEIGHT + NODE_H + 2 * FIT_MARGIN + 30
            return min(width / w, height / h) >= scale

        return fits

    def shown_items(self) -> list:
        """Nodes that have an item and shut module boxes, shown at the cursor."""
        scene = self.scene()
        shown = [i for i in scene.node_items.values() if i.isVisible()]
        shown += [g for g in scene.groups.values() if g.isVisible() and g.collapsed]
        return shown

    @contextmanager
    def _one_region(self):
        """Zooms and scrolls made one after another (a fit): the items near the view are made
        once, for where the view ends up, not at each step (each made and dropped a viewport's items)."""
        self._region_held += 1
        try:
            yield
        finally:
            self._region_held -= 1
            if not self._region_held:
                self.update_region()

    def fit(self) -> None:
        """Show every node shown at the cursor (View > Fit to window), if that reads; else fit
        the graph's width at the smallest readable zoom around the cursor's node (the overview
        in the corner shows the whole)."""
        with self._one_region():
            self._fit()

    def focus_rect(self, fallback: str | None = None) -> QRectF | None:
        """What a view that cannot show the whole graph is centred on, in scene units: the
        cursor's node (the node a backward step runs, the op the cursor made; the shut box that
        holds it), else the selected node, else node ``fallback`` if it is shown."""
        scene = self.scene()
        where = scene.place_at_event(self.cursor_index)
        if where is not None:
            return where
        selected = [item for item in scene.selectedItems() if item.isVisible()]
        if selected:
            return selected[0].sceneBoundingRect()
        if fallback is not None and scene.shown_at_cursor(fallback):
            group = scene.boxes._hidden_by.get(fallback)
            if group is not None:
                return group.sceneBoundingRect()
            where = scene.place_of(fallback)
            if where is not None:
                return QRectF(where[0] - NODE_W / 2, where[1] - NODE_H / 2, NODE_W, NODE_H)
        return None

    def _fit(self, fallback: str | None = None) -> None:
        scene = self.scene()
        scene.boxes.settle()
        self.setSceneRect(QRectF())  # the scene's own rect again (a box kept in place may have widened it)
        rect = scene.shown_rect()
        if rect.isNull():
            rect = scene.sceneRect()
        framed = rect.adjusted(-FIT_MARGIN, -FIT_MARGIN, FIT_MARGIN, FIT_MARGIN)
        readable = self.readable_scale()
        focus = None
        for _ in range(2):  # again if scroll bars came (the rest of the run's graph lies aside): a smaller viewport
            port = self.viewport().rect()
            if port.isEmpty():  # (no room to show anything: nothing to fit)
                return
            zoom = min(port.width() / max(1.0, framed.width()), port.height() / max(1.0, framed.height()),
                       FIT_LARGEST)  # a tiny graph: not blown up
            if zoom >= readable:
                self.resetTransform()
                self.scale(zoom, zoom)
                self.center_view_on(rect.center())
            else:  # the whole would not read: its width at the smallest readable zoom, around the focus
                if focus is None:
                    focus = self.focus_rect(fallback)
                self.resetTransform()
                self.scale(readable, readable)
                self.center_view_on(self._readable_centre(framed, focus, readable))
            if self.viewport().rect() == port:
                break

    def _readable_centre(self, framed: QRectF, focus: QRectF | None, zoom: float) -> QPointF:
        """Where a view at ``zoom`` that cannot show all of ``framed`` is centred: across, the
        middle of the graph if its width fits, else the focus, kept inside the graph; down, the
        focus, kept inside the graph (without a focus: the top, where the graph begins)."""
        half_w = self.viewport().width() / zoom / 2
        half_h = self.viewport().height() / zoom / 2

        def inside(value: float, low: float, high: float, half: float) -> float:
            if high - low <= 2 * half:
                return (low + high) / 2
            return max(low + half, min(high - half, value))

        x = focus.center().x() if focus is not None else framed.center().x()
        y = focus.center().y() if focus is not None else framed.top()
        return QPointF(inside(x, framed.left(), framed.right(), half_w), inside(y, framed.top(), framed.bottom(), half_h))

    def follow_cursor(self) -> None:
        """Stepping: keep the cursor's node (the node a backward step runs, the op the cursor
        made; the shut box holding it) in view, as a debugger follows execution. A view zoomed
        out beyond reading is zoomed to the smallest readable zoom around it; a readable one
        scrolls only when the node is not well inside it (a view the user placed stays)."""
        where = self.scene().place_at_event(self.cursor_index)
        if where is None:
            return
        readable = self.readable_scale()
        if self.transform().m11() < readable:
            with self._one_region():
                self.resetTransform()
                self.scale(readable, readable)
                self.center_view_on(where.center())
            return
        self.ensureVisible(where, *FOLLOW_MARGIN)

    def set_follows_cursor(self, on: bool) -> None:
        """View > Follow the current node: whether stepping keeps the cursor's node in view."""
        self.follows_cursor = on

    def center_view_on(self, point: QPointF) -> None:
        """Centre the view on ``point`` (scene units), scrolling past the scene's edge where that
        takes (what is shown at the cursor may sit to one side of the whole run's graph: clamped
        to the scene, it was drawn off centre); the next fit ends the widening."""
        scale = self.transform().m11()
        # (a pixel short of the viewport each side: a rect the viewport's size brings scroll bars)
        half = QPointF(self.viewport().width() - 2, self.viewport().height() - 2) / (2 * scale)
        self.setSceneRect(self.scene().sceneRect().united(QRectF(point - half, point + half)))
        self.centerOn(point)

    def fit_readable(self) -> None:
        """What the window shows by itself after opening or finishing a run: a finished run too
        big to read at fit first shuts its module boxes down to the deepest level that does;
        then a fit, which reads (around the cursor's node, else the newest node: where the run is)."""
        with self._one_region():
            if self.scene().boxes.open_to_fit(self.readable_fit()):
                self.overview.schedule()
            self._fit(fallback=self.scene().newest_shown())

    def change_level(self, delta: int | None) -> None:
        """View > Open / shut module boxes one level (``delta`` 1 / -1), or open every box (None); then fit."""
        self.scene().boxes.change_level(delta)
        self.fit()
        self.overview.schedule()

    def _keep_box_in_place(self, key: str, before: QPointF, after: QPointF) -> None:
        """A box was opened or shut and the graph laid out again: scroll so that box stays
        where it was on screen, and the rest of the picture around it. The view may scroll past
        the graph's edge for that (a graph smaller than the view would otherwise be centred
        again); the next fit ends it."""
        on_screen, self._box_on_screen = self._box_on_screen, None
        if on_screen is None:
            return
        scale = self.transform().m11()
        middle = QPointF(self.viewport().rect().center())
        centre = after + (middle - on_screen) / scale
        half = QPointF(self.viewport().width(), self.viewport().height()) / (2 * scale)
        self.setSceneRect(self.scene().sceneRect().united(QRectF(centre - half, centre + half)))
        self.centerOn(centre)
        self.overview.schedule()

    def _scene_grew(self, rect: QRectF) -> None:
        if not self.sceneRect().contains(rect) and self.sceneRect() != rect:
            self.setSceneRect(self.sceneRect().united(rect))

    def zoom_to_selection(self) -> None:
        items = self.scene().selectedItems()
        if items:
            rect = items[0].sceneBoundingRect()
            for item in items[1:]:
                rect = rect.united(item.sceneBoundingRect())
            self.fitInView(rect.adjusted(-200, -150, 200, 150), Qt.KeepAspectRatio)

    def center_on_node(self, node_id: str) -> None:
        """Centre on a node, opening the shut module boxes that hide it."""
        self.scene().reveal([node_id])
        where = self.scene().place_of(node_id) if node_id in self.scene()._taken else None
        if where is not None:
            self.centerOn(QPointF(*where))

    def contextMenuEvent(self, event) -> None:
        item = self.itemAt(event.pos())
        if isinstance(item, GroupItem):
            if item.box.setup:
                return  # not a module: nothing to checkpoint
            menu = QMenu(self)
            self._add_checkpoint_actions(menu, item.box.path)
            if not menu.isEmpty():
                menu.exec(event.globalPos())
            return
        if not isinstance(item, NodeItem):
            return
        node = item.node
        menu = QMenu(self)
        specs = []
        run = self.scene().run
        if node.kind == "op" and run is not None:
            oid = next((op["oid"] for _, op in run.ops if op.get("grad_fn") == node.ref), None)
            if oid is not None:
                specs.append((f"Detach here (op {oid}: {node.title})", f"op:{oid}"))
        if node.module:
            specs.append((f"Detach output of module {node.module}", node.module))
        if node.line is not None:
            specs.append((f"Detach every result of line {node.line}", f"line:{node.line}"))
        for text, spec in specs:
            menu.addAction(text, lambda s=spec: self.sigDetachRequested.emit(s))
        if node.kind in ("param", "input_grad") and run is not None and run.tensor_name(node.ref):
            name = run.tensor_name(node.ref)
            menu.addAction(f"Check the gradient of {name} (finite differences, float64)",
                           lambda n=name: self.sigGradcheckRequested.emit(n))
        if node.module:
            self._add_checkpoint_actions(menu, node.module)
        if not menu.isEmpty():
            menu.exec(event.globalPos())

    def _add_checkpoint_actions(self, menu: QMenu, path: str) -> None:
        """Checkpoint the module of ``path`` (and, for a numbered layer, every layer beside it)."""
        if not path or path.startswith(RECOMPUTE_MODULE):
            return
        menu.addAction(f"Checkpoint this module (re-run): {path}", lambda: self.sigCheckpointRequested.emit(path))
        parent, _, last = path.rpartition(".")
        if parent and last.isdigit():
            pattern = f"{parent}.*"
            menu.addAction(f"Checkpoint every {pattern} (re-run)", lambda: self.sigCheckpointRequested.emit(pattern))
