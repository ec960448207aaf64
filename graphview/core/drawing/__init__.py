"""What the canvas draws, and where: a layered drawing of a run's autograd graph.

The drawing reads forward, top to bottom: leaf tensors, then the ops that use them, down to
the loss. Arrows follow the forward data flow (the reverse of ``next_functions``), so backward
runs bottom to top along them.

Three parts, one job each:

* :mod:`~graphview.core.drawing.builder`: :class:`Drawing`, a node for each element of the run
  and an edge for each arrow, read as the run grows;
* :mod:`~graphview.core.drawing.placement`: where a node goes, decided once, stable as the graph
  grows (rows, columns, leaves above their first user, module boxes that never overlap), on the
  cells of a :mod:`~graphview.core.drawing.grid`;
* :mod:`~graphview.core.drawing.lifetimes`: what is shown, freed or dead after an event.

Pure Python, no Qt, no torch: the Qt canvas and the headless exporter both draw from this.
"""

from graphview.core.drawing.builder import Drawing
from graphview.core.drawing.nodes import (EDGE_KINDS, LAYER_HEIGHT, NODE_KINDS, SLOT_WIDTH, DrawEdge, DrawNode,
                                          unnamed_title)

__all__ = ["Drawing", "DrawEdge", "DrawNode", "EDGE_KINDS", "LAYER_HEIGHT", "NODE_KINDS", "SLOT_WIDTH", "unnamed_title"]
