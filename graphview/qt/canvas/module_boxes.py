"""ModuleBoxes: the canvas's module boxes, which of them are shut, and the layout that follows.

The boxes come from :func:`graphview.core.hierarchy.module_boxes` (every node the drawing placed,
so they do not change as the cursor moves). Shutting or opening a box lays the graph out again
(:class:`graphview.core.hierarchy.Layout`): nodes glide to their new places, and the view keeps
the box the user clicked where it was on screen. A big graph opens with its hierarchy shut down
to the deepest level that reads at fit (:meth:`ModuleBoxes.open_to_fit`).
"""

from __future__ import annotations

import time
from functools import partial
from typing import Callable

from PySide6.QtCore import QEasingCurve, QObject, QPointF, QRectF, QTimer, QVariantAnimation, Signal

from graphview.core.held import Held, held_by_nodes
from graphview.core.drawing import LAYER_HEIGHT
from graphview.core.hierarchy import (Layout, ModuleBox, blocks_held, box_lifetimes, collapsed_at_level, level_that_fits,
                                      levels_that_fit, module_boxes, module_boxes_of, setup_end)
from graphview.qt.background import Background
from graphview.qt.canvas.groups import GroupItem
from graphview.qt.canvas.style import NODE_H, NODE_W

#: how long nodes take to glide to their places after a box opens or shuts
GLIDE_MS = 280
#: boxes of more nodes than this (a big finished run, nothing shut) are measured from the scene's
#: arrays of births, deaths and places
MEASURED_IN_ARRAYS_ABOVE = 256
#: a model whose step draws at most this many nodes opens with its boxes open however small the
#: canvas (a 3-layer MLP shut to three cards hid every AddmmBackward0 and AccumulateGrad a learner
#: opened it to see): it reads by scrolling
SCROLLED_NOT_SHUT = 40
#: a finished big drawing's boxes are shut to fit on a thread started this long after the ask (ms)
THREAD_AFTER_PAINT_MS = 50
#: drawings with more placed nodes than this find their boxes on a thread
BOXES_ON_A_THREAD_ABOVE = 20_000
#: above this many moving nodes the new layout is shown at once
GLIDE_LIMIT = 3000


class ModuleBoxes(QObject):
    """The module boxes of one :class:`~graphview.qt.canvas.scene.GraphScene`."""

    #: a box is about to open or shut: where its anchor (see ``_anchor``) is (scene coordinates)
    sigRelaying = Signal(QPointF)
    #: a box was opened or shut: its key, its anchor before and after (scene coordinates)
    sigRelaid = Signal(str, QPointF, QPointF)
    #: the boxes of a big drawing came (from a thread) and were shut to fit the screen
    sigShutToFit = Signal()

    def __init__(self, scene) -> None:
        super().__init__(scene)  # (its timers and thread's results are dropped with the scene)
        self.scene = scene
        self.boxes: list[ModuleBox] = []
        self.keyed: dict[str, ModuleBox] = {}
        self.groups: dict[str, GroupItem] = {}
        self.collapsed: set[str] = set()
        self.layout: Layout | None = None
        self.opened_to_fit = False
        self._placed = -1
        self._glide: QVariantAnimation | None = None
        self._glide_moves: list = []
        self._hidden_by: dict[str, GroupItem] = {}
        self._running: str | None = None
        self._now: tuple | None = None  # (node id, op name) of the op at the cursor, in forward
        self._shown: set[str] = set()
        self._finding = False  # boxes being found on a thread
        self.thread_took = 0.0  # how long finding them on a thread took, last time (seconds)
        self._rows_of: dict[str, tuple] = {}  # box key -> (box, lifetimes' length, its nodes' rows there)
        self._op_births: dict[str, tuple] = {}  # box key -> (box, the birth of its first autograd node)
        self._spans: dict[str, tuple[int, int | None]] = {}  # box key -> when any of its nodes exists
        self._fit_wanted = None  # open_to_fit waits for them: its ``fits``
        self._background = Background(self)
        # module path -> (bytes in the earlier run, in this run) at backward: a what-if comparison
        self.compared: dict[str, tuple[int, int]] = {}

    def set_compared(self, compared: dict[str, tuple[int, int]]) -> None:
        """Each box shows its own saved bytes in both runs (empty: no comparison)."""
        self.compared = dict(compared)
        for group in self.groups.values():
            group.set_compared(self.compared.get(group.path))
        # the names grew (or shrank) by their bytes: placed again, so that none runs into another
        self._place_labels([g for g in self.groups.values() if g.isVisible()])

    def reset(self) -> None:
        """A new run: no boxes yet, none shut (the scene removed the old items)."""
        self.settle()
        self.thread_took = 0.0
        self._rows_of = {}
        self._op_births = {}
        self.boxes, self.keyed, self.groups = [], {}, {}
        self._spans = {}
        self.collapsed = set()
        self.layout = None
        self.opened_to_fit = False
        self._placed = -1
        self._hidden_by = {}

    # ------------------------------------------------------------------ boxes and layout
    def refresh(self, on_a_thread: bool = True) -> None:
        """Find the boxes again when the drawing placed more nodes; with boxes shut, lay out again.
        A big drawing's are found on a thread (a run streaming in: the window answers meanwhile)
        unless ``on_a_thread`` is False (a drawing taken in whole, in one go: sharing the interpreter
        lock with a thread would slow the rest of the open by more than the boxes take)."""
        drawing = self.scene.drawing
        if drawing is None or len(drawing.order) == self._placed:
            return
        if on_a_thread and len(drawing.order) > BOXES_ON_A_THREAD_ABOVE and not self.collapsed:
            self._refresh_on_thread(drawing)
            return
        self._placed = len(drawing.order)
        self._take(module_boxes(drawing))

    def _refresh_on_thread(self, drawing) -> None:
        """A big drawing: its boxes are found on a thread, from a copy of its node list (what
        they read of a placed node never changes), and taken in when they come."""
        if self._finding:
            return
        self._finding = True
        placed = len(drawing.order)
        nodes = list(drawing.nodes.values())
        types = dict(drawing.run.module_types)
        setup_before = setup_end(drawing.run)

        def then(result) -> None:
            self._finding = False
            if self.scene.drawing is drawing:
                boxes, spans, took = result
                # while it ran, the GUI thread shared the interpreter lock with it: the scene asks
                # for boxes again only after ten times as long (see GraphScene.grow)
                self.thread_took = took
                self._placed = placed
                self._take(boxes, spans)
                self.scene.set_cursor(self.scene.cursor)  # the boxes around what is shown now
                if len(drawing.order) != placed:
                    self.refresh()
                fits, self._fit_wanted = self._fit_wanted, None
                if fits is not None:
                    self.open_to_fit(fits)

        def work():
            start = time.perf_counter()
            boxes = module_boxes_of(nodes, types, setup_before)
            return boxes, box_lifetimes(drawing, boxes), time.perf_counter() - start

        self._background.run(work, then)

    def _open_to_fit_soon(self, drawing, fits) -> None:
        if self.scene.drawing is drawing:
            self._open_to_fit_on_thread(fits)
        else:  # another run is shown by now
            self._finding = False

    def _open_to_fit_on_thread(self, fits) -> None:
        """open_to_fit for a big finished drawing: its boxes, the level that fits and that level's
        layout are worked out on a thread (the drawing no longer changes); the boxes shut when they come."""
        self.opened_to_fit = True
        self._finding = True
        drawing = self.scene.drawing
        placed = len(drawing.order)
        known = self.boxes if placed == self._placed else None

        def work():
            boxes = known if known is not None else module_boxes(drawing)
            collapsed = levels_that_fit(drawing, boxes, fits)
            layout = Layout(drawing, boxes, collapsed) if collapsed else None
            return boxes, box_lifetimes(drawing, boxes), collapsed, layout

        def then(result) -> None:
            self._finding = False
            if self.scene.drawing is not drawing:
                return
            boxes, spans, collapsed, layout = result
            self._placed = placed
            self._take(boxes, spans)
            if collapsed:
                self.settle()
                self.collapsed = set(collapsed)
                self._relaid(None, None, animate=False, layout=layout)
                self.sigShutToFit.emit()
            else:
                self.scene.set_cursor(self.scene.cursor)

        self._background.run(work, then)

    @property
    def pending(self) -> bool:
        """Boxes are being found on a thread."""
        return self._finding

    def _take(self, boxes: list[ModuleBox], spans: dict | None = None) -> None:
        self.boxes = boxes
        self._spans = spans or {}
        self.keyed = {box.key: box for box in self.boxes}
        for key, group in self.groups.items():
            if key in self.keyed:
                group.box = self.keyed[key]
        if self.collapsed:
            self.apply_layout()

    def apply_layout(self, layout: Layout | None = None) -> dict[str, QPointF]:
        """Put every node where the current layout (``layout``, if made already) has it; returns
        the old positions of those that moved."""
        scene, drawing = self.scene, self.scene.drawing
        self.layout = layout or (Layout(drawing, self.boxes, self.collapsed) if self.collapsed else None)
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

    def bounds(self) -> tuple[float, float, float, float] | None:
        """Left, top, right, bottom of the laid-out units' centres (None: the drawing's own)."""
        if self.layout is None or not self.layout.cells:
            return None
        points = [self.layout.position(unit) for unit in self.layout.cells]
        xs, ys = [x for x, _ in points], [y for _, y in points]
        return min(xs), min(ys), max(xs), max(ys)

    # ------------------------------------------------------------------ opening and shutting
    def toggle(self, key: str) -> None:
        """Shut an open box or open a shut one, and lay the graph out again, gliding."""
        self.set_collapsed(key, key not in self.collapsed)

    def set_collapsed(self, key: str, collapsed: bool, animate: bool = True) -> None:
        if collapsed == (key in self.collapsed):
            return
        self.settle()
        before = self._anchor(key)
        if before is not None:
            self.sigRelaying.emit(before)
        if collapsed:
            self.collapsed.add(key)
        else:
            self.collapsed.discard(key)
        self._relaid(key, before, animate)

    def level(self) -> int:
        """How deep the hierarchy is open: the level of the outermost shut boxes (one past the
        deepest box when none is shut)."""
        shut = [self.keyed[k].level for k in self.collapsed if k in self.keyed and not self.keyed[k].setup]
        return min(shut) if shut else max((b.level for b in self.boxes), default=-1) + 1

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
        drawing = self.scene.drawing
        if drawing is None:
            return
        self._placed = len(drawing.order)
        self._take(module_boxes(drawing))
        self.set_all(collapsed_at_level(self.boxes, level))

    def shut_to_fit(self, rows: int | Callable[[int, int], bool]) -> tuple[int | None, int]:
        """Headless, at once: shut the boxes at the deepest level at which the graph takes at most
        ``rows`` rows (or, ``rows`` a function of rows and columns, at which it says the graph fits).
        Returns that level (None: every box stays open) and the rows the graph takes with every box open."""
        drawing = self.scene.drawing
        if drawing is None:
            return None, 0
        self._placed = len(drawing.order)
        self._take(module_boxes(drawing))
        every = Layout(drawing, self.boxes, set()).size()
        fits = rows if callable(rows) else (lambda r, _columns: r <= rows)
        level = level_that_fits(drawing, self.boxes, fits, every)
        # (everything fits: a setup chain is shut all the same)
        collapsed = collapsed_at_level(self.boxes, level) if level is not None else {b.key for b in self.boxes if b.setup}
        if collapsed:
            self.set_all(collapsed)
        return level, every[0]

    def set_all(self, collapsed: set[str]) -> None:
        """Shut exactly the boxes in ``collapsed`` (View > Collapse all / Expand all, the start)."""
        self.settle()
        self.collapsed = set(collapsed)
        self._relaid(None, None, animate=False)

    def _relaid(self, key: str | None, before: QPointF | None, animate: bool, layout: Layout | None = None) -> None:
        old = self.apply_layout(layout)
        scene = self.scene
        scene._complete = False  # members of the box change visibility: revisit every item
        scene.set_cursor(scene.cursor)
        after = self._anchor(key) if key else None
        if before is not None and after is not None:
            self.sigRelaid.emit(key, before, after)
        if animate and 0 < len(old) <= GLIDE_LIMIT:
            self._start_glide(old)

    def reveal(self, node_ids) -> bool:
        """Open every shut box that hides one of ``node_ids`` (a search hit, a clicked line, a
        finding), and the shut boxes inside it on the way. Returns True when any opened."""
        wanted = set(node_ids)
        opened = set()
        layout = self.layout
        while layout is not None:
            keys = {layout.hidden_by[n] for n in wanted if n in layout.hidden_by}
            if not keys:
                break
            opened |= keys
            self.collapsed -= keys
            layout = Layout(self.scene.drawing, self.boxes, self.collapsed) if self.collapsed else None
        if opened:
            self.settle()
            self._relaid(None, None, animate=False)
        return bool(opened)

    def _anchor(self, key: str) -> QPointF | None:
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

    def open_to_fit(self, fits) -> bool:
        """Once per finished run: shut the hierarchy down to the deepest level whose layout
        ``fits(rows, columns)`` on screen. Returns True when it shut any box."""
        scene = self.scene
        if self.opened_to_fit or scene.drawing is None or scene.run is None or scene.run.end is None:
            return False
        if self._finding:  # a big drawing's boxes are still being found: shut them once they come
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
            self._finding = True
            QTimer.singleShot(THREAD_AFTER_PAINT_MS, self, partial(self._open_to_fit_soon, scene.drawing, fits))
            return False
        self.refresh()
        self.opened_to_fit = True
        collapsed = levels_that_fit(scene.drawing, self.boxes, fits)
        if collapsed:
            self.set_all(collapsed)
        return bool(collapsed)

    # ------------------------------------------------------------------ gliding
    def _start_glide(self, old: dict[str, QPointF]) -> None:
        items = self.scene.node_items
        moves = [(items[i], start, QPointF(items[i].pos())) for i, start in old.items() if items[i].isVisible()]
        if not moves:
            return
        edges = {e for item, _, _ in moves for e in self.scene.edges_into(item.node.id)
                 + self.scene._edges_from.get(item.node.id, []) if e.isVisible()}
        glide = QVariantAnimation(self)
        glide.setDuration(GLIDE_MS)
        glide.setStartValue(0.0)
        glide.setEndValue(1.0)
        glide.setEasingCurve(QEasingCurve.InOutCubic)

        def step(t) -> None:
            for item, start, end in moves:
                item.setPos(start + (end - start) * float(t))
            for edge in edges:
                self.scene.route_edge(edge, self._hidden_by, moving=True)

        glide.valueChanged.connect(step)
        glide.finished.connect(self.settle)
        self._glide_moves = moves
        self._glide = glide
        step(0.0)
        glide.start()

    def settle(self) -> None:
        """End a glide now: every node at its place, every edge routed to it."""
        glide, self._glide = self._glide, None
        if glide is None:
            return
        glide.stop()
        for item, _, end in self._glide_moves:
            item.setPos(end)
        self._glide_moves = []
        scene = self.scene
        for edge in scene.edge_items:
            if edge.isVisible():
                scene.route_edge(edge, self._hidden_by, moving=True)

    @property
    def gliding(self) -> bool:
        return self._glide is not None

    # ------------------------------------------------------------------ at the cursor
    def update(self, visible: set[str], index: int) -> dict[str, GroupItem]:
        """Show each box around its nodes shown at ``index`` (a shut one as one card holding
        them). Returns node id -> the shut box that hides it."""
        scene = self.scene
        layout = self.layout
        shut = layout.collapsed if layout is not None else set()
        run = scene.run
        ev = run.events[index] if run is not None and 0 <= index < len(run.events) else {}
        # the node the engine executes at the cursor, if any: its boxes light up
        self._running = f"op{ev.get('vid')}" if ev.get("ev") in ("bw_node", "bw_node_done", "accumulate") else None
        # forward: the op at the cursor, by the autograd node it made (or its output, made without grad)
        self._now = None
        if ev.get("ev") == "op":
            outputs = ev.get("outputs") or ()
            made = f"op{ev['grad_fn']}" if ev.get("grad_fn") is not None else (
                run._current_tensor_node.get(outputs[0][0]) if outputs and run is not None else None)
            self._now = (made, ev.get("op"))
        self._shown = visible
        buried = {box.key for box in self.boxes if self._buried(box, shut)}
        hidden: dict[str, GroupItem] = {}
        shown: list[GroupItem] = []
        region = scene._region_bounds if scene.virtual and layout is None else None
        # (the scene's arrays of births, deaths and places say what is shown, as ``visible`` does)
        in_arrays = layout is None and scene.virtual and not scene.live
        top, bottom = (region[1], region[3]) if region is not None else (0.0, 0.0)
        spans = self._spans
        for box in self.boxes:
            group = self.groups.get(box.key)
            span = spans.get(box.key)
            if (span is not None and (index < span[0] or (span[1] is not None and index >= span[1]))) or (
                    region is not None and (box.bottom * LAYER_HEIGHT < top or box.top * LAYER_HEIGHT > bottom)):
                # none of its nodes exists at the cursor, or (a big graph) it is far from the view
                if group is not None and group.isVisible():
                    group.setVisible(False)
                continue
            if in_arrays and len(box.members) > MEASURED_IN_ARRAYS_ABOVE:
                # a big finished run, nothing shut: which of its nodes are shown, and where, at once
                count, extent = scene._lifetimes.shown_extent(self._rows(box), index)
                if count < 2:
                    if group is not None:
                        group.setVisible(False)
                    continue
                group = self._group(box, group)
                group.collapsed = False
                group.setVisible(True)
                self._set_open(group, box, extent, count)
                shown.append(group)
                continue
            members = [m for m in box.members if m in visible] if box.key not in buried else []
            if box.key in shut and members and index < self._first_op_born(box):
                # shut, and its module has not run yet at the cursor (its parameters exist already:
                # a card "0 ops" where the graph is to grow): nothing of it shows until it runs
                group = self._group(box, group)
                group.setVisible(False)
                for m in members:
                    if m in scene.node_items:
                        scene.node_items[m].setVisible(False)
                    hidden[m] = group  # (hidden by a box not shown: their edges are not either)
                continue
            if box.key in shut:
                ok = bool(members)
            else:
                ok = len(members) >= 2
            if not ok:
                if group is not None:
                    group.setVisible(False)
                continue
            group = self._group(box, group)
            group.collapsed = box.key in shut
            group.setVisible(True)
            if group.collapsed:
                self._show_shut(group, box, members, index, hidden)
            else:
                self._show_open(group, box, members)
            shown.append(group)
        self._place_labels(shown)
        self._hidden_by = hidden
        return hidden

    def _group(self, box: ModuleBox, group: GroupItem | None) -> GroupItem:
        """The item of ``box`` (``group``, or made now)."""
        if group is None:
            group = self.groups[box.key] = GroupItem(box)
            group.set_compared(self.compared.get(box.path))
            group.sigToggled.connect(self.toggle)
            self.scene.addItem(group)
        return group

    def _first_op_born(self, box: ModuleBox) -> int:
        """The event the first autograd node of ``box`` is born at (-1: it has none, only leaves)."""
        known = self._op_births.get(box.key)
        if known is not None and known[0] is box:
            return known[1]
        nodes = self.scene.drawing.nodes
        born = min((nodes[m].born for m in box.members if nodes[m].kind == "op"), default=-1)
        self._op_births[box.key] = (box, born)
        return born

    def _rows(self, box: ModuleBox):
        """The rows of ``box``'s nodes in the scene's lifetimes (kept while the box and the
        number of nodes taken in stay the same)."""
        lifetimes = self.scene._lifetimes
        known = self._rows_of.get(box.key)
        if known is not None and known[0] is box and known[1] == len(lifetimes.ids):
            return known[2]
        rows = lifetimes.rows_of(box.members)
        self._rows_of[box.key] = (box, len(lifetimes.ids), rows)
        return rows

    def _buried(self, box: ModuleBox, shut: set[str]) -> bool:
        parent = box.parent
        while parent is not None:
            if parent in shut:
                return True
            parent = self.keyed[parent].parent if parent in self.keyed else None
        return False

    def _show_shut(self, group: GroupItem, box: ModuleBox, members: list[str], index: int, hidden: dict) -> None:
        scene = self.scene
        items = scene.node_items
        drawing = scene.drawing
        x, y = self.layout.position(box.key)
        ops = [drawing.nodes[m] for m in members if drawing.nodes[m].kind in ("op", "accumulate")]
        run = scene.run
        held = held_by_nodes(run, {n.ref for n in ops}, index) if run is not None else Held()
        states = {n.id: (items[n.id].state if n.id in items else drawing.op_state(n.ref, index)) for n in ops}
        running = self._running is not None and self._running in states
        grad_fns = [n for n in ops if n.kind == "op"]
        freed = bool(grad_fns) and all(states[n.id] == "freed" for n in grad_fns)
        for m in members:
            if m in items:
                items[m].setVisible(False)
            hidden[m] = group
        now = self._now[1] if self._now is not None and self._now[0] in members else None
        group.set_box(QRectF(x - NODE_W / 2, y - NODE_H / 2, NODE_W, NODE_H), len(members),
                      len(grad_fns), held, running, freed, now)
        if box.repeats is not None:
            group.set_blocks(self._blocks(box, members, index))

    def _blocks(self, box: ModuleBox, members: list[str], index: int) -> tuple[tuple[str, int, int], ...]:
        """Each repeated block of ``box``: its title, its autograd nodes among ``members`` (those
        shown at ``index``) and the bytes of activations they hold there."""
        shown = set(members)
        return tuple((block.title, ops, held.activations)
                     for block, ops, held in blocks_held(self.scene.drawing, box, self.keyed, index, shown))

    def _show_open(self, group: GroupItem, box: ModuleBox, members: list[str]) -> None:
        scene = self.scene
        items = scene.node_items
        layout = self.layout
        points = []
        for m in members:
            inner = layout.hidden_by.get(m) if layout is not None else None
            if inner is not None:
                points.append(QPointF(*layout.position(inner)))
            elif m in items:
                points.append(items[m].pos())  # where it is now (it may be gliding)
            else:
                points.append(QPointF(*scene.place_of(m)))
        xs = [p.x() for p in points]
        ys = [p.y() for p in points]
        self._set_open(group, box, (min(xs), min(ys), max(xs), max(ys)), len(members))

    def _set_open(self, group: GroupItem, box: ModuleBox, extent: tuple[float, float, float, float],
                  count: int) -> None:
        """An open box drawn around ``count`` nodes whose centres span ``extent`` (left, top, right, bottom)."""
        left, top, right, bottom = extent
        rect = QRectF(left - NODE_W / 2, top - NODE_H / 2, right - left + NODE_W, bottom - top + NODE_H)
        # nested boxes step inwards; vertically they stay inside the gap between rows, so the
        # boxes of two modules one after the other (the layout stacks them) never overlap
        level = 3 - min(3, box.level)
        pad_x, pad_y = 10 + 7 * level, 6 + 5 * level
        running = self._running is not None and self._running in box.members and self._running in self._shown
        group.set_box(rect.adjusted(-pad_x, -pad_y, pad_x, pad_y), count, 0, None, running)

    def _place_labels(self, groups: list[GroupItem]) -> None:
        """A nested box often starts on the same row as its parent: move its name right of the
        parent's. A name moved past its own box's edge, or made longer by a comparison, must not
        run into another box's name either: each name goes right of every name already placed
        that it would cross (Whisper's ``model``, ``model.encoder`` and ``model.encoder.conv1``
        start on one row)."""
        placed: dict[str, list[tuple[GroupItem, QRectF]]] = {}  # key -> its label
        bands: dict[int, list[QRectF]] = {}  # every open box's label placed so far, by height
        band_h = 2 * GroupItem.LABEL_H

        def near(rect: QRectF) -> list[QRectF]:
            first, last = int(rect.top() // band_h), int(rect.bottom() // band_h)
            return [r for b in range(first, last + 1) for r in bands.get(b, ())]

        for group in sorted(groups, key=lambda g: (g.box.level, g.rect.left())):
            shift = 0.0
            others = []
            parent = group.box.parent
            while parent is not None:
                others += [label for outer, label in placed.get(parent, ()) if outer.rect.intersects(group.rect)]
                parent = self.keyed[parent].parent if parent in self.keyed else None
            if not group.collapsed:
                for _ in range(64):
                    label = group.label_rect(shift)
                    blocking = [r for r in others + near(label) if r.intersects(label)]
                    if not blocking:
                        break
                    shift = max(r.right() for r in blocking) + 6 - (group.rect.left() + 10)
            spared = tuple(r for r in others if r.intersects(group.rect.adjusted(-1, -1, 1, 1)))
            if shift != group.label_shift or spared != group.spared:
                group.prepareGeometryChange()
                group.label_shift = shift
                group.spared = spared
                group.update()
            label = group.label_rect()
            placed.setdefault(group.key, []).append((group, label))
            if not group.collapsed:
                for b in range(int(label.top() // band_h), int(label.bottom() // band_h) + 1):
                    bands.setdefault(b, []).append(label)
