"""The node the user selected on a scene, kept while it is hidden at the cursor.

A selected node that the cursor hides (not made yet, destroyed, inside a shut module box) is not
unselected: the inspector keeps showing it, and it is selected again where it is shown.
"""

from __future__ import annotations

from PySide6.QtWidgets import QGraphicsScene

from graphview.qt.canvas.nodes import NodeItem


class Selection:
    """The selection of a :class:`~graphview.qt.canvas.scene.GraphScene`; it says what is
    selected through the scene's ``sigNodeSelected``."""

    def __init__(self, scene: QGraphicsScene) -> None:
        self.scene = scene
        self.kept: str | None = None  # the node the user selected, while it is hidden

    def select_node(self, node_id: str) -> None:
        scene = self.scene
        if node_id not in scene._taken:
            return
        scene.reveal([node_id])
        item = scene.item_for(node_id)
        if item is None:
            return
        scene.clearSelection()
        item.setSelected(True)

    def on_selection(self) -> None:
        scene = self.scene
        selected = [i for i in scene.selectedItems() if isinstance(i, NodeItem)]
        if selected:
            self.kept = selected[0].node.id
            scene.sigNodeSelected.emit(self.kept)
            return
        kept = self.kept
        item = scene.node_items.get(kept) if kept else None
        if kept and (item is None or not item.isVisible()):
            # hidden at this cursor (not made yet, destroyed, in a shut box), not unselected: the
            # Inspector keeps it, and it is selected again where it is shown
            return
        self.kept = None
        scene.sigNodeSelected.emit("")  # a click on empty canvas: nothing is selected

    def select_kept_again(self) -> None:
        kept = self.kept
        item = self.scene.node_items.get(kept) if kept else None
        if item is not None and item.isVisible() and not item.isSelected():
            item.setSelected(True)
