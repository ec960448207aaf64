"""The edge items of a scene: taken in once both ends are, shown at the cursor, and routed.

An edge is routed straight between its nodes when the drawing's cells between them are clear,
else down a lane between columns (:class:`~graphview.qt.canvas.edges.EdgeItem` draws either), or
to the edge of the shut module box that hides one of its ends.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QGraphicsScene

from graphview.qt.canvas.edges import EdgeItem
from graphview.qt.canvas.pulse import PulseItem
from graphview.qt.canvas.style import NODE_H, NODE_W


class EdgeRouting:
    """The edges of a :class:`~graphview.qt.canvas.scene.GraphScene`: which have an item, which
    wait for a node, and where each runs."""

    def __init__(self, scene: QGraphicsScene) -> None:
        self.scene = scene
        self.reset()

    def reset(self) -> None:
        """A new run: no edges taken in yet."""
        self.item_of: dict[int, EdgeItem] = {}  # index in drawing.edges -> its item
        self.done = 0  # drawing edges taken in so far
        self.ids_of: dict[str, list[int]] = {}  # node id -> indexes of its drawing edges
        self.blocked: dict[str, list[int]] = {}  # node id not taken in yet -> edges waiting for it
        self.into: dict[str, list[EdgeItem]] = {}  # node id -> the items of the edges into it
        self.out_of: dict[str, list[EdgeItem]] = {}  # node id -> the items of the edges from it
        self._clear_of: tuple = (None, {})  # a layout, and which straight ways between its units are clear

    @property
    def items(self) -> list[EdgeItem]:
        """The edges that have an item now."""
        return list(self.item_of.values())

    def take_new(self) -> None:
        """Take in the edges the drawing gained since the last call."""
        edges = self.scene.drawing.edges
        self._take_each(enumerate(edges[self.done:], start=self.done))
        self.done = len(edges)

    def take(self, number: int, edge=None) -> None:
        """Take in drawing edge ``number`` (``edge``, when the caller has it) once both its nodes
        are taken in (until then it waits for the missing one, without holding up the edges after it)."""
        if edge is None:
            edge = self.scene.drawing.edges[number]
        self._take_each(((number, edge),))

    def _take_each(self, numbered) -> None:
        """:meth:`take` of each ``(number, edge)`` in ``numbered``, in order (a big run's 10^5 edges
        in one loop, without a call each)."""
        scene = self.scene
        taken, ids_of, blocked = scene._taken, self.ids_of, self.blocked
        items = scene.region_items.node_items
        for number, edge in numbered:
            source, target = edge.source, edge.target
            waits_for = source if source not in taken else (target if target not in taken else None)
            if waits_for is not None:
                blocked.setdefault(waits_for, []).append(number)
                continue
            numbers = ids_of.get(source)  # (no loop over the two ends)
            if numbers is None:
                ids_of[source] = [number]
            else:
                numbers.append(number)
            numbers = ids_of.get(target)
            if numbers is None:
                ids_of[target] = [number]
            else:
                numbers.append(number)
            if source in items and target in items:  # (a big scene: most nodes have no item)
                self.make(number, initial=True)

    def make(self, number: int, initial: bool = False) -> None:
        scene = self.scene
        edge = scene.drawing.edges[number]
        source, target = scene.node_items.get(edge.source), scene.node_items.get(edge.target)
        if source is None or target is None:
            return
        layout = scene.boxes.layout
        half = NODE_W / 2 + 12
        clear = (layout.path_clear(edge.source, edge.target, half) if layout is not None
                 else scene.drawing.path_clear(source.node, target.node, half))
        item = scene.region_items.pool.edge_item(edge, source, target, clear)
        self.item_of[number] = item
        self.into.setdefault(edge.target, []).append(item)
        self.out_of.setdefault(edge.source, []).append(item)
        if initial or not scene.at_cursor.complete:
            scene._show(item, edge.born <= scene.cursor and source.isVisible() and target.isVisible())
        else:
            self.update(item, scene.cursor, scene.boxes._hidden_by)

    def make_edges_of(self, node_id: str) -> None:
        """The items of a node's edges taken in, now that the node has an item."""
        for number in self.ids_of.get(node_id, ()):
            if number not in self.item_of:
                self.make(number)

    def drop_edges_of(self, node_id: str) -> None:
        """Take the items of a node's edges away, back into the pool: its item is going."""
        scene = self.scene
        for number in self.ids_of.get(node_id, ()):
            edge_item = self.item_of.pop(number, None)
            if edge_item is None:
                continue
            for table, key in ((self.into, edge_item.edge.target), (self.out_of, edge_item.edge.source)):
                items = table.get(key)
                if items is not None and edge_item in items:
                    items.remove(edge_item)
            if edge_item.scene() is not None:
                scene.removeItem(edge_item)
            scene.region_items.pool.give_back(edge_item)

    def of_node(self, node_id: str) -> list[EdgeItem]:
        """The items of the edges into a node, then of those from it."""
        return self.into.get(node_id, []) + self.out_of.get(node_id, [])

    def update_edges_of(self, node_id: str, index: int, hidden_by: dict) -> None:
        for edge in self.of_node(node_id):
            self.update(edge, index, hidden_by)

    # ------------------------------------------------------------------ at the cursor
    def update(self, edge: EdgeItem, index: int, hidden_by: dict) -> None:
        source_group = hidden_by.get(edge.source.node.id)
        target_group = hidden_by.get(edge.target.node.id)
        visible = (edge.edge.born <= index
                   and (edge.source.isVisible() or (source_group is not None and source_group.isVisible()))
                   and (edge.target.isVisible() or (target_group is not None and target_group.isVisible()))
                   and not (source_group is not None and source_group is target_group))
        self.scene._show(edge, visible)
        if not visible:
            return
        self.route(edge, hidden_by)
        edge.set_freed(not {"freed", "unreachable"}.isdisjoint((edge.target.state, edge.source.state)))

    def route(self, edge: EdgeItem, hidden_by: dict, moving: bool = False) -> None:
        """Route an edge between its nodes, or to the edge of the shut box that hides one
        (``moving``: its nodes are gliding, route it again from where they are now)."""
        source_group = hidden_by.get(edge.source.node.id)
        target_group = hidden_by.get(edge.target.node.id)
        if source_group is not None or target_group is not None:
            start = source_group.anchor_out() if source_group else edge.source.pos() + QPointF(0, NODE_H / 2)
            end = target_group.anchor_in() if target_group else edge.target.pos() - QPointF(0, NODE_H / 2 + 2)
            edge.route_down(start, end, self._clear(source_group.key if source_group else edge.edge.source,
                                                    target_group.key if target_group else edge.edge.target))
            edge.rerouted = True
        elif moving:
            edge.rerouted = False
            edge.route_between_nodes()
        else:
            edge.default_route()

    def _clear(self, source: str, target: str) -> bool:
        """Whether the straight way between two units of the layout (a node, a shut box) passes
        no other: an edge from a shut box runs down a lane between columns where it would not (the
        weights a generation loop's first call holds, read by the calls below it)."""
        layout = self.scene.boxes.layout
        if layout is None:
            return False
        if self._clear_of[0] is not layout:
            self._clear_of = (layout, {})
        known = self._clear_of[1]
        clear = known.get((source, target))
        if clear is None:
            clear = known[(source, target)] = layout.path_clear(source, target, NODE_W / 2 + 12)
        return clear

    def pulse(self, node_id: str, grads: list, duration_ms: int) -> None:
        """Animate the gradients a node sends backwards along its incoming edges."""
        for edge in self.into.get(node_id, []):
            if edge.isVisible() and edge.edge.kind in ("flow", "accumulate"):
                text = ""
                if grads:
                    text = grads[0] if isinstance(grads[0], str) else ""
                self.scene.addItem(PulseItem(edge, text, duration_ms))
