"""The halo: at a zoom too small to read, a ring of one size on screen around the cursor's node,
orange in backward (as a running node) and blue at a forward op (as the selection)."""

from __future__ import annotations

from PySide6.QtCore import QPointF

from graphview.core import timeline
from graphview.qt.canvas.halo import HALO_RADIUS
from graphview.qt.canvas.style import colors
from tests.conftest import model
from tests.qt.canvas.conftest import show_at


def test_the_halo_rings_the_cursors_node_at_one_size_only_while_the_zoom_does_not_read(canvas, record):
    scene, view = canvas
    run = record(model("mlp_optimizer"), steps=1)
    forward_op = next(i for i, ev in enumerate(run.events) if ev["ev"] == "op" and ev.get("grad_fn") is not None)
    show_at(canvas, run, forward_op)
    sizes = set()
    for zoom in (0.03, 0.2):
        view.resetTransform()
        view.scale(zoom, zoom)
        where = scene.place_at_event(forward_op)
        view.centerOn(where.center())
        halo = view.halo.rect()
        assert halo is not None
        assert (QPointF(view.mapFromScene(where.center())) - halo.center()).manhattanLength() <= 2
        sizes.add((round(halo.width()), round(halo.height())))
    assert sizes == {(2 * (HALO_RADIUS + 3),) * 2}  # the ring and its pen, whatever the zoom
    assert view.halo.color() == colors().q("selection")
    backward_node = timeline.next_backward_node(run, forward_op)
    assert run.events[backward_node]["ev"] == "bw_node"
    view.set_cursor(backward_node)
    assert view.halo.color() == colors().q("running_border")
    view.resetTransform()
    view.scale(view.readable_scale(), view.readable_scale())
    assert view.halo.rect() is None  # readable: the node's own look marks it
