"""Following the action on the canvas: stepping keeps the cursor's node in view, as a debugger
follows execution, and a module box opened or shut stays where it was on screen."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QGraphicsView

from graphview.core.drawing.nodes import LAYER_HEIGHT, SLOT_WIDTH
from graphview.qt.canvas.view_fit import WHOLE_SLACK, ViewFit


def follow_margins(view: QGraphicsView, where: QRectF) -> tuple[int, int]:
    """The room, in screen pixels, following keeps around the cursor's node ``where`` (scene
    units): a column across and a row up and down, and a little more, at the view's zoom, so the
    nodes next to it show whole (a leaf above the AccumulateGrad that runs, the node whose gradient
    it receives below, a weight's nodes in the next column); less in a view too small for that."""
    scale = view.transform().m11()
    port = view.viewport().rect()
    across = int(max(0.0, port.width() - where.width() * scale) / 2) - 2
    down = int(max(0.0, port.height() - where.height() * scale) / 2) - 2
    return (max(0, min(int(SLOT_WIDTH * scale) + 8, across)),
            max(0, min(int(LAYER_HEIGHT * scale) + 8, down)))


#: the nodes of one moment that following keeps in view together, at most (an op's outputs and its node)
FOOTPRINT_NODES = 4
#: how far back following looks, at a moment of no node, for the last node made before it
LOOK_BACK = 256


class Follow:
    """Scrolls ``view`` after the cursor (``cursor`` says where it is) and after a box's relayout."""

    def __init__(self, view: QGraphicsView, fit: ViewFit, cursor: Callable[[], int]) -> None:
        self._view = view
        self._fit = fit
        self._cursor = cursor
        self.on = True  # View > Follow the current node: stepping keeps it in view
        self._box_on_screen: QPointF | None = None  # where the box being opened or shut was on screen

    def cursor_node(self) -> None:
        """Stepping: keep the cursor's node (the node a backward step runs, the op the cursor
        made; the shut box holding it) in view. A view zoomed out beyond reading is zoomed to the
        smallest readable zoom around it; a readable one scrolls only when the node is not well
        inside it (a view the user placed stays). At the end of a run (End, or Play reaching it:
        a moment of no node) the view shows what the run ended with, as the window's own fit does:
        the whole graph where that reads, else its width around the last node made (left where it
        was, the view showed nodes cut at its edge, or none)."""
        view = self._view
        scene = view.scene()
        places = scene.places_at_event(self._cursor(), FOOTPRINT_NODES)
        if not places:
            if self._at_run_end():
                self._fit.fit(fallback=scene.newest_shown(), pressed=False)
                return
            # a moment of no node (a module entered, a tensor saved): the last node made before it,
            # where stepping there would have left the view (a jump from afar left it blank)
            earlier = self._places_before(self._cursor())
            if earlier:
                view.ensureVisible(*self._footprint(earlier))
            return
        if view.transform().m11() < self._fit.readable_scale() * WHOLE_SLACK:  # (a graph shown whole reads)
            self._fit.readable_around(places[0].center())
            return
        view.ensureVisible(*self._footprint(places))

    def _places_before(self, cursor: int) -> list[QRectF]:
        """Where the nodes of the last event before ``cursor`` that is about a shown node are drawn
        (looked for :data:`LOOK_BACK` events back at most); empty when none is."""
        scene = self._view.scene()
        for index in range(cursor - 1, max(-1, cursor - 1 - LOOK_BACK), -1):
            places = scene.places_at_event(index, FOOTPRINT_NODES)
            if places:
                return places
        return []

    def _at_run_end(self) -> bool:
        """Whether the cursor is on the end of a run (its last event, the run's end)."""
        drawing = self._view.scene().drawing
        if drawing is None:
            return False
        events, cursor = drawing.run.events, self._cursor()
        return 0 <= cursor == len(events) - 1 and events.kind(cursor) == "run_end"

    def _footprint(self, places: list[QRectF]) -> tuple:
        """``ensureVisible``'s arguments for a step whose moment is about the nodes at ``places``,
        the likeliest first: all of them that fit on screen together (an op's output tensor and
        the grad_fn node above it, with its "saved" badge: followed by the tensor alone, the node
        was left cut off at the top edge), else the first alone, each with :func:`follow_margins`."""
        view = self._view
        scale = view.transform().m11()
        port = view.viewport().rect()
        around = QRectF(places[0])
        for place in places[1:]:
            wider = around.united(place)
            if wider.width() * scale > port.width() or wider.height() * scale > port.height():
                break
            around = wider
        return (around, *follow_margins(view, around))

    def box_relaying(self, at: QPointF) -> None:
        """A box at ``at`` (scene units) is about to be opened or shut: remember where it is on screen."""
        self._box_on_screen = QPointF(self._view.mapFromScene(at))

    def box_relaid(self, key: str, before: QPointF, after: QPointF) -> None:
        """A box was opened or shut and the graph laid out again: scroll so that box stays
        where it was on screen, and the rest of the picture around it. The view may scroll past
        the graph's edge for that (a graph smaller than the view would otherwise be centred
        again); the next fit ends it."""
        on_screen, self._box_on_screen = self._box_on_screen, None
        if on_screen is None:
            return
        view = self._view
        scale = view.transform().m11()
        middle = QPointF(view.viewport().rect().center())
        centre = after + (middle - on_screen) / scale
        half = QPointF(view.viewport().width(), view.viewport().height()) / (2 * scale)
        view.setSceneRect(view.scene().sceneRect().united(QRectF(centre - half, centre + half)))
        view.centerOn(centre)
        view.overview.schedule()
