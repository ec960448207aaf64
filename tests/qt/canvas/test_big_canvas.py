"""A big graph: items only near the view, the sketch for the rest, search and panning still work."""

from __future__ import annotations

import functools

import pytest
from PySide6.QtCore import QPointF, QRectF

from graphview.core.options import RunOptions
from graphview.qt.canvas.scene import VIRTUAL_ABOVE
from graphview.qt.canvas.style import NODE_H

DEEP_MLP = """
import torch
torch.manual_seed(0)
layers = [torch.nn.Linear(4, 4) for _ in range(450)]
h = torch.randn(2, 4)
for layer in layers:
    h = torch.tanh(layer(h))
loss = h.sum()
loss.backward()
"""


@functools.cache
def deep_events(tmp: str) -> list[dict]:
    from graphview.capture.script import run_script

    path = f"{tmp}/deep.py"
    with open(path, "w") as f:
        f.write(DEEP_MLP)
    events: list[dict] = []
    run_script(path, events.append)
    return events


@pytest.fixture
def big(window, tmp_path_factory, qtbot):
    from graphview.core.run import Run

    run = Run(deep_events(str(tmp_path_factory.getbasetemp())))
    window.begin_run(None, RunOptions(), run)
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    window.set_cursor(window.overview_index())  # the whole graph, before backward frees it
    return window


def shown_at(scene, index):
    drawing = scene.drawing
    return {n for n in scene.placed_ids() if drawing.visible(drawing.nodes[n], index)}


def test_a_big_graph_has_items_only_near_the_view(big):
    scene, view = big.scene, big.view
    placed = scene.placed_ids()
    assert len(placed) > VIRTUAL_ABOVE and scene.virtual
    assert 0 < len(scene.node_items) < len(placed) / 4
    for node_id, item in scene.node_items.items():
        assert scene.region.contains(item.pos()) or item.isSelected()
    assert scene.at_cursor.visible == shown_at(scene, big.cursor)  # every node's state is known, item or not
    # pan to the bottom of the graph: items come there, the ones at the top go
    top = set(scene.node_items)
    bottom = scene.sceneRect().bottom() - 300
    view.centerOn(QPointF(scene.sceneRect().center().x(), bottom))
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    hidden = scene.boxes._hidden_by  # inside a shut module box: the box is drawn, not the node
    here = [n for n in scene.ids_in(seen) if n in scene.at_cursor.visible and n not in hidden
            and seen.contains(QPointF(*scene.place_of(n)))]
    assert here and all(n in scene.node_items and scene.node_items[n].isVisible() for n in here)
    assert not top & set(scene.node_items)
    # the edges between the items there are items too, routed between them
    assert any(e.isVisible() and e.source.node.id in here and e.target.node.id in here for e in scene.edge_items)


def test_zoomed_out_the_sketch_draws_every_shown_node(big):
    scene, view = big.scene, big.view
    view.resetTransform()
    view.scale(0.05, 0.05)
    assert not scene.node_items  # nothing selected: no item at all
    node_id = next(n for n in scene.placed_ids() if n in scene.at_cursor.visible and scene.drawing.nodes[n].kind == "op"
                   and n not in scene.boxes._hidden_by)
    view.centerOn(QPointF(*scene.place_of(node_id)))
    image = view.viewport().grab().toImage()
    at = view.mapFromScene(QPointF(*scene.place_of(node_id)))
    from graphview.qt.canvas.style import colors

    want = colors().fill_of("op")
    got = image.pixelColor(at.x(), at.y())
    assert abs(got.red() - want.red()) + abs(got.green() - want.green()) + abs(got.blue() - want.blue()) < 30
    # zoomed in again, the items come back where the view looks
    view.resetTransform()
    view.scale(0.8, 0.8)
    view.centerOn(QPointF(*scene.place_of(node_id)))
    assert node_id in scene.node_items and scene.node_items[node_id].isVisible()


def test_search_finds_a_node_far_from_the_view_and_shows_it(big):
    scene, view = big.scene, big.view
    view.centerOn(QPointF(scene.sceneRect().center().x(), scene.sceneRect().top()))
    scene.boxes.set_all(set())  # every box open: the nodes themselves are drawn
    last = max((n for n in scene.placed_ids() if n in scene.at_cursor.visible), key=lambda n: scene.drawing.nodes[n].born)
    title = scene.drawing.nodes[last].title
    assert last not in scene.node_items
    big.search.setText(title)
    big.find()
    selected = [i.node.id for i in scene.selectedItems() if hasattr(i, "node")]
    assert last in selected
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    assert seen.contains(QPointF(*scene.place_of(selected[0])))
    # a selected node keeps its item when the view moves away
    view.centerOn(QPointF(scene.sceneRect().center().x(), scene.sceneRect().top()))
    assert all(n in scene.node_items for n in selected)
    assert big.inspector.isEnabled()


def test_long_jumps_show_what_the_drawing_says_is_there(big):
    scene = big.scene
    run = big.run
    for index in (0, run.ops[len(run.ops) // 2][0], big.overview_index(), len(run.events) - 1, 5):
        big.set_cursor(index)
        assert scene.at_cursor.visible == shown_at(scene, index)
        for node_id, item in scene.node_items.items():
            assert item.isVisible() == (node_id in scene.at_cursor.visible and node_id not in scene.boxes._hidden_by)


def test_items_taken_away_are_used_again_for_the_nodes_the_view_comes_to(big, qtbot):
    scene, view = big.scene, big.view
    scene.boxes.set_all(set())  # every box open: the nodes themselves are drawn
    rect = scene.sceneRect()
    view.centerOn(QPointF(rect.center().x(), rect.top()))
    before = {id(item) for item in scene.node_items.values()}
    view.centerOn(QPointF(rect.center().x(), rect.bottom() - 300))
    after = scene.node_items
    assert before & {id(item) for item in after.values()}  # the same objects, given other nodes
    for node_id, item in after.items():
        node = scene.drawing.nodes[node_id]
        assert item.node is node and item.kind in (node.kind, "output")
        assert (item.pos().x(), item.pos().y()) == scene.place_of(node_id)
        assert item.isVisible() == (node_id in scene.at_cursor.visible and node_id not in scene.boxes._hidden_by)
    for edge in scene.edge_items:  # each edge item runs between its own edge's nodes
        assert (edge.source.node.id, edge.target.node.id) == (edge.edge.source, edge.edge.target)
        assert edge.source is after[edge.edge.source] and edge.target is after[edge.edge.target]
        assert edge.path().pointAtPercent(0).y() == edge.source.pos().y() + NODE_H / 2 or edge.rerouted


def test_a_jump_makes_the_items_seen_first_and_the_margin_once_the_view_rests(big, qtbot):
    scene, view = big.scene, big.view
    scene.boxes.set_all(set())
    rect = scene.sceneRect()
    view.centerOn(QPointF(rect.center().x(), rect.top()))
    qtbot.waitUntil(lambda: not view.region_follow.widen.isActive(), timeout=5000)
    view.centerOn(QPointF(rect.center().x(), rect.center().y()))  # far from every item
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    assert scene.region.contains(seen) and scene.region.height() < seen.height() * 2
    qtbot.waitUntil(lambda: scene.region.height() >= seen.height() * 3 - 1, timeout=5000)
    below = seen.translated(0, seen.height())  # a viewport further down has its items before it is seen
    assert any(below.contains(item.pos()) for item in scene.node_items.values())


STEPS = """
import torch
torch.manual_seed(0)
layers = [torch.nn.Linear(4, 4) for _ in range(150)]
for step in range(3):
    h = torch.randn(2, 4)
    for layer in layers:
        h = torch.tanh(layer(h))
    loss = h.sum()
    loss.backward()
    del loss, h
"""


def test_what_is_shown_stays_true_while_a_big_run_grows_in_slices(qtbot, tmp_path):
    """The lifetimes of a growing run are kept up to date in place: after each slice, a long jump
    of the cursor shows exactly the nodes the drawing says exist there (each step's graph is
    destroyed in a later slice than the one that made it)."""
    from graphview.capture.script import run_script
    from graphview.core.run import Run
    from tests.qt.canvas.conftest import shown_canvas

    (tmp_path / "steps.py").write_text(STEPS)
    events: list[dict] = []
    run_script(str(tmp_path / "steps.py"), events.append)
    assert sum(e.get("ev") == "node_dead" for e in events) > 1000
    run = Run([])
    scene, view = shown_canvas(qtbot, 900, 700)
    scene.set_run(run)
    checked = 0
    for start in range(0, len(events), len(events) // 7):
        for event in events[start:start + len(events) // 7]:
            run.add(event)
        scene.grow()
        if not scene.virtual:
            continue
        for index in (len(run.events) - 1, len(run.events) // 3, 0):
            scene.set_cursor(index)
            assert scene.at_cursor.visible == shown_at(scene, index)
            checked += 1
    assert checked >= 6


def test_a_picture_too_small_for_nodes_shows_the_cells_that_hold_shown_nodes(big):
    """The overview of a big graph: nodes under two pixels wide are drawn as the cells of the
    index of places that hold a shown node, in that node's colours; empty cells stay empty."""
    from PySide6.QtCore import QRectF, Qt
    from PySide6.QtGui import QImage, QPainter

    from graphview.qt.canvas.style import colors

    scene = big.scene
    scene.boxes.set_all(set())
    big.set_cursor(big.run.ops[len(big.run.ops) // 2][0])  # the later half of the graph is not made yet
    source = scene.sceneRect()
    scale = 1.0 / 200  # a node 172 units wide: under a pixel
    image = QImage(int(source.width() * scale) + 1, int(source.height() * scale) + 1, QImage.Format_ARGB32)
    image.fill(Qt.transparent)
    painter = QPainter(image)
    scene.render(painter, QRectF(0, 0, source.width() * scale, source.height() * scale), source, Qt.IgnoreAspectRatio)
    painter.end()
    background = colors().q("background")
    shown = [n for n in scene.placed_ids() if n in scene.at_cursor.visible]
    hidden = [n for n in scene.placed_ids() if n not in scene.at_cursor.visible]
    assert shown and hidden
    step = scene.GRID
    for node_id in shown[:: max(1, len(shown) // 40)]:
        x, y = scene.place_of(node_id)
        cx, cy = (x // step + 0.5) * step, (y // step + 0.5) * step  # the middle of its cell
        pixel = image.pixelColor(int((cx - source.left()) * scale), int((cy - source.top()) * scale))
        assert pixel.alpha() > 0 and pixel != background
    cells_with_shown = {(int(scene.place_of(n)[0] // step), int(scene.place_of(n)[1] // step)) for n in shown}
    empty = 0
    for node_id in hidden:  # a cell holding only nodes not shown at the cursor is not drawn
        x, y = scene.place_of(node_id)
        cell = (int(x // step), int(y // step))
        if cell not in cells_with_shown:
            cx, cy = (cell[0] + 0.5) * step, (cell[1] + 0.5) * step
            px, py = int((cx - source.left()) * scale), int((cy - source.top()) * scale)
            if not image.valid(px, py):  # beyond the scene made so far (the loss, below the rest)
                continue
            pixel = image.pixelColor(px, py)
            assert pixel.alpha() == 0 or pixel == background
            empty += 1
    assert empty


def test_a_big_box_is_measured_from_the_arrays_as_from_its_nodes(big, monkeypatch):
    """A big finished run with nothing shut measures its open module boxes (how many nodes are
    shown, where) from the scene's arrays of births, deaths and places: the boxes come out as
    measured from their nodes one by one."""
    from graphview.qt.canvas import box_items

    scene = big.scene
    lifetimes = scene._lifetimes
    for index in (big.cursor, len(scene.run.events) - 1, 5):
        expected = shown_at(scene, index)
        for box in scene.boxes.boxes:
            shown = [n for n in box.members if n in expected]
            count, extent = lifetimes.shown_extent(lifetimes.rows_of(box.members), index)
            assert count == len(shown)
            if shown:
                xs = [scene.drawing.nodes[n].x for n in shown]
                ys = [scene.drawing.nodes[n].y for n in shown]
                assert extent == (min(xs), min(ys), max(xs), max(ys))
        newest = lifetimes.newest_at(index)
        if expected:
            assert newest in expected
            assert scene.drawing.nodes[newest].born == max(scene.drawing.nodes[n].born for n in expected)
        else:
            assert newest is None

    def boxes_drawn():
        scene.set_cursor(big.cursor)
        return {key: (QRectF(group.rect), group.members) for key, group in scene.groups.items() if group.isVisible()}

    one_by_one = boxes_drawn()  # boxes of 7 nodes: measured node by node
    monkeypatch.setattr(box_items, "MEASURED_IN_ARRAYS_ABOVE", 0)
    scene.boxes.items._rows_of.clear()
    assert one_by_one and boxes_drawn() == one_by_one


def test_a_fit_makes_the_items_near_the_view_once(big, monkeypatch):
    """A fit zooms and scrolls several times; the items near the view are made for where it ends."""
    scene, view = big.scene, big.view
    syncs = []
    original = scene.region_items.sync_region
    monkeypatch.setattr(scene.region_items, "sync_region", lambda: (syncs.append(1), original())[1])
    view.fit_readable()
    assert len(syncs) <= 1
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    here = [n for n in scene.ids_in(seen) if n in scene.at_cursor.visible and n not in scene.boxes._hidden_by
            and seen.contains(QPointF(*scene.place_of(n)))]
    assert all(n in scene.node_items and scene.node_items[n].isVisible() for n in here)


def test_the_index_of_places_made_at_once_is_the_one_made_node_by_node(big):
    scene = big.scene
    scene.region_items.grid = None
    at_once = scene.region_items.built_grid()
    one_by_one: dict = {}
    scene.region_items.grid = one_by_one
    for node_id in scene.placed_ids():
        scene.region_items.index(node_id)
    assert at_once == one_by_one and len(at_once) > 10
