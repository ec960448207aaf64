"""GraphScene: the items of one run's drawing, shown at the timeline's cursor.

A big drawing is virtual: the scene knows every node's place and whether it is shown at the
cursor, but makes items (``NodeItem``, ``EdgeItem``) only for the nodes in the region the view
shows and around it (:meth:`GraphScene.set_region`), and takes them away once the view has moved
on; a selected node keeps its item. What has no item is sketched (:mod:`graphview.qt.canvas.sketch`):
a zoomed-out view, the overview, the margins a fast pan reaches first. A drawing of up to
``VIRTUAL_ABOVE`` nodes has an item for every node, always.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QPointF, QRectF, Signal
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene

from graphview.core.drawing import LAYER_HEIGHT, SLOT_WIDTH, Drawing
from graphview.core.run import ACCUMULATE_GRAD, Run
from graphview.qt.canvas.edges import EdgeItem
from graphview.qt.canvas.groups import GroupItem
from graphview.qt.canvas.lifetimes import Lifetimes
from graphview.qt.canvas.module_boxes import ModuleBoxes
from graphview.qt.canvas.nodes import ITEM_BOUNDS, NodeItem
from graphview.qt.canvas.pool import ItemPool
from graphview.qt.canvas.pulse import PulseItem
from graphview.qt.canvas.sketch import SketchItem
from graphview.qt.canvas.style import NODE_H, NODE_W, colors
from graphview.qt.formatting import short_value


#: drawings with more placed nodes than this make items only near the view
VIRTUAL_ABOVE = 3000
#: side of a cell of the index of node places, in scene units
GRID = 800.0
#: the longest the layout of a streaming run holds the event loop in one slice
LAYOUT_SLICE_S = 0.015
#: the longest the layout and the taking in of its nodes hold it (their edges and lifetimes, in
#: proportion, follow): a slice of a streaming run, a repaint and the next events read fit in 100 ms
SCENE_SLICE_S = 0.025


class GraphScene(QGraphicsScene):
    """Holds the items of one run's drawing and shows them at a cursor."""

    sigNodeSelected = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.run: Run | None = None
        self.drawing: Drawing | None = None
        self.node_items: dict[str, NodeItem] = {}  # the nodes that have an item now
        self._edge_item_of: dict[int, EdgeItem] = {}  # index in drawing.edges -> its item
        self._edges_done = 0  # drawing edges taken in so far
        self._edge_ids_of: dict[str, list[int]] = {}  # node id -> indexes of its drawing edges
        self._edges_blocked: dict[str, list[int]] = {}  # node id not taken in yet -> edges waiting for it
        self._placed: list[str] = []  # every placed node the scene took in
        self._taken: set[str] = set()
        self.region: QRectF | None = None  # where items are made (None: everywhere)
        self._region_bounds: tuple[float, float, float, float] | None = None  # its left, top, right, bottom
        self._grid: dict[tuple[int, int], list[str]] | None = None  # cell -> node ids placed there
        self.sketch = SketchItem(self)
        self._pool = ItemPool()  # items taken away near a view that moved on, to be used again
        self._lifetimes = Lifetimes(self)
        self._edges_into: dict[str, list[EdgeItem]] = {}
        self._waiting: list[str] = []
        self.boxes = ModuleBoxes(self)  # module boxes, which are shut, and the layout that follows
        self.live = False  # a runner is streaming into this scene
        self.patient = False  # a trace is being read into it: leaves wait for their users, however far
        self._groups_at = 0.0
        self._boxes_at = 0.0  # when the module boxes were last found again, and how often they may be
        self._boxes_every = 0.5
        self._complete = False  # every item has been brought to the cursor once
        self._fresh: set[str] = set()  # items created since the last cursor move
        self._visible: set[str] = set()  # node ids shown at the cursor (module boxes look only at these)
        self._edges_from: dict[str, list] = {}
        self._tensors_of_op: dict[int, list[str]] = {}  # grad_fn vid -> tensor items it made
        self.cursor = -1
        self._gone_at: tuple = (None, None)  # (cursor, run size) -> graph_gone_at()
        self._kept_selection: str | None = None  # the node the user selected, while it is hidden
        self.setBackgroundBrush(colors().q("background"))
        self.selectionChanged.connect(self._on_selection)
        from graphview.qt.theme import changes  # here: the theme module imports the canvas's colours

        changes().changed.connect(self.apply_theme)

    def apply_theme(self, theme=None) -> None:
        """The theme changed: the background and the edges' pens take its colours; the rest repaints."""
        self.setBackgroundBrush(colors().q("background"))
        for edge in self.edge_items:
            edge.apply_theme()
        self.update()

    @property
    def edge_items(self) -> list[EdgeItem]:
        """The edges that have an item now."""
        return list(self._edge_item_of.values())

    @property
    def virtual(self) -> bool:
        """Whether items are made only near the view (a big drawing shown in a view)."""
        return self.region is not None and len(self._placed) > VIRTUAL_ABOVE

    @property
    def groups(self) -> dict[str, GroupItem]:
        """Module box key (its path, ``path#2`` for a second call) -> its item."""
        return self.boxes.groups

    @property
    def collapsed(self) -> set[str]:
        """Keys of the shut module boxes."""
        return self.boxes.collapsed

    def set_run(self, run: Run) -> None:
        self.boxes.reset()
        # forgotten before the items go: clearing them unselects the selected one, and what listens
        # to the selection (the selection's handler, the overview looking for the cursor's node,
        # which makes an item for it and routes its edges) must find no node, item or edge of the
        # last run among items already deleted
        self._kept_selection = None
        self.run = None
        self.drawing = None
        self.cursor = -1
        self.node_items.clear()
        self._edges_into.clear()
        self._edges_from = {}
        self._taken = set()
        self._visible = set()
        self.clear()
        self.sketch = SketchItem(self)
        self._edge_item_of = {}
        self._edges_done = 0
        self._edge_ids_of = {}
        self._edges_blocked = {}
        self._placed = []
        self._grid = None
        self._lifetimes = Lifetimes(self)
        self._waiting = []
        self._complete = False
        self._fresh = set()
        self._tensors_of_op = {}
        self.run = run
        self.drawing = Drawing(run)
        self._kept_selection = None
        self.grow()

    def grow(self, budget: int | None = None, seconds: float | None = None) -> bool:
        """Add items for what the run gained since the last call (positions never change).

        With ``budget``, create at most that many items now (the GUI thread stays responsive
        while a big graph streams in), in at most :data:`SCENE_SLICE_S`, or ``seconds`` when that
        is less (what is left of the event loop's turn); returns True when items are still waiting.
        """
        if self.drawing is None:
            return False
        start = time.perf_counter()
        slice_s = SCENE_SLICE_S if seconds is None else max(0.002, min(SCENE_SLICE_S, seconds))
        # with a budget (a run streaming in), the layout takes a slice of the event loop too
        self._waiting.extend(self.drawing.update(final=self.run is not None and self.run.end is not None,
                                                 patient=self.patient,
                                                 seconds=None if budget is None else
                                                 slice_s * LAYOUT_SLICE_S / SCENE_SLICE_S))
        now = time.monotonic()
        if not self.live or now - self._boxes_at >= self._boxes_every or self.boxes.collapsed:
            # streaming: boxes catch up now and then, at most a tenth of the time
            self.boxes.refresh(on_a_thread=budget is not None)
            took = time.monotonic() - now
            self._boxes_at = time.monotonic()
            self._boxes_every = max(0.5, took * 10, self.boxes.thread_took * 10)
        made = taken = 0
        unplaced = []
        waiting = self._waiting
        # a big scene makes few items: it takes in more nodes a slice, but not without bound
        virtual = self.virtual
        limit = None if budget is None else (budget * 25 if virtual else budget)
        nodes, tensor_nodes = self.drawing.nodes, self.drawing.run.tensor_nodes
        placed, taken_in, blocked, of_op = self._placed, self._taken, self._edges_blocked, self._tensors_of_op
        # ... and so does taking its nodes in (their edges and lifetimes follow in proportion)
        deadline = None if budget is None else start + slice_s
        # a drawing taken in whole that will be big makes no items yet: once it is, the views say
        # where they look, and items are made there (3,000 made first, then dropped, cost ~0.2 s)
        unmade = budget is None and self.region is None and len(placed) + len(waiting) > VIRTUAL_ABOVE \
            and any(hasattr(view, "update_region") for view in self.views())
        while taken < len(waiting) and (limit is None or (made if not virtual else taken) < limit):
            if deadline is not None and taken & 63 == 63 and time.perf_counter() > deadline:
                break
            node_id = waiting[taken]
            taken += 1
            node = nodes[node_id]
            if not node.placed:  # a leaf still waiting for its first user: no position yet
                unplaced.append(node_id)
                continue
            placed.append(node_id)
            taken_in.add(node_id)
            if len(placed) == VIRTUAL_ABOVE + 1:
                if self.region is None:
                    self._ask_views_for_region()  # big from now on: items only where a view looks
                virtual = self.virtual
            if self._grid is not None and budget is not None:
                self._index(node_id)
            tnode = tensor_nodes.get(node_id)
            if tnode is not None and tnode.grad_fn is not None:
                of_op.setdefault(tnode.grad_fn, []).append(node_id)
            if not unmade and (not virtual or self._in_region(node_id)):
                self._make_item(node_id, node.born <= self.cursor)
                made += 1
            if node_id in blocked:
                for number in blocked.pop(node_id):
                    self._take_edge(number)  # an edge that waited for this node
        self._waiting = unplaced + waiting[taken:]
        if budget is None:
            self._grid = None  # taken in whole: the index of places is made again, at once, when next asked
        edges = self.drawing.edges
        for number in range(self._edges_done, len(edges)):
            self._take_edge(number)
        self._edges_done = len(edges)
        if self.region is None and len(self._placed) > VIRTUAL_ABOVE:
            self._ask_views_for_region()
        if unmade and not self.virtual:  # no view said where it looks after all: items everywhere
            self.set_region(None)
        if self.virtual and len(self.node_items) > 2 * VIRTUAL_ABOVE:
            self._sync_region()  # the drawing just became big: items only near the view from now on
        if self.virtual and (not self.live or self.patient):
            # a slice's worth now (a trace being read too), not the whole run at the next long jump
            self._lifetimes.grow()
        self.fit_scene_rect()
        return self.drawing.behind or any(self.drawing.nodes[n].placed for n in self._waiting)

    # ------------------------------------------------------------------ items, made where they are seen
    def _make_item(self, node_id: str, visible: bool, update: bool = False) -> NodeItem:
        node = self.drawing.nodes[node_id]
        item = self._pool.node_item(node)
        where = self.place_of(node_id)
        if where is not None:
            item.setPos(*where)
        self._show(item, visible)
        self.node_items[node_id] = item
        self._fresh.add(node_id)
        if update and self.cursor >= 0:  # made for the view after the cursor moved: its look there
            self._update_item(item, self.cursor)
        for number in self._edge_ids_of.get(node_id, ()):
            if number not in self._edge_item_of:
                self._make_edge(number)
        return item

    def _take_edge(self, number: int) -> None:
        """Take in drawing edge ``number`` once both its nodes are taken in (until then it waits
        for the missing one, without holding up the edges after it)."""
        edge = self.drawing.edges[number]
        source, target = edge.source, edge.target
        taken = self._taken
        waits_for = source if source not in taken else (target if target not in taken else None)
        if waits_for is not None:
            self._edges_blocked.setdefault(waits_for, []).append(number)
            return
        ids_of = self._edge_ids_of  # (called for every edge of a big run: no loops over the two ends)
        numbers = ids_of.get(source)
        if numbers is None:
            ids_of[source] = [number]
        else:
            numbers.append(number)
        numbers = ids_of.get(target)
        if numbers is None:
            ids_of[target] = [number]
        else:
            numbers.append(number)
        items = self.node_items
        if source in items and target in items:  # (a big scene: most nodes have no item)
            self._make_edge(number, initial=True)

    def _make_edge(self, number: int, initial: bool = False) -> None:
        edge = self.drawing.edges[number]
        source, target = self.node_items.get(edge.source), self.node_items.get(edge.target)
        if source is None or target is None:
            return
        layout = self.boxes.layout
        half = NODE_W / 2 + 12
        clear = (layout.path_clear(edge.source, edge.target, half) if layout is not None
                 else self.drawing.path_clear(source.node, target.node, half))
        item = self._pool.edge_item(edge, source, target, clear)
        self._edge_item_of[number] = item
        self._edges_into.setdefault(edge.target, []).append(item)
        self._edges_from.setdefault(edge.source, []).append(item)
        if initial or not self._complete:
            self._show(item, edge.born <= self.cursor and source.isVisible() and target.isVisible())
        else:
            self._update_edge(item, self.cursor, self.boxes._hidden_by)

    def _drop_item(self, node_id: str) -> None:
        """Take a node's item (and its edges' items) away: the view has moved on."""
        item = self.node_items.pop(node_id, None)
        if item is None:
            return
        for number in self._edge_ids_of.get(node_id, ()):
            edge_item = self._edge_item_of.pop(number, None)
            if edge_item is None:
                continue
            for table, key in ((self._edges_into, edge_item.edge.target), (self._edges_from, edge_item.edge.source)):
                items = table.get(key)
                if items is not None and edge_item in items:
                    items.remove(edge_item)
            if edge_item.scene() is not None:
                self.removeItem(edge_item)
            self._pool.give_back(edge_item)
        if item.scene() is not None:
            self.removeItem(item)
        self._pool.give_back(item)

    def place_of(self, node_id: str) -> tuple[float, float] | None:
        """Where a node is drawn now: its cell in the layout (a node inside a shut box: that box's),
        or the drawing's own place."""
        layout = self.boxes.layout
        if layout is not None:
            return layout.position(layout.hidden_by.get(node_id, node_id))
        node = self.drawing.nodes[node_id]
        return node.x, node.y

    def _index(self, node_id: str) -> None:
        if self.boxes.layout is None:  # (the common case, inline: a big graph indexes every node)
            node = self.drawing.nodes[node_id]
            key = (int(node.slot * SLOT_WIDTH // GRID), int(node.layer * LAYER_HEIGHT // GRID))
            cell = self._grid.get(key)
            if cell is None:
                self._grid[key] = [node_id]
            else:
                cell.append(node_id)
            return
        where = self.place_of(node_id)
        if where is not None:
            self._grid.setdefault((int(where[0] // GRID), int(where[1] // GRID)), []).append(node_id)

    def layout_changed(self) -> None:
        """Nodes moved (a box opened or shut): the index of places is made again when next needed."""
        self._grid = None
        if self.virtual:
            self._sync_region()

    def _in_region(self, node_id: str) -> bool:
        bounds = self._region_bounds
        if bounds is None:
            return self.region is None
        if self.boxes.layout is None:  # at its drawing place (inline: called for every node a big graph takes in)
            node = self.drawing.nodes[node_id]
            x, y = node.slot * SLOT_WIDTH, node.layer * LAYER_HEIGHT
            return bounds[0] <= x <= bounds[2] and bounds[1] <= y <= bounds[3]
        where = self.place_of(node_id)
        # plain comparisons: a call into Qt per node would hand the interpreter lock to a thread
        # reading a trace and wait to get it back, thousands of times a slice
        return where is not None and bounds[0] <= where[0] <= bounds[2] and bounds[1] <= where[1] <= bounds[3]

    #: side of a cell of the index of places (scene units)
    GRID = GRID

    def cells_in(self, rect: QRectF) -> list[tuple[tuple[int, int], list[str]]]:
        """The cells of the index of places that meet ``rect``: ((column, row), node ids placed there)."""
        grid = self._built_grid()
        x0, x1 = int(rect.left() // GRID), int(rect.right() // GRID)
        y0, y1 = int(rect.top() // GRID), int(rect.bottom() // GRID)
        if (x1 - x0 + 1) * (y1 - y0 + 1) > len(grid):
            return [(cell, ids) for cell, ids in grid.items() if x0 <= cell[0] <= x1 and y0 <= cell[1] <= y1]
        return [((gx, gy), grid[(gx, gy)]) for gx in range(x0, x1 + 1) for gy in range(y0, y1 + 1) if (gx, gy) in grid]

    def _built_grid(self) -> dict[tuple[int, int], list[str]]:
        if self._grid is None:
            if self.boxes.layout is None and len(self._placed) > VIRTUAL_ABOVE:
                self._grid = self._lifetimes.cells(GRID)  # at once, from the arrays of places
            else:
                self._grid = {}
                for node_id in self._placed:
                    self._index(node_id)
        return self._grid

    def ids_in(self, rect: QRectF) -> list[str]:
        """Placed nodes whose place lies in ``rect`` (scene units), shown at the cursor or not."""
        self._built_grid()
        found = []
        for gx in range(int(rect.left() // GRID), int(rect.right() // GRID) + 1):
            for gy in range(int(rect.top() // GRID), int(rect.bottom() // GRID) + 1):
                found.extend(self._grid.get((gx, gy), ()))
        return found

    def set_region(self, rect: QRectF | None) -> None:
        """The view shows ``rect`` (scene units) and may soon show what is around it: a big
        drawing makes items there and takes away the items of what is far from it (None: items
        everywhere, as an export needs)."""
        self.region = QRectF(rect) if rect is not None else None
        region = self.region
        self._region_bounds = None if region is None or region.isEmpty() else \
            (region.left(), region.top(), region.right(), region.bottom())
        if self.region is None or not self.virtual:
            missing = [n for n in self._placed if n not in self.node_items]
            for node_id in missing:
                self._make_item(node_id, False)
            if missing and self.cursor >= 0:
                self._complete = False
                self.set_cursor(self.cursor)
            return
        self._sync_region()

    def _sync_region(self) -> None:
        region = self.region
        keep = set(self.ids_in(region)) if not region.isEmpty() else set()
        selected = {i.node.id for i in self.selectedItems() if isinstance(i, NodeItem)}
        for node_id in [n for n in self.node_items if n not in keep and n not in selected]:
            self._drop_item(node_id)
        made = [n for n in keep if n not in self.node_items and n in self._visible and self._in_region(n)]
        for node_id in made:
            self._make_item(node_id, True, update=True)
        if self.cursor >= 0:  # the boxes near the view now, and the edges of the new items
            hidden_by = self.boxes.update(self._visible, self.cursor)
            for node_id in made:
                for item in self._edges_into.get(node_id, []) + self._edges_from.get(node_id, []):
                    self._update_edge(item, self.cursor, hidden_by)

    def shown_anything(self) -> bool:
        """Whether any node is shown at the cursor (as an item, in the sketch, or in a shut box)."""
        return bool(self._visible)

    def graph_gone_at(self) -> int | None:
        """When autograd destroyed the last graph, if none is alive at the cursor (between steps,
        after the run: only leaves and their .grad are left); else None. Not asked of a big run."""
        run, index = self.run, self.cursor
        if run is None or self.virtual or index < 0:
            return None
        key = (index, len(run.op_nodes), len(run.events))
        if self._gone_at[0] == key:
            return self._gone_at[1]
        latest = None
        for op in run.op_nodes.values():
            if op.born > index or op.name == ACCUMULATE_GRAD:  # (a leaf's accumulator outlives graphs)
                continue
            if op.dead is None or op.dead > index:
                latest = None  # a graph is alive
                break
            latest = op.dead if latest is None else max(latest, op.dead)
        self._gone_at = (key, latest)
        return latest

    def placed_ids(self) -> list[str]:
        """Every node placed so far, in the order the scene took them in (items or not)."""
        return list(self._placed)

    def item_for(self, node_id: str) -> NodeItem | None:
        """The item of a node, made now if the view has not made it (a search hit, a finding)."""
        item = self.node_items.get(node_id)
        if item is None and node_id in self._taken:
            item = self._make_item(node_id, node_id in self._visible)
            self._update_item(item, self.cursor)
            hidden_by = self.boxes.update(self._visible, self.cursor)
            for edge in self._edges_into.get(node_id, []) + self._edges_from.get(node_id, []):
                self._update_edge(edge, self.cursor, hidden_by)
        return item

    def shown_rect(self) -> QRectF:
        """What is shown at the cursor, nodes and shut boxes, in scene units (null: nothing)."""
        rect = QRectF()
        if not self.virtual:
            for item in self.node_items.values():
                if item.isVisible():
                    rect = rect.united(item.sceneBoundingRect())
        elif self.boxes.layout is None and not self.live and self.run is not None:
            extent = self._lifetimes.extent_at(self.cursor)  # every node at its drawing place
            if extent is not None:
                x0, y0, x1, y1 = extent
                probe = ITEM_BOUNDS
                rect = QRectF(x0 + probe.left(), y0 + probe.top(), x1 - x0 + probe.width(), y1 - y0 + probe.height())
        else:
            xs, ys = [], []
            hidden = self.boxes._hidden_by
            for node_id in self._visible:
                if node_id in hidden:
                    continue
                where = self.place_of(node_id)
                if where is not None:
                    xs.append(where[0])
                    ys.append(where[1])
            if xs:
                probe = ITEM_BOUNDS
                rect = QRectF(min(xs) + probe.left(), min(ys) + probe.top(), max(xs) - min(xs) + probe.width(),
                              max(ys) - min(ys) + probe.height())
        for group in self.groups.values():
            if group.isVisible() and group.collapsed:
                rect = rect.united(group.sceneBoundingRect())
        return rect

    def newest_shown(self) -> str | None:
        """The node shown at the cursor that was born last (where a run is)."""
        hidden = self.boxes._hidden_by
        if not hidden and self.virtual and not self.live:  # a big finished run: from the arrays, at once
            return self._lifetimes.newest_at(self.cursor)
        shown = [n for n in self._visible if n not in hidden]
        return max(shown, key=lambda n: self.drawing.nodes[n].born) if shown else None

    def fit_scene_rect(self) -> None:
        """The scene's rect: every placed node (or laid-out unit, with boxes shut) and a margin."""
        x0, y0, x1, y1 = self.boxes.bounds() or self.drawing.bounds()
        self.setSceneRect(QRectF(x0 - NODE_W, y0 - NODE_H * 2, x1 - x0 + NODE_W * 2, y1 - y0 + NODE_H * 4))
        self.sketch.changed()

    def _ask_views_for_region(self) -> None:
        for view in self.views():  # the view says where it looks
            if hasattr(view, "update_region"):
                view.update_region()

    def set_cursor(self, index: int) -> None:
        """Show the state after event ``index``.

        A move of up to a few thousand events, either way (streaming, stepping, scrubbing),
        only revisits the items the events in between touch; a longer jump, or one with a module
        box collapsed, checks them all.
        """
        previous = self.cursor
        self.cursor = index
        drawing = self.drawing
        if drawing is None:
            return
        incremental = self._complete and previous >= 0 and abs(index - previous) <= 3000 and not self.boxes.collapsed
        if incremental:
            ids = [i for i in self._touched(min(previous, index), max(previous, index)) if i in self._taken]
        elif self.virtual and not self.live and self.run is not None:
            # a big finished run: which nodes are shown, at once for all of them; then only the
            # items and the nodes near the view are revisited
            shown = self._lifetimes.shown_at(index)
            self._visible = shown
            near = [n for n in self.ids_in(self.region) if n in shown] if not self.region.isEmpty() else []
            ids = list(set(self.node_items).union(near))
        else:
            ids = self._placed
        self._fresh.clear()
        virtual = self.virtual
        items = []
        for node_id in ids:
            item = self.node_items.get(node_id)
            if item is not None:
                self._update_item(item, index)
                if virtual and not item.isVisible() and not item.isSelected():
                    self._drop_item(node_id)  # gone at this cursor: no item kept for it
                else:
                    items.append(item)
                continue
            if drawing.visible(drawing.nodes[node_id], index):
                self._visible.add(node_id)
                if not virtual or self._in_region(node_id):
                    items.append(self._make_item(node_id, True))
                    self._update_item(items[-1], index)
            else:
                self._visible.discard(node_id)
        now = time.monotonic()
        if self.live and now - self._groups_at < 0.5 and not self.boxes.collapsed:
            hidden_by = {}  # streaming: module boxes catch up twice a second
        else:
            self._groups_at = now
            hidden_by = self.boxes.update(self._visible, index)
        if incremental and not hidden_by:
            # nothing collapsed: only the edges of the items revisited can change
            edges = {e for item in items for e in self._edges_into.get(item.node.id, []) + self._edges_from.get(item.node.id, [])}
        else:
            edges = self.edge_items
        for edge in edges:
            self._update_edge(edge, index, hidden_by)
        self._complete = True
        self._select_kept_again()
        if self.virtual:
            self.sketch.update()

    def _show(self, item: QGraphicsItem, visible: bool) -> None:
        """Show or hide an item for the cursor. A hidden one also leaves the scene: every step of
        a long training run leaves a destroyed graph behind, and thousands of hidden items in
        the scene's index would slow down every repaint of the whole view."""
        item.setVisible(visible)
        if visible:
            if item.scene() is None:
                self.addItem(item)
        elif item.scene() is not None:
            self.removeItem(item)

    def _update_item(self, item: NodeItem, index: int) -> None:
        drawing = self.drawing
        run = drawing.run
        node = item.node
        if node.kind not in ("op", "accumulate"):
            # a name can come after the item was made (the script binds it once the op returned,
            # and a live run's events come in batches): hidden or not, the item takes it
            name = run.tensor_name(node.ref)
            if name and not node.title.startswith(name):
                node.title = name + (node.title[node.title.index(" ("):] if " (v" in node.title else "")
                item.update()
        visible = drawing.visible(node, index)
        self._show(item, visible)
        if not visible:
            self._visible.discard(node.id)
            return
        self._visible.add(node.id)
        if node.kind in ("op", "accumulate"):
            state = drawing.op_state(node.ref, index)
            sent = run.non_finite_out(node.ref, index) if node.kind == "op" else None
            note = None if sent is None else ("NaN/Inf starts here" if sent == "first" else "sends NaN/Inf")
            item.set_state(state, node.kind, drawing.saved_bytes(node.ref, index), note)
            return
        kind = "output" if node.kind == "intermediate" and drawing.is_output(node.ref, index) else node.kind
        entry = run.grad_at(node.ref, index)
        item.set_value(run.value_at(node.ref, index))
        grad = short_value(entry.value) if entry is not None and entry.value is not None else None
        if grad is None and run.none_grad_reads.get(node.ref, index + 1) <= index:
            grad = "None"  # the script read .grad and got None (a non-leaf, a leaf backward never reached)
        state = "error" if run.errors and node.ref in drawing.failed_roots(index) else drawing.tensor_state(node, index)
        item.set_state(state, kind, 0, grad)

    def _update_edge(self, edge: "EdgeItem", index: int, hidden_by: dict) -> None:
        source_group = hidden_by.get(edge.source.node.id)
        target_group = hidden_by.get(edge.target.node.id)
        visible = (edge.edge.born <= index
                   and (edge.source.isVisible() or (source_group is not None and source_group.isVisible()))
                   and (edge.target.isVisible() or (target_group is not None and target_group.isVisible()))
                   and not (source_group is not None and source_group is target_group))
        self._show(edge, visible)
        if not visible:
            return
        self.route_edge(edge, hidden_by)
        edge.set_freed(not {"freed", "unreachable"}.isdisjoint((edge.target.state, edge.source.state)))

    def route_edge(self, edge: "EdgeItem", hidden_by: dict, moving: bool = False) -> None:
        """Route an edge between its nodes, or to the edge of the shut box that hides one
        (``moving``: its nodes are gliding, route it again from where they are now)."""
        source_group = hidden_by.get(edge.source.node.id)
        target_group = hidden_by.get(edge.target.node.id)
        if source_group is not None or target_group is not None:
            start = source_group.anchor_out() if source_group else edge.source.pos() + QPointF(0, NODE_H / 2)
            end = target_group.anchor_in() if target_group else edge.target.pos() - QPointF(0, NODE_H / 2 + 2)
            edge.route(start, end)
            edge.rerouted = True
        elif moving:
            edge.rerouted = False
            edge.route_between_nodes()
        else:
            edge.default_route()

    def _nodes_of_event(self, index: int) -> list[str]:
        """The node ids event ``index`` is about, the likeliest first: the grad_fn node a backward
        step runs, or the node an op made (its output tensor, else its grad_fn)."""
        run = self.run
        if run is None or not 0 <= index < len(run.events):
            return []
        ev = run.events[index]
        candidates: list[str] = []
        if ev.get("vid") is not None:
            candidates.append(f"op{ev['vid']}")
        for tid, _ in ev.get("outputs") or ():
            candidates.extend(n.id for n in run._tensor_nodes_of.get(tid, ()))
        if ev.get("grad_fn") is not None:
            candidates.append(f"op{ev['grad_fn']}")
        if ev.get("tid") is not None:
            candidates.extend(n.id for n in run._tensor_nodes_of.get(ev["tid"], ()))
        return candidates

    def place_at_event(self, index: int) -> QRectF | None:
        """Where the shown node event ``index`` is about is drawn (its box, or the shut module box
        holding it), in scene units, found without making an item (a view zoomed out beyond
        reading makes none): None when that node is not shown at ``index``."""
        hidden_by = self.boxes._hidden_by
        for node_id in self._nodes_of_event(index):
            group = hidden_by.get(node_id)
            if group is not None:
                return group.sceneBoundingRect() if group.isVisible() else None
            if node_id in self._visible and node_id in self._taken:
                item = self.node_items.get(node_id)
                if item is not None:
                    return item.mapRectToScene(QRectF(-NODE_W / 2, -NODE_H / 2, NODE_W, NODE_H))
                where = self.place_of(node_id)
                if where is not None:
                    return QRectF(where[0] - NODE_W / 2, where[1] - NODE_H / 2, NODE_W, NODE_H)
        return None

    def item_at_event(self, index: int) -> QGraphicsItem | None:
        """The shown node event ``index`` is about: the grad_fn node a backward step runs, or the
        node an op made (its output tensor, else its grad_fn); the shut box holding it, if one does."""
        hidden_by = self.boxes._hidden_by
        for node_id in self._nodes_of_event(index):
            item = self.node_items.get(node_id)
            if item is None and node_id in self._visible and node_id not in hidden_by:
                item = self.item_for(node_id)  # out of the view's region: made now
            if item is not None and item.isVisible():
                return item
            if node_id in hidden_by:
                return hidden_by[node_id]
        return None

    def _touched(self, previous: int, index: int) -> set[str]:
        """Ids of the items whose look can differ between cursor positions ``previous`` < ``index``."""
        run = self.drawing.run
        events = run.events
        touched: set[str] = set(self._fresh)

        def op(vid):
            if vid is not None:
                touched.add(f"op{vid}")
                touched.update(self._tensors_of_op.get(vid, ()))

        def tensor(tid):
            if tid is not None:
                touched.update(n.id for n in run._tensor_nodes_of.get(tid, ()))

        ends = False
        for i in range(max(previous, 0), min(index, len(events) - 1) + 1):
            ev = events[i]
            kind = ev.get("ev")
            if kind in ("node_dead", "step_end", "tensor_dead"):
                ends = True  # a derived no-grad tensor goes with what it feeds, or its step; an input too, once freed
            if kind in ("bw_node", "bw_node_done", "node", "node_dead", "error"):
                op(ev.get("vid"))
            if kind == "error" and ev.get("bid") in run.backwards:
                for tid in run.backwards[ev["bid"]].roots_tensors:
                    tensor(tid)
            elif kind == "accumulate":
                op(ev.get("vid"))
                tensor(ev.get("tid"))
            elif kind in ("tensor", "name", "value", "tensor_grad", "grad_read", "tensor_dead"):
                tensor(ev.get("tid"))
            elif kind == "grad_reset":
                for tid in ev.get("tids") or ():
                    tensor(tid)
            elif kind in ("saved", "own"):
                op(ev.get("owner"))
            elif kind == "release":
                saved = run.saved.get(ev["sid"])
                op(saved.owner if saved else None)
            elif kind == "backward_start":
                for tid in ev.get("root_tensors") or ():
                    tensor(tid)
            elif kind == "op":
                for tid, _ in list(ev.get("outputs") or ()) + list(ev.get("inputs") or ()):
                    tensor(tid)
        if ends:
            touched.update(self.drawing.derived_changing(previous, index))
            touched.update(self.drawing.inputs_changing(previous, index))
        return touched

    def module_of(self, item: NodeItem) -> str | None:
        return item.node.module

    def shown_at_cursor(self, node_id: str) -> bool:
        """Whether a node exists at the cursor, drawn or inside a shut module box."""
        return node_id in self._visible

    def reveal(self, node_ids) -> bool:
        """Open the shut module boxes hiding any of ``node_ids``; True when any opened."""
        return self.boxes.reveal(node_ids)

    def set_collapsed(self, key: str, collapsed: bool, animate: bool = True) -> None:
        """Shut or open the module box ``key`` (its path, ``path#2`` for a second call)."""
        self.boxes.set_collapsed(key, collapsed, animate)

    def edges_into(self, node_id: str) -> list[EdgeItem]:
        return self._edges_into.get(node_id, [])

    def pulse(self, node_id: str, grads: list, duration_ms: int) -> None:
        """Animate the gradients a node sends backwards along its incoming edges."""
        for edge in self.edges_into(node_id):
            if edge.isVisible() and edge.edge.kind in ("flow", "accumulate"):
                text = ""
                if grads:
                    text = grads[0] if isinstance(grads[0], str) else ""
                self.addItem(PulseItem(edge, text, duration_ms))

    def select_node(self, node_id: str) -> None:
        if node_id not in self._taken:
            return
        self.reveal([node_id])
        item = self.item_for(node_id)
        if item is None:
            return
        self.clearSelection()
        item.setSelected(True)

    def _on_selection(self) -> None:
        selected = [i for i in self.selectedItems() if isinstance(i, NodeItem)]
        if selected:
            self._kept_selection = selected[0].node.id
            self.sigNodeSelected.emit(self._kept_selection)
            return
        kept = self._kept_selection
        item = self.node_items.get(kept) if kept else None
        if kept and (item is None or not item.isVisible()):
            # hidden at this cursor (not made yet, destroyed, in a shut box), not unselected: the
            # Inspector keeps it, and it is selected again where it is shown
            return
        self._kept_selection = None
        self.sigNodeSelected.emit("")  # a click on empty canvas: nothing is selected

    def _select_kept_again(self) -> None:
        kept = self._kept_selection
        item = self.node_items.get(kept) if kept else None
        if item is not None and item.isVisible() and not item.isSelected():
            item.setSelected(True)
