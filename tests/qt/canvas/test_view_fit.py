"""The fits of the canvas's view: the smallest zoom that reads, which layouts read at fit, where a
view too small for the graph is centred, and Fit to window on a recorded run."""

from __future__ import annotations

import math

import pytest
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtWidgets import QApplication

from graphview.core import timeline
from graphview.core.drawing import LAYER_HEIGHT, SLOT_WIDTH
from graphview.qt.canvas.style import NODE_H, NODE_W, SMALLEST_TEXT_PT
from graphview.qt.canvas.view_fit import (FIT_LARGEST, FIT_MARGIN, READABLE_TEXT_PX, layout_fits, readable_centre,
                                          readable_scale)
from tests.conftest import lesson, model
from tests.qt.canvas.conftest import show_at


def test_the_readable_zoom_shows_the_smallest_text_9_px_high():
    for dpi in (72, 96, 144):
        zoom = readable_scale(dpi)
        assert SMALLEST_TEXT_PT * dpi / 72 * zoom == pytest.approx(READABLE_TEXT_PX)
    assert readable_scale(144) == pytest.approx(readable_scale(72) / 2)


def test_a_layout_reads_at_fit_while_its_width_and_height_fit_at_the_readable_zoom():
    width, height, zoom = 1000, 700, 0.5
    fits = layout_fits(width, height, zoom)
    # the widest row that fits: its cells and the margins, at the zoom, no wider than the viewport
    columns = math.floor((width / zoom - NODE_W - 2 * FIT_MARGIN) / SLOT_WIDTH) + 1
    assert fits(1, columns) and not fits(1, columns + 1)
    rows = math.floor((height / zoom - NODE_H - 2 * FIT_MARGIN - 30) / LAYER_HEIGHT) + 1
    assert fits(rows, 1) and not fits(rows + 1, 1)
    assert not fits(rows + 1, columns)


def test_a_view_too_small_for_the_graph_is_centred_on_the_focus_kept_inside_the_graph():
    framed = QRectF(0, 0, 400, 3000)
    # narrower than the view: centred across; down, on the focus
    assert readable_centre(framed, QRectF(10, 1500, 20, 20), 300, 200) == QPointF(200, 1510)
    # a focus near the top: the view's top stays on the graph's
    assert readable_centre(framed, QRectF(10, 50, 20, 20), 300, 200) == QPointF(200, 200)
    # wider than the view: the focus across too, kept inside
    assert readable_centre(framed, QRectF(380, 2990, 20, 20), 100, 200) == QPointF(300, 2800)
    # no focus: the top, where the graph begins
    assert readable_centre(framed, None, 100, 200) == QPointF(200, 200)


def test_fit_shows_every_node_where_that_reads_else_the_width_around_the_cursors_node(canvas, record):
    scene, view = canvas
    run = record(model("mlp_optimizer"), steps=1)
    index = timeline.next_backward_node(run, timeline.next_backward(run, 0))
    show_at(canvas, run, index)
    # the view's focus is the cursor's node: the first node backward runs
    focus = view.fitting.focus_rect()
    assert focus is not None and focus == scene.place_at_event(index)
    view.resize(1000, 1600)  # room for the whole graph at a zoom that reads
    view.scale(0.05, 0.05)
    view.fit()
    assert view.readable_scale() <= view.transform().m11() <= FIT_LARGEST
    assert QRectF(view.viewport().rect()).contains(QRectF(view.mapFromScene(scene.shown_rect()).boundingRect()))
    view.resize(1000, 400)  # too short: the smallest zoom that reads, the graph's width, the focus in the middle
    view.fit()
    assert view.transform().m11() == pytest.approx(view.readable_scale())
    shown = QRectF(view.mapFromScene(scene.shown_rect()).boundingRect())
    port = QRectF(view.viewport().rect())
    assert shown.left() >= port.left() and shown.right() <= port.right() and shown.height() > port.height()
    assert port.contains(QRectF(view.mapFromScene(focus).boundingRect()))


def test_fit_says_in_the_status_bar_when_it_shows_the_width_and_not_the_whole_graph(window, record, write_script):
    """A newcomer pressed F on a graph that does not read whole in the window and saw it cut off
    at the top: the status bar says why, and how to see all of it. A graph that fits says nothing."""
    from graphview.core.options import RunOptions
    from graphview.qt.actions import FIT_NOT_WHOLE, FIT_WHOLE_SMALL

    run = record(model("transformer_block"), steps=1)
    window.resize(1366, 700)  # (at 1366x768 it reads whole, at 87% of the readable zoom)
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(timeline.next_backward(run, 0))
    window.statusBar().clearMessage()
    window.actions["fit"].trigger()
    view = window.view
    assert view.transform().m11() == pytest.approx(view.readable_scale())  # the whole would not read
    assert window.statusBar().message() == FIT_NOT_WHOLE
    # a scroll bar that goes after the fit (a taller viewport, its centre a few pixels off: on
    # GPT-2 it took a third press) is no move of the user's
    window.resizeDocks([window.bottom_dock], [window.bottom_dock.height() - 15], Qt.Vertical)
    QApplication.processEvents()
    # F again, on that view: all of it, small (what the newcomer expected); and again: the width
    window.actions["fit"].trigger()
    port = QRectF(view.viewport().rect())
    assert view.transform().m11() < view.readable_scale()
    assert port.contains(QRectF(view.mapFromScene(view.scene().drawn_rect()).boundingRect()))
    assert window.statusBar().message() == FIT_WHOLE_SMALL
    window.actions["fit"].trigger()
    assert view.transform().m11() == pytest.approx(view.readable_scale())
    assert window.statusBar().message() == FIT_NOT_WHOLE
    # moved since the width was shown (a scroll): F fits as the first time, the width
    bar = view.verticalScrollBar()
    was = bar.value()
    bar.setValue(bar.maximum() if was < (bar.minimum() + bar.maximum()) / 2 else bar.minimum())
    assert abs(bar.value() - was) > 40
    window.actions["fit"].trigger()
    assert view.transform().m11() == pytest.approx(view.readable_scale())
    # the note goes with the view it describes: a step, a zoom (the wheel's too), a level of boxes
    for change in ("step", "zoom_in", "shut_level", "wheel"):
        window.actions["fit"].trigger()
        assert window.statusBar().currentMessage() in (FIT_NOT_WHOLE, FIT_WHOLE_SMALL)
        if change == "wheel":
            view.zoom(1.15)  # (what a turn of the wheel does)
        else:
            window.actions[change].trigger()
        assert window.statusBar().currentMessage() == "", change
    # a graph changed since the width was shown (every box opened): F shows the new graph's width
    window.actions["open_level"].trigger()
    window.actions["fit"].trigger()
    assert window.statusBar().currentMessage() == FIT_NOT_WHOLE
    window.actions["open_all"].trigger()
    window.actions["fit"].trigger()
    assert view.transform().m11() == pytest.approx(view.readable_scale())
    small = record(write_script("import torch\nx = torch.ones(2, requires_grad=True)\n(x * 3).sum().backward()\n"))
    window.begin_run(small.start["script"], RunOptions(), small)
    window.set_cursor(timeline.next_backward(small, 0))
    window.statusBar().clearMessage()
    window.actions["fit"].trigger()
    assert view.transform().m11() > view.readable_scale() and window.statusBar().message() == ""


def painted_in_viewport(view, item) -> QRectF:
    """Where ``item`` paints, on the viewport: what its paint() draws (its box, the glow or ring
    around it, its badges, a shut box's card and label), recorded and measured by Qt."""
    from PySide6.QtGui import QPainter, QPicture
    from PySide6.QtWidgets import QStyleOptionGraphicsItem

    picture = QPicture()
    painter = QPainter(picture)
    item.paint(painter, QStyleOptionGraphicsItem(), None)
    painter.end()
    return QRectF(view.mapFromScene(item.mapRectToScene(QRectF(picture.boundingRect()))).boundingRect())


def drawn_outside(window) -> list[str]:
    """The shown nodes and shut boxes that paint anything outside the canvas's viewport."""
    view, scene = window.view, window.scene
    port = QRectF(view.viewport().rect())
    items = [(item.node.title, item) for item in scene.node_items.values() if item.isVisible()]
    items += [(path, group) for path, group in scene.groups.items() if group.isVisible() and group.collapsed]
    return [name for name, item in items if not port.contains(painted_in_viewport(view, item))]


@pytest.mark.parametrize("script, size", [
    (lesson("accumulate_without_clearing"), (1366, 768)),
    (lesson("accumulate_without_clearing"), (1350, 728)),  # the window on a 1366x768 screen
    (lesson("accumulate_without_clearing"), (1600, 1000)),  # (the docs' pictures)
    (model("transformer_block"), (1366, 768)),
    (model("transformer_block"), (1280, 800)),
])
def test_fit_shows_all_that_each_node_paints_on_a_laptops_screen(window, record, script, size):
    """F on the accumulation lesson (8 rows) and the transformer sample (9 rows, its boxes shut)
    left nodes out of view: the lesson's loss in the window on a 1366x768 screen (it fit whole at
    88% of the readable zoom, with the room its items keep for badges they do not have), the
    transformer's tokens and embed at 1366x768 (a scroll bar the fit brought took 14 px, and it fit
    at 85% of the readable zoom). Each is shown whole: what every node paints inside the viewport,
    at every backward and at the end."""
    from graphview.core.options import RunOptions

    run = record(script, steps=1)
    window.resize(*size)
    window.begin_run(run.start["script"], RunOptions(steps=1), run)
    stops = [i for i, e in enumerate(run.events) if e["ev"] in ("backward_start", "backward_end")]
    for index in stops + [len(run.events) - 1]:
        window.set_cursor(index)
        QApplication.processEvents()  # (the window as the user sees it: its docks arranged for the run)
        window.actions["fit"].trigger()
        QApplication.processEvents()
        assert drawn_outside(window) == [], (index, run.events[index]["ev"])
