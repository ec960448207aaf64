"""GraphScene: the items of one run's drawing, shown at the timeline's cursor.

A big drawing is virtual: the scene knows every node's place and whether it is shown at the
cursor, but makes items (``NodeItem``, ``EdgeItem``) only for the nodes in the region the view
shows and around it (:meth:`GraphScene.set_region`), and takes them away once the view has moved
on; a selected node keeps its item. What has no item is sketched (:mod:`graphview.qt.canvas.sketch`):
a zoomed-out view, the overview, the margins a fast pan reaches first. A drawing of up to
``VIRTUAL_ABOVE`` nodes has an item for every node, always.

The scene takes in what the drawing gains (:meth:`GraphScene.grow`) and holds the parts that do
the rest, one job each:

* :class:`~graphview.qt.canvas.region.ItemRegion` (``region_items``): the node items, the item
  pool and the region where items are made, with the index of places;
* :class:`~graphview.qt.canvas.cursor.CursorState` (``at_cursor``): what is shown at the cursor
  and how each item looks there;
* :class:`~graphview.qt.canvas.edge_routes.EdgeRouting` (``edge_routes``): the edge items and
  their routes;
* :class:`~graphview.qt.canvas.edge_labels.EdgeLabels` (``edge_labels``): where the edges' labels go;
* :class:`~graphview.qt.canvas.selection.Selection` (``selection``): the selected node, kept while
  it is hidden;
* :class:`~graphview.qt.canvas.module_boxes.ModuleBoxes` (``boxes``): the module boxes.
"""

from __future__ import annotations

import time
from itertools import compress

from PySide6.QtCore import QRectF, Signal
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene

from graphview.core.drawing import Drawing
from graphview.core.run import Run
from graphview.qt.canvas.box_labels import BoxLabelsItem
from graphview.qt.canvas.cursor import CursorState
from graphview.qt.canvas.edge_labels import EdgeLabels
from graphview.qt.canvas.edge_routes import EdgeRouting
from graphview.qt.canvas.edges import EdgeItem, LabeledEdgeItem
from graphview.qt.canvas.groups import GroupItem
from graphview.qt.canvas.lifetimes import Lifetimes
from graphview.qt.canvas.module_boxes import ModuleBoxes
from graphview.qt.canvas.nodes import NodeItem
from graphview.qt.canvas.region import GRID, VIRTUAL_ABOVE, ItemRegion
from graphview.qt.canvas.selection import Selection
from graphview.qt.canvas.sketch import SketchItem
from graphview.qt.canvas.style import NODE_H, NODE_W, colors
from graphview.qt.theme_changes import changes

__all__ = ["GraphScene", "GRID", "VIRTUAL_ABOVE"]

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
        self._placed: list[str] = []  # every placed node the scene took in
        self._taken: set[str] = set()
        self._waiting: list[str] = []  # nodes of the drawing not taken in yet
        self.cursor = -1
        self.sketch = SketchItem(self)
        self.box_labels = BoxLabelsItem(self)
        self._lifetimes = Lifetimes(self)
        self.region_items = ItemRegion(self)
        self.at_cursor = CursorState(self)
        self.edge_routes = EdgeRouting(self)
        self.edge_labels = EdgeLabels(self)
        self.selection = Selection(self)
        self.boxes = ModuleBoxes(self)  # module boxes, which are shut, and the layout that follows
        self.live = False  # a runner is streaming into this scene
        self.ended = False  # no more events will come into its run (it ended, was read whole, or was cut off)
        self.patient = False  # a trace is being read into it: leaves wait for their users, however far
        self._boxes_at = 0.0  # when the module boxes were last found again, and how often they may be
        self._boxes_every = 0.5
        self.setBackgroundBrush(colors().q("background"))
        # to a method of the scene, not of its part: Qt drops the connection when the scene goes
        self.selectionChanged.connect(self._on_selection)
        changes().changed.connect(self.apply_theme)

    def apply_theme(self, theme=None) -> None:
        """The theme changed: the background and the edges' pens take its colours; the rest repaints."""
        self.setBackgroundBrush(colors().q("background"))
        for edge in self.edge_items:
            edge.apply_theme()
        self.update()

    # ------------------------------------------------------------------ the parts' state, by its old names
    @property
    def node_items(self) -> dict[str, NodeItem]:
        """The nodes that have an item now."""
        return self.region_items.node_items

    @property
    def edge_items(self) -> list[EdgeItem]:
        """The edges that have an item now."""
        return self.edge_routes.items

    def labeled_edges(self) -> list[LabeledEdgeItem]:
        """The edges with a label that have an item now."""
        return [edge for edge in self.edge_routes.item_of.values() if type(edge) is LabeledEdgeItem]

    def render(self, *args, **kwargs) -> None:
        """Paint the scene into a picture (an export, an animation frame, the overview), its edge
        labels placed first."""
        self.edge_labels.settle()
        super().render(*args, **kwargs)

    @property
    def region(self) -> QRectF | None:
        """Where items are made (None: everywhere)."""
        return self.region_items.region

    @property
    def _region_bounds(self) -> tuple[float, float, float, float] | None:
        return self.region_items.bounds

    @property
    def _edges_from(self) -> dict[str, list[EdgeItem]]:
        return self.edge_routes.out_of

    @property
    def _complete(self) -> bool:
        """Whether every item has been brought to the cursor once (False: the next move revisits all)."""
        return self.at_cursor.complete

    @_complete.setter
    def _complete(self, value: bool) -> None:
        self.at_cursor.complete = value

    @property
    def virtual(self) -> bool:
        """Whether items are made only near the view (a big drawing shown in a view)."""
        return self.region_items.virtual

    @property
    def groups(self) -> dict[str, GroupItem]:
        """Module box key (its path, ``path#2`` for a second call) -> its item."""
        return self.boxes.groups

    @property
    def collapsed(self) -> set[str]:
        """Keys of the shut module boxes."""
        return self.boxes.collapsed

    # ------------------------------------------------------------------ taking the drawing in
    def set_run(self, run: Run) -> None:
        self.boxes.reset()
        # forgotten before the items go: clearing them unselects the selected one, and what listens
        # to the selection (the selection's handler, the overview looking for the cursor's node,
        # which makes an item for it and routes its edges) must find no node, item or edge of the
        # last run among items already deleted
        self.selection.kept = None
        self.run = None
        self.drawing = None
        self.cursor = -1
        self.region_items.reset()
        self.edge_routes.reset()
        self._taken = set()
        self.at_cursor.reset()
        self.clear()
        self.sketch = SketchItem(self)
        self.box_labels = BoxLabelsItem(self)
        self.edge_routes.reset()
        self._placed = []
        self._taken = set()
        self._lifetimes = Lifetimes(self)
        self._waiting = []
        self.at_cursor.reset()
        self.run = run
        self.drawing = Drawing(run)
        self.ended = False  # (the session says, before it grows the scene)
        self.cursor = -1
        self.selection.kept = None
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
                                                 patient=self.patient, over=self.ended,
                                                 seconds=None if budget is None else
                                                 slice_s * LAYOUT_SLICE_S / SCENE_SLICE_S))
        now = time.monotonic()
        if not self.live or now - self._boxes_at >= self._boxes_every or self.boxes.collapsed:
            # streaming: boxes catch up now and then, at most a tenth of the time
            self.boxes.refresh(in_turns=budget is not None)
            took = time.monotonic() - now
            self._boxes_at = time.monotonic()
            self._boxes_every = max(0.5, took * 10, self.boxes.took * 10)
        # ... and so does taking its nodes in (their edges and lifetimes follow in proportion)
        unmade = self._take_in(budget, None if budget is None else start + slice_s)
        if budget is None:
            self.region_items.grid = None  # taken in whole: the index of places is made again, at once, when next asked
        self.edge_routes.take_new()
        if self.region is None and len(self._placed) > VIRTUAL_ABOVE:
            self._ask_views_for_region()
        if unmade and not self.virtual:  # no view said where it looks after all: items everywhere
            self.set_region(None)
        if self.virtual and len(self.node_items) > 2 * VIRTUAL_ABOVE:
            self.region_items.sync_region()  # the drawing just became big: items only near the view from now on
        if self.virtual and (not self.live or self.patient):
            # a slice's worth now (a trace being read too), not the whole run at the next long jump
            self._lifetimes.grow()
        self.fit_scene_rect()
        return self.drawing.behind or any(self.drawing.nodes[n].placed for n in self._waiting)

    def _take_in(self, budget: int | None, deadline: float | None) -> bool:
        """Take in the placed nodes waiting (at most ``budget`` items made, until ``deadline``),
        making the items of those in the region. Returns whether the items were left unmade: a
        drawing taken in whole that will be big makes none yet."""
        made = taken = 0
        unplaced = []
        waiting = self._waiting
        # a big scene makes few items: it takes in more nodes a slice, but not without bound
        virtual = self.virtual
        limit = None if budget is None else (budget * 25 if virtual else budget)
        nodes = self.drawing.nodes
        placed, taken_in = self._placed, self._taken
        region_items, routes = self.region_items, self.edge_routes
        blocked = routes.blocked
        # a drawing taken in whole that will be big makes no items yet: once it is, the views say
        # where they look, and items are made there (3,000 made first, then dropped, cost ~0.2 s)
        unmade = budget is None and self.region is None and len(placed) + len(waiting) > VIRTUAL_ABOVE \
            and any(hasattr(view, "update_region") for view in self.views())
        if unmade and not blocked:  # (a big trace opened: 10^5 nodes, none with an item yet)
            self._take_in_whole()
            return unmade
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
            if region_items.grid is not None and budget is not None:
                region_items.index(node_id)
            if not unmade and (not virtual or region_items.in_region(node_id)):
                region_items.make_item(node_id, node.born <= self.cursor)
                made += 1
            if node_id in blocked:
                for number in blocked.pop(node_id):
                    routes.take(number)  # an edge that waited for this node
        self._waiting = unplaced + waiting[taken:]
        return unmade

    def _take_in_whole(self) -> None:
        """What :meth:`_take_in` does, in bulk, for a drawing taken in whole that makes no items yet
        (no edge waits for a node): the placed nodes waiting are taken in, in order, and the views
        asked where they look once the ``VIRTUAL_ABOVE + 1``-th node is in, as it does one by one."""
        nodes, waiting, placed = self.drawing.nodes, self._waiting, self._placed
        flags = [nodes[node_id].placed for node_id in waiting]
        now = list(compress(waiting, flags))
        crossing = VIRTUAL_ABOVE + 1 - len(placed)  # the node that makes the drawing big, if it comes now
        if 0 < crossing <= len(now):
            placed.extend(now[:crossing])
            self._taken.update(now[:crossing])
            if self.region is None:
                self._ask_views_for_region()
            now = now[crossing:]
        placed.extend(now)
        self._taken.update(now)
        self._waiting = list(compress(waiting, [not flag for flag in flags]))

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

    def fit_scene_rect(self) -> None:
        """The scene's rect: every placed node (or laid-out unit, with boxes shut) and a margin."""
        x0, y0, x1, y1 = self.boxes.bounds() or self.drawing.bounds()
        self.setSceneRect(QRectF(x0 - NODE_W, y0 - NODE_H * 2, x1 - x0 + NODE_W * 2, y1 - y0 + NODE_H * 4))
        self.sketch.changed()
        self.box_labels.changed()

    def _ask_views_for_region(self) -> None:
        for view in self.views():  # the view says where it looks
            if hasattr(view, "update_region"):
                view.update_region()

    def placed_ids(self) -> list[str]:
        """Every node placed so far, in the order the scene took them in (items or not)."""
        return list(self._placed)

    # ------------------------------------------------------------------ items and the region (region_items)
    #: side of a cell of the index of places (scene units)
    GRID = GRID

    def place_of(self, node_id: str) -> tuple[float, float] | None:
        """Where a node is drawn now: its cell in the layout (a node inside a shut box: that box's),
        or the drawing's own place."""
        return self.region_items.place_of(node_id)

    def layout_changed(self) -> None:
        """Nodes moved (a box opened or shut): the index of places is made again when next needed."""
        self.region_items.layout_changed()

    def cells_in(self, rect: QRectF) -> list[tuple[tuple[int, int], list[str]]]:
        """The cells of the index of places that meet ``rect``: ((column, row), node ids placed there)."""
        return self.region_items.cells_in(rect)

    def ids_in(self, rect: QRectF) -> list[str]:
        """Placed nodes whose place lies in ``rect`` (scene units), shown at the cursor or not."""
        return self.region_items.ids_in(rect)

    def ids_near(self, rect: QRectF) -> set[str]:
        """:meth:`ids_in` as a set (kept for the next asker of the same; not to be changed)."""
        return self.region_items.ids_near(rect)

    def set_region(self, rect: QRectF | None) -> None:
        """The view shows ``rect`` (scene units): a big drawing makes items there (None: everywhere)."""
        self.region_items.set_region(rect)

    def item_for(self, node_id: str) -> NodeItem | None:
        """The item of a node, made now if the view has not made it (a search hit, a finding)."""
        return self.region_items.item_for(node_id)

    # ------------------------------------------------------------------ at the cursor (at_cursor)
    def set_cursor(self, index: int) -> None:
        """Show the state after event ``index``."""
        self.at_cursor.set_cursor(index)

    def shown_at_cursor(self, node_id: str) -> bool:
        """Whether a node exists at the cursor, drawn or inside a shut module box."""
        return node_id in self.at_cursor.visible

    def shown_anything(self) -> bool:
        """Whether any node is shown at the cursor (as an item, in the sketch, or in a shut box)."""
        return self.at_cursor.shown_anything()

    def graph_gone_at(self) -> int | None:
        """When autograd destroyed the last graph, if none is alive at the cursor; else None."""
        return self.at_cursor.graph_gone_at()

    def shown_rect(self) -> QRectF:
        """What is shown at the cursor, nodes and shut boxes, in scene units (null: nothing)."""
        return self.at_cursor.shown_rect()

    def drawn_rect(self) -> QRectF:
        """What is painted at the cursor, badges as they are (a fit frames it), in scene units."""
        return self.at_cursor.drawn_rect()

    def newest_shown(self) -> str | None:
        """The node shown at the cursor that was born last (where a run is)."""
        return self.at_cursor.newest_shown()

    def place_at_event(self, index: int) -> QRectF | None:
        """Where the shown node event ``index`` is about is drawn, without making an item."""
        return self.at_cursor.place_at_event(index)

    def places_at_event(self, index: int, most: int) -> list[QRectF]:
        """Where the shown nodes event ``index`` is about are drawn, the likeliest first, at most ``most``."""
        return self.at_cursor.places_at_event(index, most)

    def item_at_event(self, index: int) -> QGraphicsItem | None:
        """The shown node (or the shut box holding it) event ``index`` is about."""
        return self.at_cursor.item_at_event(index)

    # ------------------------------------------------------------------ edges (edge_routes)
    def route_edge(self, edge: EdgeItem, hidden_by: dict, moving: bool = False) -> None:
        """Route an edge between its nodes, or to the edge of the shut box that hides one."""
        self.edge_routes.route(edge, hidden_by, moving)

    def edges_into(self, node_id: str) -> list[EdgeItem]:
        return self.edge_routes.into.get(node_id, [])

    def pulse(self, node_id: str, grads: list, duration_ms: int) -> None:
        """Animate the gradients a node sends backwards along its incoming edges."""
        self.edge_routes.pulse(node_id, grads, duration_ms)

    # ------------------------------------------------------------------ module boxes and selection
    def module_of(self, item: NodeItem) -> str | None:
        return item.node.module

    def reveal(self, node_ids) -> bool:
        """Open the shut module boxes hiding any of ``node_ids``; True when any opened."""
        return self.boxes.reveal(node_ids)

    def set_collapsed(self, key: str, collapsed: bool, animate: bool = True) -> None:
        """Shut or open the module box ``key`` (its path, ``path#2`` for a second call)."""
        self.boxes.set_collapsed(key, collapsed, animate)

    def select_node(self, node_id: str) -> None:
        self.selection.select_node(node_id)

    def _on_selection(self) -> None:
        self.selection.on_selection()
