"""Fit means readable, and the view follows the action: F and opening a level never show text
under 9 px on screen; stepping keeps the cursor's node in view at a readable zoom (unless View >
Follow the current node is off); zoomed out beyond reading, a halo of fixed screen size marks it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor

from graphview.core import timeline
from graphview.core.hierarchy import collapsed_at_level
from graphview.core.drawing import LAYER_HEIGHT
from graphview.core.options import RunOptions
from graphview.qt.canvas.halo import HALO_RADIUS
from graphview.qt.canvas.readability import smallest_label, width_share
from graphview.qt.canvas.style import colors
from graphview.qt.canvas.view_fit import solid_rects
from tests.conftest import model


@pytest.fixture
def transformer(window, record):
    """The window at 1366x768 showing the bundled transformer block (one step), the cursor at
    its backward's start (the whole graph built)."""
    window.resize(1366, 768)
    run = record(model("transformer_block"), steps=1)
    window.begin_run(run.start["script"], RunOptions(steps=1), run)
    window.move(timeline.next_backward)
    return window


def _in_viewport(view, rect: QRectF) -> bool:
    return QRectF(view.viewport().rect()).contains(QRectF(view.mapFromScene(rect).boundingRect()))


def test_fit_with_one_level_open_keeps_every_text_at_9_px_and_the_running_node_in_the_middle(transformer):
    window = transformer
    view, scene = window.view, window.scene
    scene.boxes.set_all(collapsed_at_level(scene.boxes.boxes, 1))  # one level open: "]" from the top
    for _ in range(12):  # backward well under way: the running node is deep in the graph
        window.move(timeline.next_backward_node)
    view.resetTransform()
    view.scale(0.1, 0.1)
    window.actions["fit"].trigger()
    smallest = smallest_label(view)
    assert smallest is not None and smallest >= 9.0
    shown = view.mapFromScene(scene.drawn_rect()).boundingRect()  # (what the fit frames)
    assert shown.height() > view.viewport().height()  # the whole would not read: this is not it
    # its width is in view, centred (the graph is narrower than the canvas)
    assert shown.left() >= 0 and shown.right() <= view.viewport().width()
    assert abs(shown.center().x() - view.viewport().rect().center().x()) <= 12
    assert 0 < width_share(view) < 1
    # centred on the running node, down the graph, give or take the half row that leaves no node
    # cut at the top or bottom edge
    running = scene.place_at_event(window.cursor)
    assert running is not None and _in_viewport(view, running)
    on_screen = view.mapFromScene(running.center())
    assert abs(on_screen.y() - view.viewport().height() / 2) <= LAYER_HEIGHT / 2 * view.transform().m11() + 3
    port = QRectF(view.viewport().rect())
    for rect in solid_rects(scene):
        where = QRectF(view.mapFromScene(rect).boundingRect())
        assert port.contains(where) or not port.intersects(where)
    assert view.overview.isVisible()  # the rest of the graph: in the corner


def test_opening_every_level_keeps_the_text_readable(transformer):
    window = transformer
    view, scene = window.view, window.scene
    scene.boxes.set_all(collapsed_at_level(scene.boxes.boxes, 0))
    view.fit()
    while True:
        level = scene.boxes.level()
        window.actions["open_level"].trigger()  # "]": opens a level and fits
        if scene.boxes.level() == level:
            break
        smallest = smallest_label(view)
        assert smallest is not None and smallest >= 9.0, scene.boxes.level()


def test_stepping_backward_keeps_the_running_node_in_view_at_a_readable_zoom(transformer):
    window = transformer
    view, scene = window.view, window.scene
    window.actions["open_all"].trigger()
    view.resetTransform()
    view.scale(0.12, 0.12)  # zoomed out beyond reading: stepping zooms in where the node is
    call = next(iter(window.run.backwards.values()))
    steps = 0
    while window.cursor < call.end and steps < 40:
        before = window.cursor
        window.move(timeline.next_backward_node)
        if window.cursor == before:
            break
        steps += 1
        item = scene.item_at_event(window.cursor)
        if item is None:
            continue
        assert view.transform().m11() >= view.readable_scale()
        assert _in_viewport(view, item.sceneBoundingRect()), (steps, item)
    assert steps >= 10


def test_with_follow_off_stepping_leaves_the_view_still_and_the_setting_is_remembered(transformer):
    from graphview.qt.main_window import MainWindow

    window = transformer
    view = window.view
    window.actions["open_all"].trigger()
    window.actions["follow"].setChecked(False)
    view.resetTransform()
    view.scale(0.5, 0.5)
    view.centerOn(QPointF(0, 0))
    where = (view.transform(), view.horizontalScrollBar().value(), view.verticalScrollBar().value())
    for _ in range(10):
        window.move(timeline.next_backward_node)
    assert (view.transform(), view.horizontalScrollBar().value(), view.verticalScrollBar().value()) == where
    later = MainWindow(samples=[])  # the next start
    try:
        assert not later.actions["follow"].isChecked() and not later.view.follows_cursor
    finally:
        later.close()
        later.deleteLater()
    window.actions["follow"].setChecked(True)
    window.move(timeline.next_backward_node)
    assert view.transform().m11() >= view.readable_scale()  # following again: zoomed to read


def _near(color: QColor, expected: QColor) -> bool:
    return all(abs(a - b) <= 40 for a, b in zip(color.getRgb()[:3], expected.getRgb()[:3]))


def test_a_halo_of_fixed_size_marks_the_running_node_at_a_tiny_zoom(transformer, qtbot):
    window = transformer
    view, scene = window.view, window.scene
    window.actions["follow"].setChecked(False)  # the zoom stays as the user left it
    window.actions["open_all"].trigger()
    for _ in range(5):
        window.move(timeline.next_backward_node)
    assert window.run.events[window.cursor]["ev"].startswith("bw_")
    sizes = []
    for zoom in (0.03, 0.2):
        view.resetTransform()
        view.scale(zoom, zoom)
        view.centerOn(scene.place_at_event(window.cursor).center())
        halo = view.halo_rect()
        assert halo is not None
        sizes.append((round(halo.width()), round(halo.height())))
        centre = view.mapFromScene(scene.place_at_event(window.cursor).center())
        assert (QPointF(centre) - halo.center()).manhattanLength() <= 2
        image = view.viewport().grab().toImage()
        ring = image.pixelColor(int(halo.center().x() + HALO_RADIUS), int(halo.center().y()))
        assert _near(ring, colors().q("running_border")), ring.name()
    assert sizes[0] == sizes[1]  # the same size on screen whatever the zoom
    view.resetTransform()
    view.scale(view.readable_scale(), view.readable_scale())
    assert view.halo_rect() is None  # readable: the node's own glow marks it


def _straddles(view, rect: QRectF) -> bool:
    """Whether ``rect`` (scene units) is cut by the view's top or bottom edge."""
    where = QRectF(view.mapFromScene(rect).boundingRect())
    height = view.viewport().height()
    return any(where.top() < edge < where.bottom() for edge in (0, height))


def test_a_view_moved_clear_of_the_nodes_cuts_no_saved_badge_at_its_edges(transformer):
    """A node's saved badge stands 9 units above its box: an edge that fell in those units cut the
    badge in half (T5 six nodes into its first backward at 1366x768: 'saved 8 B' halved at the
    bottom edge, its node out of view below)."""
    window = transformer
    view, scene = window.view, window.scene
    scene.boxes.set_all(collapsed_at_level(scene.boxes.boxes, 1))  # one level open: taller than the canvas
    window.actions["fit"].trigger()
    bar, scale = view.verticalScrollBar(), view.transform().m11()
    badged = [item for item in scene.node_items.values() if item.isVisible() and item.saved > 0]
    cut = 0
    for item in badged:
        badge = item.mapRectToScene(item.saved_badge()[1])
        shown = view.mapToScene(view.viewport().rect()).boundingRect()
        bar.setValue(bar.value() + round((badge.center().y() - shown.bottom()) * scale))  # the bottom edge on it
        if not _straddles(view, badge):
            continue  # (the scroll bar's end)
        cut += 1
        view.fitting.clear_edges(None)
        assert not [other.node.title for other in badged
                    if _straddles(view, other.mapRectToScene(other.saved_badge()[1]))], item.node.title
    assert cut >= 3
