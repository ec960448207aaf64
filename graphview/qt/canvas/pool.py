"""ItemPool: node and edge items a big scene took away, kept to be used again.

A virtual scene (see :mod:`graphview.qt.canvas.scene`) makes items near the view and takes them
away once the view moves on. Making a QGraphicsItem (flags, cursor, tooltip, pen) costs several
times what giving an existing one another node costs, and a pan to another part of the graph
takes away about as many items as it makes: those taken away wait here for the next ones.
"""

from __future__ import annotations

from graphview.core.drawing import DrawEdge, DrawNode
from graphview.qt.canvas.edges import EdgeItem, LabeledEdgeItem
from graphview.qt.canvas.nodes import NodeItem

#: at most this many items of each class wait (a few views' worth)
POOL_LIMIT = 3000


class ItemPool:
    """Free node and edge items (out of every scene), handed out again before new ones are made."""

    def __init__(self) -> None:
        self._nodes: list[NodeItem] = []
        self._edges: dict[type, list[EdgeItem]] = {EdgeItem: [], LabeledEdgeItem: []}

    def node_item(self, node: DrawNode) -> NodeItem:
        """An item showing ``node``: a free one given that node, else a new one."""
        if self._nodes:
            item = self._nodes.pop()
            item.bind(node)
            return item
        return NodeItem(node)

    def edge_item(self, edge: DrawEdge, source: NodeItem, target: NodeItem, clear: bool) -> EdgeItem:
        """An item drawing ``edge`` between two node items (a labelled one when the edge has a label)."""
        free = self._edges[LabeledEdgeItem if edge.label else EdgeItem]
        if free:
            item = free.pop()
            item.bind(edge, source, target, clear)
            return item
        return (LabeledEdgeItem if edge.label else EdgeItem)(edge, source, target, clear=clear)

    def give_back(self, item) -> None:
        """An item the scene took away (already out of the scene, not selected) waits here."""
        if isinstance(item, NodeItem):
            if len(self._nodes) < POOL_LIMIT:
                self._nodes.append(item)
            return
        free = self._edges.get(type(item))
        if free is not None and len(free) < POOL_LIMIT:
            free.append(item)

    def __len__(self) -> int:
        return len(self._nodes) + sum(len(free) for free in self._edges.values())
