"""RunPlacement: where the cursor and the canvas of a newly shown run go.

A run opens at its start (event 0), the top of its graph (the leaves, where it begins) in view;
a run that failed opens where it failed. After "Run again" (or a detach from the canvas) the
cursor stays on the same moment of the script: the same op of the same step, found by what it is
(:mod:`graphview.core.landmarks`), not by its event index, else the nearest earlier moment the
new run has too. A live run is placed as it streams in; once the user moves the cursor, the run
is theirs and nothing here moves it again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QRectF

from graphview.core import timeline
from graphview.core.landmarks import Landmarks, place
from graphview.core.run import Run
from graphview.qt.canvas.style import NODE_H, NODE_W
from graphview.qt.canvas.view import START_HINT

if TYPE_CHECKING:
    from graphview.qt.main_window import MainWindow

#: the largest zoom of the opening view: a tiny graph is not blown up (the smallest is the
#: view's readable zoom: every text on the canvas 9 px high or more)
LARGEST_ZOOM = 1.4


class RunPlacement:
    """Places the cursor (and the canvas) of the window's run while it opens.

    Attributes
    ----------
    active : bool
        Still placing: the run has not finished opening and the user has not moved the cursor.
    """

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.active = False
        self._earlier: Landmarks | None = None  # the run a re-run continues from, and its cursor
        self._earlier_cursor = -1
        self._later: Landmarks | None = None
        self._placed: int | None = None
        self._top_shown = False

    def on_shut_to_fit(self) -> None:
        """A big run's boxes came late and were shut: show its top again, unless the user moved."""
        w = self.window
        if w.cursor == (self._placed if self._placed is not None else w.cursor) and w.cursor <= 0:
            show_top(w)

    def begin(self, run: Run, earlier: Run | None = None, cursor: int = -1) -> None:
        """``run`` is shown now; ``earlier`` is the run it re-runs (with the cursor it had), or None."""
        self.active = True
        self._placed = None
        self._top_shown = False
        keep = earlier is not None and cursor >= 0 and bool(earlier.events)
        self._earlier = Landmarks(earlier) if keep else None
        self._earlier_cursor = cursor
        self._later = Landmarks(run) if keep else None
        self.window.view.set_message(START_HINT)

    @property
    def keeps_place(self) -> bool:
        """This run continues where an earlier run's cursor was."""
        return self._earlier is not None

    def place(self, final: bool = False) -> None:
        """Move the cursor where the run opens, as far as the run has come; ``final`` once it has
        ended and is drawn (the nearest earlier moment is taken then, if the same one never came)."""
        w = self.window
        run = w.run
        if not self.active or run is None or not run.events:
            return
        if self._placed is not None and w.cursor != self._placed:
            self.active = False  # the user moved: the cursor is theirs
            return
        if self._earlier is not None:
            found = place(self._earlier, self._earlier_cursor, self._later)
            index, exact = found if found is not None else (0, False)
            done = exact or final
        else:
            index = timeline.opening(run) if final else 0
            done = final
        w.set_cursor(index)
        self._placed = w.cursor
        self._show(final)
        if done:
            self.active = False

    def _show(self, final: bool) -> None:
        w = self.window
        if self._earlier is not None or w.cursor > 0:
            if self._earlier is None and not self._top_shown:
                w.view.fit_readable()
            w.keep_in_view(always=True)  # the same node as before, or the error
        elif final or not self._top_shown:
            self._top_shown = show_top(w) or self._top_shown

    def cancel(self) -> None:
        self.active = False


def show_top(window: MainWindow) -> bool:
    """Zoom and scroll the canvas to the top of the run's whole graph (what the first steps
    show), at a zoom where names can be read; False while there is no node to show."""
    view, scene = window.view, window.scene
    if scene.boxes.open_to_fit(view.readable_fit()):  # a finished run too big to read: boxes shut first
        view.overview.schedule()
    groups = [g for g in scene.groups.values() if g.isVisible() and g.collapsed]
    if scene.virtual:  # items only near the view: the places of every node say where the graph is
        if not scene._placed:
            return False
        rect = scene.sceneRect().adjusted(NODE_W - 11, NODE_H * 2 - 14, -NODE_W + 16, -NODE_H * 2 + 20)
    else:
        items = list(scene.node_items.values()) + groups
        if not items:
            return False
        rect = QRectF(items[0].sceneBoundingRect())
        for item in items[1:]:
            rect = rect.united(item.sceneBoundingRect())
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
            x = sum(i.sceneBoundingRect().center().x() for i in items) / len(items)
        x = max(rect.left() + half_w, min(rect.right() - half_w, x))
    y = rect.center().y() if rect.height() <= 2 * half_h else rect.top() + half_h
    view.center_view_on(QPointF(x, y))
    return True
