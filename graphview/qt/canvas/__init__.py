"""The graph canvas: a QGraphicsScene drawing a :class:`graphview.core.drawing.Drawing`.

Every view shows the state at the timeline's cursor: :meth:`GraphScene.set_cursor` hides what
was not born yet, greys what a backward freed, lights the node the engine is executing, shows
saved-tensor badges with the bytes still held and each leaf's ``.grad``. Pulses travel along
edges while backward is animated.

One mechanism per module: ``style`` (sizes, and colours from the active theme), ``nodes``, ``edges`` (and their routing),
``groups`` (module boxes), ``pulse``, ``scene`` (taking the drawing in) with its parts ``region`` (the items
and where they are made), ``cursor`` (what is shown at the cursor), ``edge_routes`` and ``selection``,
``overview`` (the minimap) and ``view`` with its parts ``view_fit`` (the readable zoom, the fits),
``follow`` (the cursor's node kept in view), ``view_region`` (where a big graph has items), ``halo``,
``canvas_notes`` (what an empty canvas says) and ``node_menu`` (the context menu).
"""

from __future__ import annotations

from graphview.qt.canvas.edges import EdgeItem, LabeledEdgeItem
from graphview.qt.canvas.groups import GroupItem
from graphview.qt.canvas.nodes import NodeItem
from graphview.qt.canvas.overview import Overview
from graphview.qt.canvas.pulse import PulseItem
from graphview.qt.canvas.scene import GraphScene
from graphview.qt.canvas.style import BORDER, FILL, FREED_FILL, FREED_TEXT, NODE_H, NODE_W, RUNNING, TENSOR_KINDS, colors
from graphview.qt.canvas.view import GraphView
from graphview.qt.formatting import human_bytes, short_value

__all__ = ["BORDER", "FILL", "FREED_FILL", "FREED_TEXT", "NODE_H", "NODE_W", "RUNNING", "TENSOR_KINDS", "EdgeItem",
           "GraphScene", "GraphView", "GroupItem", "LabeledEdgeItem", "NodeItem", "Overview", "PulseItem",
           "colors", "human_bytes", "short_value"]
