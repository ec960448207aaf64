"""RunPlacement: where the cursor and the canvas of a newly shown run go.

A run opens at its start (event 0), the top of its graph (the leaves, where it begins) in view;
a run that failed opens where it failed. After "Run again" (or a detach from the canvas) the
cursor stays on the same moment of the script: the same op of the same step, found by what it is
(:mod:`graphview.core.landmarks`), not by its event index, else the nearest earlier moment the
new run has too. A live run is placed as it streams in; once the user moves the cursor, the run
is theirs and nothing here moves it again.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QPointF, QRectF

from graphview.core import timeline
from graphview.core.landmarks import Landmarks, place
from graphview.core.run import Run
from graphview.qt.canvas import GraphView
from graphview.qt.canvas.canvas_notes import START_HINT
from graphview.qt.canvas.style import NODE_H, NODE_W
from graphview.qt.session import Session

#: the largest zoom of the opening view: a tiny graph is not blown up (the smallest is the
#: view's readable zoom: every text on the canvas 9 px high or more)
LARGEST_ZOOM = 1.4


class RunPlacement:
    """Places the session's cursor (and the canvas, ``view``) while the session's run opens;
    ``keep_in_view(always=True)`` scrolls the canvas to the cursor's node.

    Attributes
    ----------
    active : bool
        Still placing: the run has not finished opening and the user has not moved the cursor.
    """

    def __init__(self, session: Session, view: GraphView, keep_in_view: Callable[..., None]) -> None:
        self.session = session
        self.view = view
        self.keep_in_view = keep_in_view
        self.active = False
        self._earlier: Landmarks | None = None  # the run a re-run continues from, and its cursor
        self._earlier_cursor = -1
        self._later: Landmarks | None = None
        self._placed: int | None = None
        self._top_shown = False

    def on_shut_to_fit(self) -> None:
        """A big run's boxes came late and were shut: show its top again, unless the user moved."""
        cursor = self.session.cursor
        if cursor == (self._placed if self._placed is not None else cursor) and cursor <= 0:
            show_top(self.view)

    def begin(self, run: Run, earlier: Run | None = None, cursor: int = -1) -> None:
        """``run`` is shown now; ``earlier`` is the run it re-runs (with the cursor it had), or None."""
        self.active = True
        self._placed = None
        self._top_shown = False
        keep = earlier is not None and cursor >= 0 and bool(earlier.events)
        self._earlier = Landmarks(earlier) if keep else None
        self._earlier_cursor = cursor
        self._later = Landmarks(run) if keep else None
        self.view.set_message(START_HINT)

    @property
    def keeps_place(self) -> bool:
        """This run continues where an earlier run's cursor was."""
        return self._earlier is not None

    def place(self, final: bool = False) -> None:
        """Move the cursor where the run opens, as far as the run has come; ``final`` once it has
        ended and is drawn (the nearest earlier moment is taken then, if the same one never came)."""
        session = self.session
        run = session.run
        if not self.active or run is None or not run.events:
            return
        if self._placed is not None and session.cursor != self._placed:
            self.active = False  # the user moved: the cursor is theirs
            return
        if self._earlier is not None:
            found = place(self._earlier, self._earlier_cursor, self._later)
            index, exact = found if found is not None else (0, False)
            done = exact or final
        else:
            index = timeline.opening(run) if final else 0
            done = final
        session.set_cursor(index)
        self._placed = session.cursor
        self._show(final)
        if done:
            self.active = False

    def _show(self, final: bool) -> None:
        if self._earlier is not None or self.session.cursor > 0:
            if self._earlier is None and not self._top_shown:
                self.view.fit_readable()
            self.keep_in_view(always=True)  # the same node as before, or the error
        elif final or not self._top_shown:
            self._top_shown = show_top(self.view) or self._top_shown
        fitting = self.view.fitting
        fitting.clear_edges(fitting.focus_rect())  # no node cut in half at the view's edges

    def cancel(self) -> None:
        self.active = False


def show_top(view: GraphView) -> bool:
    """Zoom and scroll the canvas to the top of the run's whole graph (what the first steps
    show), at a zoom where names can be read; False while there is no node to show."""
    scene = view.scene()
    if scene.boxes.open_to_fit(view.readable_fit()):  # a finished run too big to read: boxes shut first
        view.overview.schedule()
    groups = [g for g in scene.groups.values() if g.isVisible() and g.collapsed]
    if scene.virtual:  # items only near the view: the places of every node say where the graph is
        if not scene._placed:
            return False
        rect = scene.sceneRect().adjusted(NODE_W - 11, NODE_H * 2 - 14, -NODE_W + 16, -NODE_H * 2 + 20)
    else:
        # every node counts, hidden at the cursor or not (at event 0 all are), each where it is
        # drawn now: an item inside a shut box keeps the place it had before the box shut (a
        # GPT-2 generating under no_grad: items 2,000 units wide and 53,000 tall, its shut boxes
        # one 210-unit column), and stands for that box here
        rects = [QRectF(item.boundingRect()).translated(*_place(scene, item)) for item in scene.node_items.values()]
        rects += [group.sceneBoundingRect() for group in groups]
        if not rects:
            return False
        rect = rects[0]
        for other in rects[1:]:
            rect = rect.united(other)
    rect.adjust(-40, -40, 40, 40)
    port = view.viewport().rect()
    zoom = min(port.width() / max(1.0, rect.width()), port.height() / max(1.0, rect.height()))
    zoom = max(view.readable_scale(), min(LARGEST_ZOOM, zoom))
    view.resetTransform()
    view.scale(zoom, zoom)
    half_w, half_h = port.width() / zoom / 2, port.height() / zoom / 2
    if rect.width() <= 2 * half_w:
        x = rect.center().x()
    else:  # wider than the view: where the run begins, its first nodes
        if scene.virtual:
            nodes = scene.drawing.nodes
            first = [scene.place_of(n) for n in sorted(scene._placed, key=lambda n: nodes[n].born)[:8]]
            x = sum(p[0] for p in first if p is not None) / len(first)
        else:
            items = sorted(scene.node_items.values(), key=lambda i: i.node.born)[:8]
            x = sum(_place(scene, i)[0] + i.boundingRect().center().x() for i in items) / len(items)
        x = max(rect.left() + half_w, min(rect.right() - half_w, x))
    y = rect.center().y() if rect.height() <= 2 * half_h else rect.top() + half_h
    view.center_view_on(QPointF(x, y))
    return True


def _place(scene, item) -> tuple[float, float]:
    """Where ``item``'s node is drawn now (inside a shut box: that box's place), as its position."""
    where = scene.place_of(item.node.id)
    return where if where is not None else (item.pos().x(), item.pos().y())
