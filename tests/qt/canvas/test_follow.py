"""Following the action: stepping keeps the cursor's node in view, zoomed to read where the view
was zoomed out beyond reading, and leaves a readable view that already shows it where it is."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, QRectF

from graphview.core import timeline
from graphview.qt.canvas.style import colors
from graphview.core.drawing.nodes import LAYER_HEIGHT, SLOT_WIDTH
from graphview.qt.canvas.follow import follow_margins
from tests.conftest import model
from tests.qt.canvas.conftest import show_at


@pytest.fixture
def backward(canvas, record):
    """The canvas showing the MLP at the first node its backward runs."""
    run = record(model("mlp_optimizer"), steps=1)
    index = timeline.next_backward_node(run, timeline.next_backward(run, 0))
    show_at(canvas, run, index)
    return canvas[0], canvas[1], run, index


def _on_screen(view, rect: QRectF) -> QRectF:
    return QRectF(view.mapFromScene(rect).boundingRect())


def test_a_view_zoomed_out_beyond_reading_zooms_in_around_the_cursors_node(backward):
    scene, view, run, index = backward
    view.scale(0.05, 0.05)
    view.follow_cursor()
    assert view.transform().m11() == pytest.approx(view.readable_scale())
    where = _on_screen(view, scene.place_at_event(index))
    # in the middle (give or take the scroll bar that came with the zoom)
    assert abs(where.center().x() - view.viewport().width() / 2) <= 10
    assert abs(where.center().y() - view.viewport().height() / 2) <= 10


def test_a_readable_view_scrolls_only_to_bring_the_node_in_with_its_margin(backward):
    scene, view, run, index = backward
    node = scene.place_at_event(index)
    view.resetTransform()
    view.centerOn(node.center())
    still = (view.horizontalScrollBar().value(), view.verticalScrollBar().value())
    view.follow_cursor()
    assert (view.horizontalScrollBar().value(), view.verticalScrollBar().value()) == still  # already well in view
    far = scene.sceneRect().top() if node.center().y() > scene.sceneRect().center().y() else scene.sceneRect().bottom()
    view.centerOn(QPointF(node.center().x(), far))  # the other end of the graph: the node out of view
    port = QRectF(view.viewport().rect())
    assert not port.intersects(_on_screen(view, node))
    view.follow_cursor()
    where = _on_screen(view, node)
    assert view.transform().m11() == 1 and port.contains(where)
    # scrolled just far enough: the margin between it and the edge it came in from, a row and a
    # little more (at 40 px, the leaf above a running AccumulateGrad showed as a sliver)
    margin = follow_margins(view, node)[1]
    assert margin > LAYER_HEIGHT
    assert min(abs(where.top() - margin), abs(port.bottom() - where.bottom() - margin)) <= 2
    assert port.contains(where.adjusted(0, -LAYER_HEIGHT, 0, LAYER_HEIGHT))  # the rows next to it, whole
    # across too: brought in from the side, the column next to it shows whole
    view.center_view_on(QPointF(node.center().x() + 3 * port.width(), node.center().y()))  # (past the graph's edge)
    assert not port.intersects(_on_screen(view, node))
    view.follow_cursor()
    where = _on_screen(view, node)
    assert follow_margins(view, node)[0] > SLOT_WIDTH
    assert port.contains(where.adjusted(-SLOT_WIDTH, 0, SLOT_WIDTH, 0))
    # the next node backward runs is on screen as well, once followed
    view.set_cursor(timeline.next_backward_node(run, index))
    view.follow_cursor()
    assert QRectF(view.viewport().rect()).contains(_on_screen(view, scene.place_at_event(view.cursor_index)))


def test_stepping_onto_an_op_brings_its_output_and_its_node_in_together(canvas, record):
    """Followed by its output tensor alone, the AddmmBackward0 a linear layer made was left cut
    off at the view's top edge, its "saved" badge with it: the op's node, its output and the row
    above the node (the inputs it took) are all on screen."""
    scene, view = canvas
    run = record(model("mlp_optimizer"), steps=1)
    index = next(i for i, ev in enumerate(run.events) if ev.get("ev") == "op" and ev.get("op") == "linear")
    show_at(canvas, run, index)
    output, node = scene.places_at_event(index, 2)
    assert node.bottom() <= output.top()  # (the node above its output, a row apart)
    view.resetTransform()
    far = scene.sceneRect().bottom()
    view.centerOn(QPointF(output.center().x(), far))  # the graph's other end: both out of view
    port = QRectF(view.viewport().rect())
    assert not port.intersects(_on_screen(view, node)) and not port.intersects(_on_screen(view, output))
    view.follow_cursor()
    assert port.contains(_on_screen(view, output))
    assert port.contains(_on_screen(view, node).adjusted(0, -LAYER_HEIGHT, 0, 0))  # and the row above it
    assert view.scene().place_at_event(index) == output  # (the moment is still about its output first)


def test_an_op_with_many_outputs_is_about_its_first_output_and_its_node_first(canvas, record, write_script):
    """A split into four made four tensors before its SplitBackward0 in the moment's nodes: the
    footprint of four took only outputs, never the node following was meant to keep in view."""
    scene, view = canvas
    run = record(write_script("import torch\nw = torch.ones(8, 4, requires_grad=True)\n"
                              "parts = (w * 2).split(2)\nsum(p.sum() for p in parts).backward()\n"))
    index = next(i for i, ev in enumerate(run.events) if ev.get("ev") == "op" and ev.get("op") == "split")
    show_at(canvas, run, index)
    split = f"op{run.events[index]['grad_fn']}"
    assert len(run.events[index]["outputs"]) == 4
    nodes = scene.at_cursor.nodes_of_event(index)
    assert nodes[1] == split and nodes[0].startswith("t") and len(nodes) == 5
    assert scene.places_at_event(index, 2)[1].center() == QPointF(*scene.place_of(split))  # the node's place, second


def test_to_backward_brings_the_loss_backward_starts_from_into_view(window, record):
    from graphview.core.options import RunOptions

    run = record(model("mlp_optimizer"), steps=1)
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(0)
    view, scene = window.view, window.scene
    view.resetTransform()  # 100%: the MLP is taller than the canvas
    view.centerOn(scene.sceneRect().center().x(), scene.sceneRect().top())
    window.move(timeline.next_backward)
    call = min(run.backwards.values(), key=lambda c: c.start)
    assert window.cursor == call.start and run.events[call.start]["ev"] == "backward_start"
    port = QRectF(view.viewport().rect())
    loss = [n.id for n in run._tensor_nodes_of[call.roots_tensors[0]]]
    for node_id in loss + [f"op{call.roots[0]}"]:  # the loss, and its grad_fn where backward begins
        assert port.contains(_on_screen(view, scene.item_for(node_id).sceneBoundingRect())), node_id
    # the halo, where the zoom does not read, rings the loss, in backward's orange
    view.scale(0.05, 0.05)
    halo = view.halo.rect()
    assert halo is not None and halo.contains(view.mapFromScene(scene.item_for(loss[0]).sceneBoundingRect().center()))
    assert view.halo.color() == colors().q("running_border")


#: a model generating tokens under no_grad, greedily (no autograd node: the run's end draws nothing of its own)
GENERATES = ("import torch\n"
             "torch.manual_seed(0)\n"
             "model = torch.nn.Sequential(torch.nn.Embedding(50, 16), torch.nn.Linear(16, 16), torch.nn.Tanh(),\n"
             "                            torch.nn.Linear(16, 50))\n"
             "ids = torch.tensor([[1, 2, 3]])\n"
             "with torch.no_grad():\n"
             "    for _ in range(4):\n"
             "        logits = model(ids)\n"
             "        nxt = logits[:, -1].argmax(-1, keepdim=True)\n"
             "        ids = torch.cat([ids, nxt], dim=1)\n")


def test_the_end_of_a_run_shows_its_last_nodes_whole_and_fit_stays_there(window, record, write_script):
    """End on a GPT-2 generating under no_grad left the view where the opening had put it, off
    the graph: nodes cut at the left edge until F was pressed (and F then showed the graph's top,
    not its end). At the run's end the view shows what the run ended with: the graph whole where it
    reads, else its width at a readable zoom around the last node made."""
    from graphview.core.options import RunOptions

    run = record(write_script(GENERATES))
    window.resize(1366, 768)
    window.begin_run(run.start["script"], RunOptions(), run)
    view, scene = window.view, window.scene
    view.resetTransform()
    view.centerOn(scene.sceneRect().right() + 400, scene.sceneRect().top())  # scrolled aside, off the graph
    window.actions["to_end"].trigger()
    assert window.cursor == len(run.events) - 1 and run.events[-1]["ev"] == "run_end"
    newest = scene.newest_shown()
    assert newest == max(scene.at_cursor.visible, key=lambda n: scene.drawing.nodes[n].born)
    assert run.events[scene.drawing.nodes[newest].born]["shape"] == [1, 7]  # the last ids

    def in_view() -> None:
        port = QRectF(view.viewport().rect())
        assert port.contains(_on_screen(view, scene.item_for(newest).sceneBoundingRect()))
        shown = _on_screen(view, scene.shown_rect())  # no node cut at the left or right edge
        assert port.left() <= shown.left() and shown.right() <= port.right()
        assert view.transform().m11() >= view.readable_scale() - 1e-9

    in_view()
    assert _on_screen(view, scene.shown_rect()).height() > view.viewport().height()  # (not the whole: the end)
    window.actions["fit"].trigger()  # F at the end: still the end, not the graph's top
    in_view()
