"""BoxState: which module boxes there are, which are shut, and the layout that follows.

A plain part of :class:`~graphview.qt.canvas.module_boxes.ModuleBoxes`. The boxes come from
:func:`graphview.core.hierarchy.module_boxes` (a growing big drawing's a slice at a time in turns of
the event loop, through :class:`~graphview.qt.event_slices.Slices`; a finished big drawing's, shut
to fit, on a thread, through a :class:`~graphview.qt.background.Background`: both are children of
that QObject, so that a slice or a result coming after the scene is gone is dropped with it); the
layout with boxes shut is :class:`graphview.core.hierarchy.Layout`'s. Laying the graph out again at
once (the cursor, the glide, the signals) is the owner's: this part calls ``relaid`` for it.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Callable

from PySide6.QtCore import QObject, QPointF, QTimer

from graphview.core.hierarchy import (Layout, ModuleBox, box_lifetimes, box_lifetimes_in_steps, collapsed_at_level,
                                      level_that_fits, levels_that_fit, module_boxes, module_boxes_in_steps, setup_end)
from graphview.qt.background import Background
from graphview.qt.canvas.region import GRID
from graphview.qt.canvas.style import NODE_W
from graphview.qt.event_slices import Slices

#: a model whose step draws at most this many nodes opens with its boxes open however small the
#: canvas (a 3-layer MLP shut to three cards hid every AddmmBackward0 and AccumulateGrad a learner
#: opened it to see): it reads by scrolling
SCROLLED_NOT_SHUT = 40
#: a finished big drawing's boxes are shut to fit on a thread started this long after the ask (ms)
THREAD_AFTER_PAINT_MS = 50
#: finished drawings with more placed nodes than this are shut to fit on a thread
BOXES_ON_A_THREAD_ABOVE = 20_000
#: growing drawings with more placed nodes than this find their boxes in slices of the event loop's
#: turns, of about BOX_SLICE_S each (at once, 20,000 nodes' took 50-80 ms)
BOXES_IN_TURNS_ABOVE = 3_000
BOX_SLICE_S = 0.008


class BoxState:
    """The boxes of one scene's drawing, the shut ones, and the layout with them shut."""

    def __init__(self, scene, parent: QObject, *, settle: Callable[[], None], relaid: Callable,
                 boxes_changed: Callable[[dict], None], shut_to_fit_done: Callable[[], None]) -> None:
        self.scene = scene
        self.settle = settle  # end a glide now
        self.relaid = relaid  # relaid(key, before, animate, layout=None): show the layout now
        self.boxes_changed = boxes_changed  # boxes_changed(keyed): the boxes were found again
        self.shut_to_fit_done = shut_to_fit_done  # a thread's boxes came and were shut to fit
        self.background = Background(parent)  # (also the context of the timer that starts it)
        self.slices = Slices(parent)  # the slices that find a growing big drawing's boxes
        self.boxes: list[ModuleBox] = []
        self.keyed: dict[str, ModuleBox] = {}
        self.spans: dict[str, tuple[int, int | None]] = {}  # box key -> when any of its nodes exists
        self.collapsed: set[str] = set()
        self.focus: dict[str, int] = {}  # a stack of repeated blocks -> the block shown apart (see Layout)
        self.layout: Layout | None = None
        self.keep: frozenset[str] | None = None  # only these nodes laid out (see Layout): a run's end
        self.opened_to_fit = False
        self.finding = False  # boxes being found in turns of the event loop, or on a thread
        self.took = 0.0  # how long finding them in turns took, last time (seconds of the GUI thread)
        self._placed = -1
        self._fit_wanted = None  # open_to_fit waits for them: its ``fits``

    def reset(self) -> None:
        """A new run: no boxes yet, none shut."""
        self.took = 0.0
        self.boxes, self.keyed, self.spans = [], {}, {}
        self.collapsed = set()
        self.focus = {}
        self.layout = None
        self.keep = None
        self.opened_to_fit = False
        self._placed = -1

    # ------------------------------------------------------------------ finding the boxes
    def refresh(self, in_turns: bool = True) -> None:
        """Find the boxes again when the drawing placed more nodes; with boxes shut, lay out again.
        A big drawing's are found in slices of the event loop's turns (a run streaming in: the
        window answers meanwhile) unless ``in_turns`` is False (a drawing taken in whole, in one go)."""
        drawing = self.scene.drawing
        if drawing is None or len(drawing.order) == self._placed:
            return
        if in_turns and len(drawing.order) > BOXES_IN_TURNS_ABOVE and not self.collapsed:
            self._refresh_in_turns(drawing)
            return
        self.find_now()

    def find_now(self) -> None:
        """The boxes of every node placed so far, found here and now."""
        drawing = self.scene.drawing
        self._placed = len(drawing.order)
        self.take(module_boxes(drawing))

    def _refresh_in_turns(self, drawing) -> None:
        """A big drawing: its boxes are found a slice at a time, in turns of the event loop with
        room for one, from a copy of its node list (what they read of a placed node never changes),
        and taken in when found. (Not on a thread: on a busy machine a thread holding the
        interpreter lock while the system ran something else held the window up to 250 ms.)"""
        if self.finding:
            return
        self.finding = True
        self.took = 0.0
        placed = len(drawing.order)
        nodes = list(drawing.nodes.values())  # (the nodes placed by now: placed is their count)
        found = module_boxes_in_steps(nodes, dict(drawing.run.module_types), setup_end(drawing.run))
        self.slices.later(partial(self._find_a_slice, drawing, placed, found, None), BOX_SLICE_S)

    def _find_a_slice(self, drawing, placed: int, found, boxes: list[ModuleBox] | None) -> None:
        """One slice of :meth:`_refresh_in_turns`: the boxes (``found``, steps), then their lifetimes."""
        if self.scene.drawing is not drawing:  # another run is shown by now
            self.finding = False
            return
        start = time.perf_counter()
        deadline = start + max(0.002, min(BOX_SLICE_S, self.slices.turn.left()))
        try:
            while time.perf_counter() < deadline:
                next(found)
        except StopIteration as done:
            if boxes is None:  # the boxes are found: now how long each lives
                boxes, found = done.value, box_lifetimes_in_steps(drawing, done.value)
            else:
                self.took += time.perf_counter() - start
                self.finding = False
                self._placed = placed
                self.take(boxes, done.value)
                self.scene.set_cursor(self.scene.cursor)  # the boxes around what is shown now
                if len(drawing.order) != placed and not self.scene.live:  # (growing: when the scene asks)
                    self.refresh()
                self._fit_if_wanted()
                return
        self.took += time.perf_counter() - start
        self.slices.later(partial(self._find_a_slice, drawing, placed, found, boxes), BOX_SLICE_S)

    def _fit_if_wanted(self) -> None:
        fits, self._fit_wanted = self._fit_wanted, None
        if fits is not None:
            self.open_to_fit(fits)

    def take(self, boxes: list[ModuleBox], spans: dict | None = None) -> None:
        self.boxes = boxes
        self.spans = spans or {}
        self.keyed = {box.key: box for box in self.boxes}
        self.boxes_changed(self.keyed)
        if self.collapsed:
            self.apply_layout()

    # ------------------------------------------------------------------ the layout
    def apply_layout(self, layout: Layout | None = None) -> dict[str, QPointF]:
        """Put every node where the current layout (``layout``, if made already) has it; returns
        the old positions of those that moved."""
        scene, drawing = self.scene, self.scene.drawing
        self.layout = layout or self.layout_for(self.collapsed)
        moved: dict[str, QPointF] = {}
        for node_id, item in scene.node_items.items():
            where = self.layout.position(node_id) if self.layout else (item.node.x, item.node.y)
            if where is None:
                continue  # inside a shut box: hidden, it stays where it was
            target = QPointF(*where)
            if item.pos() != target:
                moved[node_id] = item.pos()
                item.setPos(target)
        half = NODE_W / 2 + 12
        for edge in scene.edge_items:
            source, target = edge.source.node, edge.target.node
            clear = (self.layout.path_clear(source.id, target.id, half) if self.layout
                     else drawing.path_clear(source, target, half))
            if clear != edge.clear or source.id in moved or target.id in moved:
                edge.clear = clear
                edge.route_between_nodes()
        scene.layout_changed()
        scene.fit_scene_rect()
        return moved

    def layout_for(self, collapsed: set[str]) -> Layout | None:
        """The layout with the boxes in ``collapsed`` shut (and only :attr:`keep` laid out, if
        given); None: the drawing's own places."""
        if not collapsed and self.keep is None:
            return None
        return Layout(self.scene.drawing, self.boxes, collapsed, self.focus, self.keep)

    def bounds(self) -> tuple[float, float, float, float] | None:
        """Left, top, right, bottom of the laid-out units' centres (None: the drawing's own)."""
        if self.layout is None or not self.layout.cells:
            return None
        points = [self.layout.position(unit) for unit in self.layout.cells]
        xs, ys = [x for x, _ in points], [y for _, y in points]
        return min(xs), min(ys), max(xs), max(ys)

    def anchor(self, key: str) -> QPointF | None:
        """What stays put on screen when box ``key`` opens or shuts: its first computed node (a
        shut box sits in that node's cell), or whatever shows it now (the box, a shut child)."""
        box = self.keyed.get(key)
        if box is None or self.scene.drawing is None:
            return None
        entry = Layout.entry(self.scene.drawing, box).id
        if self.layout is None:
            item = self.scene.node_items.get(entry)
            return QPointF(item.pos()) if item is not None else None
        where = self.layout.position(self.layout.hidden_by.get(entry, entry))
        return QPointF(*where) if where is not None else None

    # ------------------------------------------------------------------ levels
    def level(self) -> int:
        """How deep the hierarchy is open: the level of the outermost shut boxes (one past the
        deepest box when none is shut)."""
        shut = [self.keyed[k].level for k in self.collapsed if k in self.keyed and not self.keyed[k].setup]
        return min(shut) if shut else max((b.level for b in self.boxes), default=-1) + 1

    def set_all(self, collapsed: set[str]) -> None:
        """Shut exactly the boxes in ``collapsed``."""
        self.settle()
        self.collapsed = set(collapsed)
        self.relaid(None, None, animate=False)

    def change_level(self, delta: int | None) -> None:
        """Open (``delta`` 1) or shut (-1) the hierarchy one level; None opens every box."""
        self.refresh()
        if delta is None:
            self.set_all(set())
            return
        deepest = max((b.level for b in self.boxes), default=-1) + 1
        level = max(0, min(deepest, self.level() + delta))
        self.set_all(collapsed_at_level(self.boxes, level))

    def show_down_to(self, level: int) -> None:
        """Boxes open down to ``level``, deeper ones shut, at once: the boxes are found here, not on
        a thread (a headless export waits for them anyway)."""
        if self.scene.drawing is None:
            return
        self.find_now()
        self.set_all(collapsed_at_level(self.boxes, level))

    def shut_to_fit(self, rows: int | Callable[[int, int], bool]) -> tuple[int | None, int]:
        """Headless, at once: shut the boxes at the deepest level at which the graph takes at most
        ``rows`` rows (or, ``rows`` a function of rows and columns, at which it says the graph fits).
        Returns that level (None: every box stays open) and the rows the graph takes with every box open."""
        drawing = self.scene.drawing
        if drawing is None:
            return None, 0
        self.find_now()
        every = Layout(drawing, self.boxes, set()).size()
        fits = rows if callable(rows) else (lambda r, _columns: r <= rows)
        level = level_that_fits(drawing, self.boxes, fits, every)
        # (everything fits: a setup chain is shut all the same)
        collapsed = collapsed_at_level(self.boxes, level) if level is not None else {b.key for b in self.boxes if b.setup}
        if collapsed:
            self.set_all(collapsed)
        return level, every[0]

    def reveal(self, node_ids) -> bool:
        """Open every shut box that hides one of ``node_ids``, and the shut boxes inside it on the
        way. Returns True when any opened."""
        wanted = set(node_ids)
        opened = set()
        layout = self.layout
        while layout is not None:
            keys = {layout.hidden_by[n] for n in wanted if n in layout.hidden_by}
            if not keys:
                break
            opened |= keys
            for key in keys & layout.runs.keys():  # a thin stack: the block holding the node comes apart
                self.focus_on(layout.runs[key], next(n for n in wanted if layout.hidden_by.get(n) == key))
            self.collapsed -= keys
            layout = self.layout_for(self.collapsed)
        if opened:
            self.settle()
            self.relaid(None, None, animate=False)
        return bool(opened)

    def focus_on(self, run: ModuleBox, node_id: str | None = None) -> None:
        """Show apart the block of thin stack ``run`` holding ``node_id`` (its first block when None)."""
        stack = self.keyed.get(run.parent)
        if stack is None:
            return
        blocks = [self.keyed[key] for key in run.repeats.keys if key in self.keyed]
        block = next((b for b in blocks if node_id in b.members), blocks[0]) if blocks else None
        if block is not None:
            self.focus[stack.key] = stack.repeats.keys.index(block.key)

    # ------------------------------------------------------------------ shut to fit the screen
    def open_to_fit(self, fits) -> bool:
        """Once per finished run: shut the hierarchy down to the deepest level whose layout
        ``fits(rows, columns)`` on screen. Returns True when it shut any box."""
        scene = self.scene
        if self.opened_to_fit or scene.drawing is None or scene.run is None or scene.run.end is None:
            return False
        if self.finding:  # a big drawing's boxes are still being found: shut them once they come
            self._fit_wanted = fits
            return False
        steps = max(1, len(scene.run.steps))
        if len(scene.drawing.order) / steps <= SCROLLED_NOT_SHUT:  # a small model: every node, scrolled
            self.opened_to_fit = True
            return False
        if len(scene.drawing.order) > BOXES_ON_A_THREAD_ABOVE:
            # on a thread, started once the picture as it is now has been painted (a thread running
            # Python slows the GUI thread's paint: it waits for the interpreter lock at every Qt call)
            self.opened_to_fit = True
            self.finding = True
            QTimer.singleShot(THREAD_AFTER_PAINT_MS, self.background,
                              partial(self._open_to_fit_soon, scene.drawing, fits))
            return False
        self.refresh()
        self.opened_to_fit = True
        collapsed = levels_that_fit(scene.drawing, self.boxes, fits)
        if collapsed:
            self.set_all(collapsed)
        return bool(collapsed)

    def _open_to_fit_soon(self, drawing, fits) -> None:
        if self.scene.drawing is drawing:
            self._open_to_fit_on_thread(fits)
        else:  # another run is shown by now
            self.finding = False

    def _open_to_fit_on_thread(self, fits) -> None:
        """open_to_fit for a big finished drawing: its boxes, the level that fits and that level's
        layout are worked out on a thread (the drawing no longer changes); the boxes shut when they come."""
        self.opened_to_fit = True
        self.finding = True
        drawing = self.scene.drawing
        placed = len(drawing.order)
        known = self.boxes if placed == self._placed else None
        taken_in = self.scene.placed_ids()  # (a copy: the nodes the scene has taken in so far)

        def work():
            boxes = known if known is not None else module_boxes(drawing)
            collapsed = levels_that_fit(drawing, boxes, fits)
            layout = Layout(drawing, boxes, collapsed) if collapsed else None
            if layout is not None:  # the index of places the window makes at once with it
                layout.work_out_squares(taken_in, GRID)
            return boxes, box_lifetimes(drawing, boxes), collapsed, layout

        def then(result) -> None:
            self.finding = False
            if self.scene.drawing is not drawing:
                return
            boxes, spans, collapsed, layout = result
            self._placed = placed
            self.take(boxes, spans)
            if collapsed:
                self.settle()
                self.collapsed = set(collapsed)
                self.relaid(None, None, animate=False, layout=layout if self.keep is None else None)
                self.shut_to_fit_done()
            else:
                self.scene.set_cursor(self.scene.cursor)

        self.background.run(work, then)
