"""Fitting the canvas's view: the smallest zoom at which its text reads, View > Fit to window, and
the fit the window makes by itself after opening or finishing a run.

A fit shows every node shown at the cursor if that reads; else it shows the graph's width at the
smallest readable zoom around the cursor's node (the overview in the corner shows the whole), and
Fit pressed again on that view shows the whole graph, small. The window's own fit first shuts
module boxes down to the deepest level that reads at fit.
"""

from __future__ import annotations

from itertools import chain
from typing import Callable

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QGraphicsView

from graphview.core.drawing import LAYER_HEIGHT, SLOT_WIDTH
from graphview.qt.canvas.fit_rect import across_band, fit_rect, fit_rects
from graphview.qt.canvas.groups import solid
from graphview.qt.canvas.style import NODE_H, NODE_W, SMALLEST_TEXT_PT
from graphview.qt.canvas.view_region import RegionFollow

#: the room fit leaves around what it shows
FIT_MARGIN = 40
#: the least room a fit leaves, where FIT_MARGIN's would leave the graph too small to read whole
TIGHT_MARGIN = 8
#: a graph that fits whole at this share of the readable zoom or more is shown whole (its smallest
#: text 7.65 px high, not 9; the names 8.6 px): an 8-row lesson on a laptop's screen (1366x768) fits
#: at 96% of it, and at the readable zoom the window showed its bottom rows alone, its leaf and the
#: .grad the lesson is about out of view; the 9-row transformer sample, its boxes shut, fits at 87%
#: in a 1366x768 window, and at 90% F left its tokens and embed out of view
WHOLE_SLACK = 0.85
#: the largest zoom a fit takes (a tiny graph is not blown up)
FIT_LARGEST = 1.4
#: how far (screen pixels) the view may move after a fit that showed the graph's width, and Fit
#: pressed again still shows the whole graph (a scroll bar that comes or goes moves it by half its width)
WIDTH_FIT_SLACK_PX = 24
#: the smallest height of a text on screen, in pixels, that fit and opening a level keep
READABLE_TEXT_PX = 9.0
#: the smallest zoom Fit pressed again (the whole graph) takes: rows 12 px apart, each node a
#: shape with its edges (a four-layer Llama with every box open at its backward, 41,000 scene units
#: tall, fit whole at 0.014: a one-pixel column); a graph taller shows its part round the cursor
OVERVIEW_SMALLEST = 12.0 / LAYER_HEIGHT


def readable_scale(dpi: float) -> float:
    """The smallest readable zoom on a screen of ``dpi`` dots per inch: the one at which the
    smallest text on the canvas (:data:`SMALLEST_TEXT_PT`: a long name shrunk, subtitles, badges,
    box labels) is READABLE_TEXT_PX high."""
    return READABLE_TEXT_PX / (SMALLEST_TEXT_PT * dpi / 72.0)


def layout_fits(width: float, height: float, scale: float) -> Callable[[int, int], bool]:
    """Whether a layout of ``rows`` x ``columns`` cells fits a viewport of ``width`` x ``height``
    pixels at a zoom of ``scale`` or more, as a function that asks Qt nothing (a thread may call it)."""

    def fits(rows: int, columns: int) -> bool:
        w = (columns - 1) * SLOT_WIDTH + NODE_W + 2 * FIT_MARGIN
        h = (rows - 1) * LAYER_HEIGHT + NODE_H + 2 * FIT_MARGIN + 30
        return min(width / w, height / h) >= scale

    return fits


def readable_centre(framed: QRectF, focus: QRectF | None, half_width: float, half_height: float) -> QPointF:
    """Where a view that shows ``half_width`` x ``half_height`` scene units each side of its centre,
    and cannot show all of ``framed``, is centred: across, the middle of the graph if its width
    fits, else the focus, kept inside the graph; down, the focus, kept inside the graph (without a
    focus: the top, where the graph begins)."""

    def inside(value: float, low: float, high: float, half: float) -> float:
        if high - low <= 2 * half:
            return (low + high) / 2
        return max(low + half, min(high - half, value))

    x = focus.center().x() if focus is not None else framed.center().x()
    y = focus.center().y() if focus is not None else framed.top()
    return QPointF(inside(x, framed.left(), framed.right(), half_width),
                   inside(y, framed.top(), framed.bottom(), half_height))


def whole_zoom(width: float, height: float, rect: QRectF, readable: float) -> float:
    """The zoom at which a viewport of ``width`` x ``height`` pixels shows ``rect`` (scene units)
    whole: with FIT_MARGIN around it (at most FIT_LARGEST: a tiny graph is not blown up); where
    that is below the ``readable`` zoom, with TIGHT_MARGIN, at most the readable zoom, if that is
    WHOLE_SLACK of it or more. Below that, the graph does not read whole at this size."""

    def at(margin: float) -> float:
        return min(width / max(1.0, rect.width() + 2 * margin), height / max(1.0, rect.height() + 2 * margin),
                   FIT_LARGEST)

    zoom = at(FIT_MARGIN)
    if zoom < readable:
        tight = min(readable, at(TIGHT_MARGIN))
        if tight >= WHOLE_SLACK * readable:
            return tight
    return zoom


#: the room a view's edge moved clear of a node keeps from it (scene units: a pixel or two at the
#: readable zoom; one unit was less than a pixel, and a node so cleared was cut by a rounded pixel)
EDGE_ROOM = 3.0


def clear_shift(low: float, high: float, blocks: list[tuple[float, float]], keep: tuple[float, float] | None,
                most: float, bounds: tuple[float, float] | None = None) -> float:
    """How far to move a view that shows ``low`` to ``high`` (scene units, along one axis) so that
    none of ``blocks`` (each from its low to its high end) is cut by its edges: the smallest move
    of at most ``most`` that keeps ``keep`` inside (and the view no further past ``bounds`` than it
    was) and leaves the fewest edges cutting a block, if fewer than now; else 0."""

    def cuts(move: float) -> int:
        return sum(any(a < edge + move < b for a, b in blocks) for edge in (low, high))

    now = cuts(0.0)
    if not now:
        return 0.0
    moves = sorted({edge_move for a, b in blocks for edge in (low, high)
                    for edge_move in (a - edge - EDGE_ROOM, b - edge + EDGE_ROOM) if abs(edge_move) <= most}, key=abs)
    best, fewest = 0.0, now
    for move in moves:
        if keep is not None and not (low + move <= keep[0] and keep[1] <= high + move):
            continue
        if bounds is not None and not (min(low, bounds[0]) <= low + move and high + move <= max(high, bounds[1])):
            continue
        left = cuts(move)
        if left < fewest:
            best, fewest = move, left
            if not left:
                break
    return best


def clear_move(scene, shown: QRectF, focus: QRectF | None, bounds: QRectF | None = None) -> QPointF:
    """How far to move a view that shows ``shown`` (scene units) so that no node or shut box of
    ``scene`` is cut by its edges: :func:`clear_shift` down (by half a row at most) and across (by
    half a column), ``focus`` kept inside, no further past ``bounds`` than it was."""
    blocks = solid_rects(scene)

    def along(low, high, ends) -> float:
        return clear_shift(low(shown), high(shown), [(low(b), high(b)) for b in blocks],
                           (low(focus), high(focus)) if focus is not None else None, ends,
                           (low(bounds), high(bounds)) if bounds is not None else None)

    return QPointF(along(QRectF.left, QRectF.right, SLOT_WIDTH / 2), along(QRectF.top, QRectF.bottom, LAYER_HEIGHT / 2))


def widened(scene_rect: QRectF, target: QRectF, move: QPointF, pixel: float) -> QRectF:
    """``scene_rect`` widened to let a view scroll to ``target`` (moved by ``move`` from where it
    was), along the axes it moved, less a ``pixel`` each side as :meth:`ViewFit.center_on` does:
    a view moved down alone was widened across to where the viewport's rect lay (half a scroll
    bar off the scene's), and a scroll bar came that took 14 px of the canvas after the fit."""
    rect = QRectF(scene_rect)
    if move.x():
        rect = rect.united(QRectF(target.left() + pixel, rect.top(), target.width() - 2 * pixel, rect.height()))
    if move.y():
        rect = rect.united(QRectF(rect.left(), target.top() + pixel, rect.width(), target.height() - 2 * pixel))
    return rect


def solid_rects(scene) -> list[QRectF]:
    """Where the nodes and shut boxes of ``scene`` are drawn, in scene units: a node's body with its
    saved badge, which stands 9 units above it (an edge that fell there cut the badge in half, its
    node out of view), not the room its item keeps for badges it may not have (rows 96 apart leave
    10 units between those, too few for both edges of a view to fall into); a shut box's card."""
    rects = []
    for item in chain(scene.node_items.values(), scene.groups.values()):
        if solid(item):
            if hasattr(item, "node"):
                body = QRectF(-NODE_W / 2, -NODE_H / 2, NODE_W, NODE_H)
                if item.saved > 0:
                    body = body.united(item.saved_badge()[1])
            else:
                body = item.rect
            rects.append(item.mapRectToScene(body))
    return rects


class ViewFit:
    """The fits of ``view``, whose scene is a :class:`~graphview.qt.canvas.scene.GraphScene`;
    ``cursor`` says the session's cursor (the fit keeps its node in view)."""

    def __init__(self, view: QGraphicsView, region: RegionFollow, cursor: Callable[[], int]) -> None:
        self._view = view
        self._region = region
        self._cursor = cursor
        self._width_shown: tuple | None = None  # the view as a fit that showed the width left it

    def readable_scale(self) -> float:
        return readable_scale(self._view.logicalDpiY())

    def readable_fit(self) -> Callable[[int, int], bool]:
        """Whether a layout fits the canvas with names readable, as the viewport is now."""
        port = self._view.viewport()
        return layout_fits(port.width(), port.height(), self.readable_scale())

    def fit(self, fallback: str | None = None, whole: bool = False, pressed: bool = True) -> bool:
        """Show every node shown at the cursor (View > Fit to window), if that reads (or
        ``whole``: at whatever zoom that takes); else the graph's width at the smallest readable
        zoom around :meth:`focus_rect`. Whether it shows the whole graph. ``pressed``: the user's
        Fit (a second press may show the whole graph: :meth:`showing_fit_width`), not one the
        window makes by itself (after opening a level of boxes)."""
        with self._region.held():
            shown = self._fit(fallback, whole)
        self._note_width_shown(shown or not pressed or whole)
        return shown

    def showing_fit_width(self) -> bool:
        """Whether the view is as a fit that showed only the graph's width left it: the same graph
        (no box opened or shut, no step), not zoomed, and not moved by more than a scroll bar's
        width since. Fit pressed again then shows the whole graph. (A scroll bar that comes or
        goes after the fit moves the view's centre by half its width: that is no move of the user's.)"""
        if self._width_shown is None:
            return False
        scale, cursor, shown, centre = self._width_shown
        now = self._centre()
        slack = WIDTH_FIT_SLACK_PX / scale
        return (self._view.transform().m11() == scale and self._cursor() == cursor
                and self._view.scene().shown_rect() == shown
                and abs(now.x() - centre.x()) <= slack and abs(now.y() - centre.y()) <= slack)

    def _note_width_shown(self, shown_whole: bool) -> None:
        self._width_shown = None if shown_whole else (self._view.transform().m11(), self._cursor(),
                                                       self._view.scene().shown_rect(), self._centre())

    def _centre(self) -> QPointF:
        view = self._view
        return view.mapToScene(view.viewport().rect().center())

    def fit_readable(self) -> None:
        """What the window shows by itself after opening or finishing a run: a finished run too
        big to read at fit first shuts its module boxes down to the deepest level that does;
        then a fit, which reads (around the cursor's node, else the newest node: where the run is)."""
        scene = self._view.scene()
        with self._region.held():
            if scene.boxes.open_to_fit(self.readable_fit()):
                self._view.overview.schedule()
            self._fit(fallback=scene.newest_shown())
        self._width_shown = None  # (the window's own fit: the user's first F is a Fit's first press)

    def clear_edges(self, focus: QRectF | None) -> None:
        """Move a view that shows part of the graph by up to half a row (half a column across) so
        that no node or shut box is cut at its edges, the focus kept in view (a failed 8-row
        lesson opened at its error on a laptop's screen with its loss cut in half at the bottom)."""
        view = self._view
        shown = view.mapToScene(view.viewport().rect()).boundingRect()
        move = clear_move(view.scene(), shown, focus)
        if not move.isNull():  # (by the scroll bars: centring on the moved centre drifted 8 units across)
            self._scroll_to(shown.translated(move), move)

    def _scroll_to(self, target: QRectF, move: QPointF) -> None:
        """Show ``target`` (the viewport's rect in scene units, moved by ``move`` from where it is),
        by the scroll bars, the scene's rect widened as that takes."""
        view = self._view
        scale = view.transform().m11()
        view.setSceneRect(widened(view.sceneRect(), target, move, 1 / scale))
        for _ in range(2):  # (again where Qt's scroll range stopped a scroll bar's width short of the scene's end)
            now = view.mapToScene(view.viewport().rect()).boundingRect()
            short = QPointF(target.left() - now.left(), target.top() - now.top())
            if abs(short.x()) * scale < 1 and abs(short.y()) * scale < 1:
                break
            if _:
                rect = view.sceneRect()
                view.setSceneRect(rect.adjusted(min(0.0, short.x()), min(0.0, short.y()),
                                                max(0.0, short.x()), max(0.0, short.y())))
            for bar, along in ((view.horizontalScrollBar(), short.x()), (view.verticalScrollBar(), short.y())):
                bar.setValue(bar.value() + round(along * scale))

    def focus_rect(self, fallback: str | None = None) -> QRectF | None:
        """What a view that cannot show the whole graph is centred on, in scene units: the
        cursor's node (the node a backward step runs, the op the cursor made; the shut box that
        holds it), else the selected node, else node ``fallback`` if it is shown, else the node
        shown at the cursor that was made last (where the run is: at its end, Fit showed the top of
        the graph, End its last nodes)."""
        scene = self._view.scene()
        where = scene.place_at_event(self._cursor())
        if where is not None:
            return where
        selected = [item for item in scene.selectedItems() if item.isVisible()]
        if selected:
            return selected[0].sceneBoundingRect()
        if fallback is None:
            fallback = scene.newest_shown()
        if fallback is not None and scene.shown_at_cursor(fallback):
            group = scene.boxes._hidden_by.get(fallback)
            if group is not None:
                return group.sceneBoundingRect()
            where = scene.place_of(fallback)
            if where is not None:
                return QRectF(where[0] - NODE_W / 2, where[1] - NODE_H / 2, NODE_W, NODE_H)
        return None

    def center_on(self, point: QPointF) -> None:
        """Centre the view on ``point`` (scene units), scrolling past the scene's edge where that
        takes (what is shown at the cursor may sit to one side of the whole run's graph: clamped
        to the scene, it was drawn off centre); the next fit ends the widening."""
        view = self._view
        scale = view.transform().m11()
        # (a pixel short of the viewport each side: a rect the viewport's size brings scroll bars)
        half = QPointF(view.viewport().width() - 2, view.viewport().height() - 2) / (2 * scale)
        view.setSceneRect(view.scene().sceneRect().united(QRectF(point - half, point + half)))
        view.centerOn(point)

    def readable_around(self, point: QPointF) -> None:
        """The smallest readable zoom, centred on ``point``."""
        readable = self.readable_scale()
        with self._region.held():
            self._view.resetTransform()
            self._view.scale(readable, readable)
            self.center_on(point)

    def _fit(self, fallback: str | None = None, whole: bool = False) -> bool:
        view = self._view
        scene = view.scene()
        scene.boxes.settle()
        view.setSceneRect(QRectF())  # the scene's own rect again (a box kept in place may have widened it)
        parts = None if scene.virtual else fit_rects(scene)  # (once a fit: the band below reads them too)
        rect = fit_rect(scene, parts)  # (the graph made so far; not the room items keep for badges they may not have)
        if rect.isNull():
            rect = scene.sceneRect()
        framed = rect.adjusted(-FIT_MARGIN, -FIT_MARGIN, FIT_MARGIN, FIT_MARGIN)
        readable = self.readable_scale()
        focus = None
        for _ in range(2):  # again if scroll bars came (the rest of the run's graph lies aside): a smaller viewport
            port = view.viewport().rect()
            if port.isEmpty():  # (no room to show anything: nothing to fit)
                return False
            zoom = whole_zoom(port.width(), port.height(), rect, readable)
            if whole and zoom < OVERVIEW_SMALLEST:  # a column too thin to see: its part round the cursor
                self._overview_around(framed, focus if focus is not None else self.focus_rect(fallback))
                zoom = 0.0
            elif zoom >= readable * WHOLE_SLACK or whole:
                view.resetTransform()
                view.scale(zoom, zoom)
                self.center_on(rect.center())
            else:  # the whole would not read: its width at the smallest readable zoom, around the focus
                if focus is None:
                    focus = self.focus_rect(fallback)
                view.resetTransform()
                view.scale(readable, readable)
                half_width, half_height = view.viewport().width() / readable / 2, view.viewport().height() / readable / 2
                self.center_on(self._band_centre(framed, focus, half_width, half_height, parts))
                self.clear_edges(focus)
            if view.viewport().rect() == port:
                break
        return zoom >= readable * WHOLE_SLACK or (whole and zoom > 0)

    def _band_centre(self, framed: QRectF, focus: QRectF | None, half_width: float, half_height: float,
                     parts: list[QRectF] | None) -> QPointF:
        """:func:`readable_centre`, centred across on what is drawn in the rows it shows
        (:func:`across_band`): a Llama's rows round its 30th op, every box open, took a third of
        the graph's width, and the view centred on the width showed them at its left, beside
        nothing."""
        centre = readable_centre(framed, focus, half_width, half_height)
        band = across_band(parts, centre.y() - half_height, centre.y() + half_height)
        if band is None:
            return centre
        rows = QRectF(band[0] - FIT_MARGIN, framed.top(), band[1] - band[0] + 2 * FIT_MARGIN, framed.height())
        return QPointF(readable_centre(rows, focus, half_width, half_height).x(), centre.y())

    def _overview_around(self, framed: QRectF, focus: QRectF | None) -> None:
        """The graph at :data:`OVERVIEW_SMALLEST`, round ``focus`` (see :func:`readable_centre`)."""
        view = self._view
        view.resetTransform()
        view.scale(OVERVIEW_SMALLEST, OVERVIEW_SMALLEST)
        port = view.viewport()
        centre = readable_centre(framed, focus, port.width() / OVERVIEW_SMALLEST / 2, port.height() / OVERVIEW_SMALLEST / 2)
        self.center_on(centre)
        shown = view.mapToScene(port.rect()).boundingRect()
        if shown.center() != centre:  # (Qt's scroll range may stop a scroll bar's width short of the scene's end)
            self._scroll_to(shown.translated(centre - shown.center()), centre - shown.center())
