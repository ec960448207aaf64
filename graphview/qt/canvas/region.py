"""The node items of a scene, made where a view looks: the item pool and the visible region.

A big drawing is virtual: the scene knows every node's place, but makes a ``NodeItem`` only for
the nodes in the region the view shows and around it (:meth:`ItemRegion.set_region`), and takes
it away once the view has moved on, back into an :class:`~graphview.qt.canvas.pool.ItemPool` to
be used again; a selected node keeps its item. An index of places (a grid of
:data:`GRID`-sized cells) finds the nodes of a region without looking at all of them.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QGraphicsScene

from graphview.core.drawing import LAYER_HEIGHT, SLOT_WIDTH
from graphview.qt.canvas.nodes import NodeItem
from graphview.qt.canvas.pool import ItemPool

#: drawings with more placed nodes than this make items only near the view
VIRTUAL_ABOVE = 3000
#: side of a cell of the index of node places, in scene units
GRID = 800.0


class ItemRegion:
    """Which nodes of a :class:`~graphview.qt.canvas.scene.GraphScene` have an item, and where
    the view asks for them."""

    def __init__(self, scene: QGraphicsScene) -> None:
        self.scene = scene
        self.node_items: dict[str, NodeItem] = {}  # the nodes that have an item now
        self.pool = ItemPool()  # items taken away near a view that moved on, to be used again
        self.region: QRectF | None = None  # where items are made (None: everywhere)
        self.bounds: tuple[float, float, float, float] | None = None  # the region's left, top, right, bottom
        self.grid: dict[tuple[int, int], list[str]] | None = None  # cell -> node ids placed there
        self._near: tuple[object, tuple, set[str]] | None = None  # ids_near's last: (grid, cells and count, ids)

    def reset(self) -> None:
        """A new run: no items (the scene deleted them), no index of places; the region stays."""
        self.node_items.clear()
        self.grid = None
        self._near = None

    @property
    def virtual(self) -> bool:
        """Whether items are made only near the view (a big drawing shown in a view)."""
        return self.region is not None and len(self.scene._placed) > VIRTUAL_ABOVE

    def make_item(self, node_id: str, visible: bool, update: bool = False) -> NodeItem:
        scene = self.scene
        node = scene.drawing.nodes[node_id]
        item = self.pool.node_item(node)
        where = self.place_of(node_id)
        if where is not None:
            item.setPos(*where)
        scene._show(item, visible)
        self.node_items[node_id] = item
        scene.at_cursor.fresh.add(node_id)
        if update and scene.cursor >= 0:  # made for the view after the cursor moved: its look there
            scene.at_cursor.update_item(item, scene.cursor)
        scene.edge_routes.make_edges_of(node_id)
        return item

    def drop_item(self, node_id: str) -> None:
        """Take a node's item (and its edges' items) away: the view has moved on."""
        item = self.node_items.pop(node_id, None)
        if item is None:
            return
        self.scene.edge_routes.drop_edges_of(node_id)
        if item.scene() is not None:
            self.scene.removeItem(item)
        self.pool.give_back(item)

    def item_for(self, node_id: str) -> NodeItem | None:
        """The item of a node, made now if the view has not made it (a search hit, a finding)."""
        item = self.node_items.get(node_id)
        scene = self.scene
        if item is None and node_id in scene._taken:
            at_cursor = scene.at_cursor
            item = self.make_item(node_id, node_id in at_cursor.visible)
            at_cursor.update_item(item, scene.cursor)
            hidden_by = scene.boxes.update(at_cursor.visible, scene.cursor)
            scene.edge_routes.update_edges_of(node_id, scene.cursor, hidden_by)
        return item

    # ------------------------------------------------------------------ places
    def place_of(self, node_id: str) -> tuple[float, float] | None:
        """Where a node is drawn now: its cell in the layout (a node inside a shut box: that box's),
        or the drawing's own place."""
        layout = self.scene.boxes.layout
        if layout is not None:
            return layout.position(layout.hidden_by.get(node_id, node_id))
        node = self.scene.drawing.nodes[node_id]
        return node.x, node.y

    def index(self, node_id: str) -> None:
        if self.scene.boxes.layout is None:  # (the common case, inline: a big graph indexes every node)
            node = self.scene.drawing.nodes[node_id]
            key = (int(node.slot * SLOT_WIDTH // GRID), int(node.layer * LAYER_HEIGHT // GRID))
            cell = self.grid.get(key)
            if cell is None:
                self.grid[key] = [node_id]
            else:
                cell.append(node_id)
            return
        where = self.place_of(node_id)
        if where is not None:
            self.grid.setdefault((int(where[0] // GRID), int(where[1] // GRID)), []).append(node_id)

    def in_region(self, node_id: str) -> bool:
        bounds = self.bounds
        if bounds is None:
            return self.region is None
        if self.scene.boxes.layout is None:  # at its drawing place (inline: called for every node a big graph takes in)
            node = self.scene.drawing.nodes[node_id]
            x, y = node.slot * SLOT_WIDTH, node.layer * LAYER_HEIGHT
            return bounds[0] <= x <= bounds[2] and bounds[1] <= y <= bounds[3]
        where = self.place_of(node_id)
        # plain comparisons: a call into Qt per node would hand the interpreter lock to a thread
        # reading a trace and wait to get it back, thousands of times a slice
        return where is not None and bounds[0] <= where[0] <= bounds[2] and bounds[1] <= where[1] <= bounds[3]

    def cells_in(self, rect: QRectF) -> list[tuple[tuple[int, int], list[str]]]:
        """The cells of the index of places that meet ``rect``: ((column, row), node ids placed there)."""
        grid = self.built_grid()
        x0, x1 = int(rect.left() // GRID), int(rect.right() // GRID)
        y0, y1 = int(rect.top() // GRID), int(rect.bottom() // GRID)
        if (x1 - x0 + 1) * (y1 - y0 + 1) > len(grid):
            return [(cell, ids) for cell, ids in grid.items() if x0 <= cell[0] <= x1 and y0 <= cell[1] <= y1]
        return [((gx, gy), grid[(gx, gy)]) for gx in range(x0, x1 + 1) for gy in range(y0, y1 + 1) if (gx, gy) in grid]

    def built_grid(self) -> dict[tuple[int, int], list[str]]:
        if self.grid is None:
            scene = self.scene
            layout = scene.boxes.layout
            if layout is not None:  # (worked out ahead, on the thread that made the layout, if it was)
                self.grid = layout.by_square(scene._placed, GRID)
            elif len(scene._placed) > VIRTUAL_ABOVE:
                self.grid = scene._lifetimes.cells(GRID)  # at once, from the arrays of places
            else:
                self.grid = {}
                for node_id in scene._placed:
                    self.index(node_id)
        return self.grid

    def ids_in(self, rect: QRectF) -> list[str]:
        """Placed nodes whose place lies in ``rect`` (scene units), shown at the cursor or not."""
        self.built_grid()
        found = []
        for gx in range(int(rect.left() // GRID), int(rect.right() // GRID) + 1):
            for gy in range(int(rect.top() // GRID), int(rect.bottom() // GRID) + 1):
                found.extend(self.grid.get((gx, gy), ()))
        return found

    def ids_near(self, rect: QRectF) -> set[str]:
        """:meth:`ids_in` as a set, kept while the index of places, the cells ``rect`` meets and the
        nodes taken in stay the same: the region and the cursor ask for it in a row, and boxes
        shut to fit the screen put all of a big drawing's nodes there (a set of 181,000 took 15 ms)."""
        grid = self.built_grid()
        cells = (int(rect.left() // GRID), int(rect.right() // GRID), int(rect.top() // GRID),
                 int(rect.bottom() // GRID), len(self.scene._placed))
        known = self._near
        if known is None or known[0] is not grid or known[1] != cells:
            known = self._near = (grid, cells, set(self.ids_in(rect)))
        return known[2]

    # ------------------------------------------------------------------ the region
    def layout_changed(self) -> None:
        """Nodes moved (a box opened or shut): the index of places is made again when next needed."""
        self.grid = None
        if self.virtual:
            self.sync_region()

    def set_region(self, rect: QRectF | None) -> None:
        """The view shows ``rect`` (scene units) and may soon show what is around it: a big
        drawing makes items there and takes away the items of what is far from it (None: items
        everywhere, as an export needs)."""
        self.region = QRectF(rect) if rect is not None else None
        region = self.region
        self.bounds = None if region is None or region.isEmpty() else \
            (region.left(), region.top(), region.right(), region.bottom())
        if self.region is None or not self.virtual:
            scene = self.scene
            missing = [n for n in scene._placed if n not in self.node_items]
            for node_id in missing:
                self.make_item(node_id, False)
            if missing and scene.cursor >= 0:
                scene.at_cursor.complete = False
                scene.set_cursor(scene.cursor)
            return
        self.sync_region()

    def sync_region(self) -> None:
        scene, region = self.scene, self.region
        near = self.ids_near(region) if not region.isEmpty() else set()
        selected = {i.node.id for i in scene.selectedItems() if isinstance(i, NodeItem)}
        for node_id in [n for n in self.node_items if n not in near and n not in selected]:
            self.drop_item(node_id)
        visible = scene.at_cursor.visible
        # (those shown at the cursor among those near, in C: boxes shut to fit the screen put every
        # node of a big drawing near, few of them shown)
        made = [n for n in visible & near if n not in self.node_items and self.in_region(n)]
        for node_id in made:
            self.make_item(node_id, True, update=True)
        if scene.cursor >= 0:  # the boxes near the view now, and the edges of the new items
            hidden_by = scene.boxes.update(visible, scene.cursor)
            for node_id in made:
                scene.edge_routes.update_edges_of(node_id, scene.cursor, hidden_by)
