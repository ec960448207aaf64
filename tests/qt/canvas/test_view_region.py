"""The items of a big graph follow the view: none zoomed out beyond reading (the sketch draws it),
those around what is seen otherwise, and a fit's zooms and scrolls make them once, where it ends."""

from __future__ import annotations

import pytest

from graphview.core import timeline
from graphview.core.run import Run
from graphview.qt.canvas.region import VIRTUAL_ABOVE
from graphview.qt.canvas.view_region import SKETCH_BELOW
from tests.qt.canvas.conftest import show_at
from tests.qt.canvas.test_big_canvas import deep_events


@pytest.fixture
def big(canvas, tmp_path_factory):
    """The canvas showing a 450-layer MLP (more nodes than get items) at the first node its backward runs."""
    run = Run(deep_events(str(tmp_path_factory.getbasetemp())))
    show_at(canvas, run, timeline.next_backward_node(run, timeline.next_backward(run, 0)))
    scene, view = canvas
    assert len(scene.placed_ids()) > VIRTUAL_ABOVE
    return scene, view


def test_zoomed_out_beyond_reading_a_big_graph_has_no_items_and_near_the_view_when_it_reads(big):
    scene, view = big
    view.resetTransform()
    view.scale(SKETCH_BELOW / 2, SKETCH_BELOW / 2)
    assert scene.region.isEmpty()
    # no items but the running node's (the sketch draws the rest)
    assert {i for i in scene.node_items.values() if i.isVisible()} <= {scene.item_at_event(view.cursor_index)}
    view.resetTransform()
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    assert scene.region.contains(seen)
    shown = [item for item in scene.node_items.values() if item.isVisible()]
    assert shown and all(scene.region.contains(item.pos()) for item in shown)


def test_a_fit_makes_the_items_near_the_view_once_where_it_ends(big, monkeypatch):
    scene, view = big
    view.scale(SKETCH_BELOW / 3, SKETCH_BELOW / 3)  # zoomed out, at the far end from the cursor's node
    far = scene.sceneRect().bottom() if view.fitting.focus_rect().center().y() < scene.sceneRect().center().y() \
        else scene.sceneRect().top()
    view.centerOn(scene.sceneRect().center().x(), far)
    regions = []
    set_region = scene.set_region
    monkeypatch.setattr(scene, "set_region", lambda rect: (regions.append(rect), set_region(rect)))
    view.fit()  # a reset, a zoom and a scroll (twice, if scroll bars come): one region, where it ends
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    assert len(regions) == 1 and regions[0].contains(seen)
    assert view.fitting.focus_rect().intersects(seen)
