"""A tensor's gradient badge under its node: clear of the node's border (it touched it), inside the
item's bounds, and above where the next row's node and its badge begin."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QGraphicsScene

from graphview.core.drawing.nodes import LAYER_HEIGHT
from graphview.qt.canvas import NodeItem
from graphview.qt.canvas.nodes import ITEM_BOUNDS
from graphview.qt.formatting import short_bytes
from graphview.qt.canvas.style import NODE_H
from tests.conftest import model
from tests.qt.canvas.conftest import show_at


def column_below(item: NodeItem, x: float, scale: float) -> list[QColor]:
    """The pixels of a column ``x`` right of the node's centre, from its centre down to the bottom
    of its bounds, as the node alone paints them on a white scene at ``scale``."""
    node = NodeItem(item.node)
    node.set_state(item.state, item.kind, item.saved, item.grad)
    scene = QGraphicsScene()
    scene.addItem(node)
    scene.setBackgroundBrush(Qt.white)
    bounds = node.mapRectToScene(node.boundingRect())
    source = QRectF(node.x() + x, node.y(), 1, bounds.bottom() - node.y())
    image = QImage(1, int(source.height() * scale), QImage.Format_RGB32)
    image.fill(Qt.white)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.Antialiasing)
    scene.render(painter, QRectF(image.rect()), source, Qt.IgnoreAspectRatio)
    painter.end()
    return [QColor(image.pixel(0, y)) for y in range(image.height())]


def test_the_gradient_badge_keeps_clear_of_its_node_and_of_the_next_row(canvas, record):
    run = record(model("mlp_optimizer"))
    show_at(canvas, run, len(run.events) - 1)
    scene, _ = canvas
    bias = next(i for i in scene.node_items.values() if i.node.title == "model.2.bias")
    assert bias.grad and bias.grad.startswith("[")  # its .grad, shown in the badge below it
    for scale in (1.0, 2.0):
        column = column_below(bias, -40, scale)  # left of the arrow that leaves the node's middle
        white = [c.lightness() >= 250 for c in column]
        border = max(y for y in range(int(NODE_H / 2 * scale) + 3) if not white[y])  # the node's border, last row
        badge = next(y for y in range(border + 1, len(column)) if not white[y])  # the badge's top
        assert (badge - border - 1) / scale >= 3.5, scale  # clear rows between them, in scene units
        assert not white[badge + 1] and not all(white[badge:])  # (a badge, not a stray pixel)
        bottom = max(y for y in range(len(column)) if not white[y])
        assert bottom < len(column) - 1  # the badge ends inside the item's bounds
    # a node's bounds end above where the next row's begin (its saved badge reaches above its box)
    assert ITEM_BOUNDS.bottom() < LAYER_HEIGHT + ITEM_BOUNDS.top()


def _painted(scene) -> None:
    """Paint every item of ``scene`` once, as a repaint or an export does (at a zoom that draws badges)."""
    area = scene.itemsBoundingRect()
    image = QImage(int(area.width() / 2) + 1, int(area.height() / 2) + 1, QImage.Format_RGB32)
    painter = QPainter(image)
    scene.render(painter, QRectF(image.rect()), area)
    painter.end()


@pytest.mark.parametrize("name", ["mlp_optimizer", "transformer_block", "weight_sharing", "small_cnn",
                                  "lstm_variable_steps", "teacher_student_detach"])
def test_a_saved_badge_is_drawn_where_no_arrow_into_its_node_runs(canvas, record, name):
    """Arrows end at a node's top centre and its saved badge sat right of it: an arrow coming in
    from the right ran under the badge for its last stretch (the MLP's AddmmBackward0, which the
    weight's TBackward0 reaches from the right; the loss's NllLossBackward0, reached by the
    targets). The badge goes to the side no arrow comes in from; with arrows on both sides (the
    LSTM's gates' MulBackward0, the distillation's MseLossBackward0), past the nearer ones."""
    from PySide6.QtGui import QPainterPathStroker

    from graphview.core import timeline
    from graphview.qt.canvas.nodes import SAVED_BADGE_LEFT

    run = record(model(name), steps=1)
    show_at(canvas, run, timeline.next_backward(run, 0))  # the forward whole, backward about to start
    scene, _ = canvas
    _painted(scene)
    stroker = QPainterPathStroker()
    badges = 0
    for item in scene.node_items.values():
        if not item.isVisible() or item.saved <= 0:
            continue
        strokes = []
        for edge in scene.edges_into(item.node.id):
            if edge.isVisible():
                stroker.setWidth(edge.pen().widthF())
                strokes.append(edge.mapToScene(stroker.createStroke(edge.path())))
        text, pill = item.saved_badge()
        assert text == f"saved {short_bytes(item.saved)}"  # (whole: its unit kept)
        assert not any(stroke.intersects(item.mapRectToScene(pill)) for stroke in strokes), item.node.title
        badges += bool(strokes)
    assert badges >= 2
    shown = [item for item in scene.node_items.values() if item.isVisible() and item.saved > 0]
    if name == "mlp_optimizer":
        assert {"AddmmBackward0", "NllLossBackward0"} <= {item.node.title for item in shown if item.badge_left}
    if name in ("lstm_variable_steps", "teacher_student_detach"):
        assert any(item.badge_spot[1] > SAVED_BADGE_LEFT for item in shown)  # moved past arrows on both sides


def _alone(item: NodeItem, scale: float = 2.0) -> tuple[QImage, NodeItem]:
    """The node painted alone as it is drawn now (its state, badge and place), on white, at ``scale``."""
    node = NodeItem(item.node)
    node.set_state(item.state, item.kind, item.saved, item.grad)
    node.badge_spot = item.badge_spot
    scene = QGraphicsScene()
    scene.addItem(node)
    scene.setBackgroundBrush(Qt.white)
    bounds = node.boundingRect()
    image = QImage(int(bounds.width() * scale), int(bounds.height() * scale), QImage.Format_RGB32)
    image.fill(Qt.white)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.Antialiasing)
    scene.render(painter, QRectF(image.rect()), node.mapRectToScene(bounds), Qt.IgnoreAspectRatio)
    painter.end()
    return image, node


def test_a_saved_badge_keeps_clear_of_the_arrowheads_and_of_the_running_nodes_glow(canvas, record):
    """Stepping through the MLP's backward at 1366x768, AddmmBackward0's "saved" badge sat 5.3
    units beside the arrowheads at its top centre (4.5 beside a straight arrow's), and the running
    LogSoftmaxBackward0's on its glow. At each node backward runs, every badge shown keeps ARROWHEAD_CLEARANCE from every
    arrowhead into its node, and the running node's glow breaks around its badge: the pixels
    just beside the badge's ends are the background, not the glow."""
    from graphview.core import timeline
    from graphview.qt.canvas.nodes import ARROWHEAD_CLEARANCE, arrowhead

    run = record(model("mlp_optimizer"), steps=1)
    scene, _ = canvas
    index, checked, glowing = timeline.next_backward(run, 0), 0, 0
    while run.events[index := timeline.next_backward_node(run, index)]["ev"] == "bw_node":
        show_at(canvas, run, index)
        _painted(scene)
        for item in [i for i in scene.node_items.values() if i.isVisible() and i.saved > 0]:
            pill = item.mapRectToScene(item.saved_badge()[1])
            clear = pill.adjusted(-ARROWHEAD_CLEARANCE + 0.01, 0, ARROWHEAD_CLEARANCE - 0.01, 0)
            for edge in scene.edges_into(item.node.id):
                if edge.isVisible():
                    head = edge.mapToScene(arrowhead(edge.path()))
                    assert not head.boundingRect().intersects(clear), (item.node.title, head.boundingRect(), pill)
                    checked += 1
            if item.state == "running":
                image, alone = _alone(item)
                glow = QColor(alone.fill_color())  # (the glow is the theme's running_glow; anything not white)
                local = alone.saved_badge()[1].translated(-alone.boundingRect().left(), -alone.boundingRect().top())
                y = int((local.center().y() - 2) * 2)  # 4 units above the box: in the glow, clear of the border
                for x in (local.left() - 1.2, local.right() + 1.2):
                    pixel = QColor(image.pixel(int(x * 2), y))
                    assert pixel.lightness() >= 250, (item.node.title, x, pixel.name(), glow.name())
                glowing += 1
    assert checked >= 10 and glowing >= 3
