"""Overview: the minimap in a corner of the canvas, the visible area marked; click to move there.

It sits in the bottom-right corner at first, and stays in its corner while that covers none of the
nodes being shown (the node of the cursor's event, the selection); else it moves to the free corner
that covers the least of the nodes drawn, and stays there (:mod:`overview_place`). It is hidden
when every corner would cover a node being shown.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, Qt, QTimer
from PySide6.QtGui import QPainter, QPen, QPixmap
from PySide6.QtWidgets import QGraphicsView, QWidget
from shiboken6 import isValid

from graphview.qt.canvas.overview_place import corner_menu, drawn_area, pick_corner
from graphview.qt.canvas.style import colors, overview_colors, painted_in


class Overview(QWidget):
    """A minimap of the whole graph (a picture redrawn when the graph changes) with the main
    view's visible area marked; click or drag to move there.

    ``view`` is the canvas's :class:`~graphview.qt.canvas.view.GraphView`, which makes it: the
    overview reads its scene, scroll bars and ``cursor_index`` (the node it keeps clear of), and
    imports nothing of it."""

    def __init__(self, view: QGraphicsView) -> None:
        super().__init__(view)
        self.view = view
        self.setFixedSize(170, 120)
        self.enabled = True  # View > Overview in the corner
        self.pixmap: QPixmap | None = None
        self.source = QRectF()
        self.corner: int | None = None  # the index of the corner it sits in (of corners()), kept while stepping
        self.setCursor(Qt.PointingHandCursor)
        self.setToolTip("overview: click to move the view; right-click to put it in another corner")
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(300)
        self._timer.timeout.connect(self.redraw)
        for bar in (view.horizontalScrollBar(), view.verticalScrollBar()):
            bar.valueChanged.connect(self.sync)
            bar.rangeChanged.connect(self.sync)
        view.scene().selectionChanged.connect(self.sync)  # a selected node must stay uncovered

    MARGIN = 8

    def sync(self) -> None:
        """Shown only while part of the graph is out of view, in a corner where it covers no node
        being shown; the marked area follows the view."""
        if self.pixmap is None or not self.enabled:
            self.setVisible(False)
            return
        visible = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
        corner = self.free_corner()
        if corner is not None:
            self.move(corner)
        self.setVisible(corner is not None and not visible.contains(self.source.adjusted(30, 30, -30, -30)))
        self.update()

    def corners(self) -> list[QPoint]:
        """Where the minimap may sit, in the viewport, in order of preference: bottom right,
        bottom left, top right, top left."""
        area = self.view.viewport().rect()
        right = area.width() - self.width() - self.MARGIN
        bottom = area.height() - self.height() - self.MARGIN
        return [QPoint(right, bottom), QPoint(self.MARGIN, bottom), QPoint(right, self.MARGIN),
                QPoint(self.MARGIN, self.MARGIN)]

    def free_corner(self) -> QPoint | None:
        """The corner to sit in: the one it sits in while that covers none of the nodes being
        shown, else the free one covering least of the nodes drawn; None where none is free."""
        corners = self.corners()
        boxes = [QRect(corner, self.size()).adjusted(-4, -4, 4, 4) for corner in corners]
        picked = pick_corner(boxes, self.shown_rects(), self.corner, lambda box: drawn_area(self.view, box))
        if picked is None:
            return None
        self.corner = picked
        return corners[picked]

    def shown_rects(self) -> list[QRect]:
        """The viewport rects of the nodes being shown: the cursor's node and the selected ones."""
        scene = self.view.scene()
        if scene is None or not isValid(scene):  # the window is being taken down
            return []
        rects = [i.sceneBoundingRect() for i in scene.selectedItems() if i.isVisible()]
        # (where the cursor's node is drawn, found without making an item for it out of the view)
        at_cursor = scene.place_at_event(self.view.cursor_index) if hasattr(scene, "place_at_event") else None
        if at_cursor is not None:
            rects.append(at_cursor)
        return [self.view.mapFromScene(rect).boundingRect() for rect in rects]

    def apply_theme(self) -> None:
        """The theme changed: picture the graph again in its colours."""
        if self.pixmap is not None and self.view.scene() is not None:
            self.redraw()
        self.update()

    def follow_canvas_size(self) -> None:
        """The canvas was resized: the minimap takes a fifth of its width at most (on a small window
        it must not hide the graph), placed in a corner clear of the nodes being shown."""
        width = int(max(90, min(170, self.view.viewport().width() * 0.2)))
        if width != self.width():
            self.setFixedSize(width, int(width * 0.7))
            self.pixmap = None
            self.schedule()
        self.sync()

    def schedule(self) -> None:
        if self.pixmap is None:
            self.redraw()  # the first picture at once; later ones when changes settle
        else:
            self._timer.start()

    def redraw(self) -> None:
        scene = self.view.scene()
        if scene is None:  # a view that outlived its scene: its timer may still fire
            return
        if scene.boxes.gliding:  # (a picture of nodes mid-way stayed once they came to their places)
            self._timer.start()
            return
        rect = scene.shown_rect()
        self.source = rect.adjusted(-40, -40, 40, 40)
        if rect.isNull():
            self.pixmap = None
            self.sync()
            return
        pixmap = QPixmap(self.size())
        pixmap.fill(Qt.transparent)  # over the minimap's own backdrop (paintEvent)
        painter = QPainter(pixmap)
        s, ox, oy = self._scale()  # the same mapping the marked area and clicks use
        try:  # (the items read the colours as they paint: the picture's own, for now)
            with painted_in(overview_colors(colors())):
                scene.render(painter, QRectF(ox, oy, self.source.width() * s, self.source.height() * s), self.source,
                             Qt.IgnoreAspectRatio)
        finally:
            painter.end()
        self.pixmap = pixmap
        self.sync()

    def _scale(self) -> tuple[float, float, float]:
        s = min(self.width() / max(1.0, self.source.width()), self.height() / max(1.0, self.source.height()))
        ox = (self.width() - self.source.width() * s) / 2
        oy = (self.height() - self.source.height() * s) / 2
        return s, ox, oy

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        c = colors()
        painter.fillRect(self.rect(), c.q("overview_fill"))
        if self.pixmap is not None:
            painter.drawPixmap(0, 0, self.pixmap)
        painter.setPen(QPen(c.q("overview_border"), 1))
        painter.drawRect(self.rect().adjusted(0, 0, -1, -1))
        if self.pixmap is None:
            return
        s, ox, oy = self._scale()
        visible = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
        r = QRectF(ox + (visible.left() - self.source.left()) * s, oy + (visible.top() - self.source.top()) * s,
                   visible.width() * s, visible.height() * s)
        painter.setPen(QPen(c.q("overview_mark"), 1.5))
        painter.setBrush(c.q("overview_mark_fill"))
        # within the frame, its own outline whole: where the view shows space beyond the graph, the
        # mark stops at the frame instead of running its line over (and past) the frame's
        painter.drawRect(r.intersected(QRectF(self.rect()).adjusted(1.5, 1.5, -2, -2)))

    def _jump(self, pos) -> None:
        s, ox, oy = self._scale()
        if s > 0:
            self.view.centerOn(QPointF(self.source.left() + (pos.x() - ox) / s, self.source.top() + (pos.y() - oy) / s))

    def put_in_corner(self, index: int) -> None:
        """The user's corner (of :meth:`corners`): kept while it covers no node being shown."""
        self.corner = index
        self.sync()

    def contextMenuEvent(self, event) -> None:
        corner_menu(self, self.put_in_corner).exec(event.globalPos())

    def mousePressEvent(self, event) -> None:
        if event.button() == Qt.LeftButton:
            self._jump(event.position())

    def mouseMoveEvent(self, event) -> None:
        if event.buttons() & Qt.LeftButton:
            self._jump(event.position())
