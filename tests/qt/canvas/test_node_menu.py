"""The canvas's context menu: on an op's node, detach it (the op, its module's output, its line)
and checkpoint its module; on a parameter, check its gradient; each says so through the canvas's signals."""

from __future__ import annotations

from graphview.core import timeline
from graphview.qt.canvas.node_menu import item_menu
from tests.conftest import model
from tests.qt.canvas.conftest import show_at


def test_a_nodes_menu_offers_what_can_be_done_to_it_and_says_it_by_the_canvas_signals(canvas, record):
    scene, view = canvas
    run = record(model("mlp_optimizer"), steps=1)
    show_at(canvas, run, timeline.next_backward(run, 0))
    asked = []
    view.sigDetachRequested.connect(lambda spec: asked.append(("detach", spec)))
    view.sigGradcheckRequested.connect(lambda name: asked.append(("gradcheck", name)))
    view.sigCheckpointRequested.connect(lambda path: asked.append(("checkpoint", path)))
    # the first Linear's op (model.0 of an nn.Sequential: a numbered layer)
    oid, op = next((op["oid"], op) for _, op in run.ops if op.get("module") == "model.0")
    item = next(i for i in scene.node_items.values() if i.node.kind == "op" and i.node.ref == op["grad_fn"])
    menu = item_menu(view, item, run)
    texts = [action.text() for action in menu.actions()]
    assert texts == [f"Detach here (op {oid}: {item.node.title})", "Detach output of module model.0",
                     f"Detach every result of line {op['line']}", "Checkpoint this module (re-run): model.0",
                     "Checkpoint every model.* (re-run)"]
    for action in menu.actions():
        action.trigger()
    assert asked == [("detach", f"op:{oid}"), ("detach", "model.0"), ("detach", f"line:{op['line']}"),
                     ("checkpoint", "model.0"), ("checkpoint", "model.*")]
    weight = next(i for i in scene.node_items.values()
                  if i.node.kind == "param" and run.tensor_name(i.node.ref) == "model.0.weight")
    texts = [action.text() for action in item_menu(view, weight, run).actions()]
    assert "Check the gradient of model.0.weight (finite differences, float64)" in texts
    assert item_menu(view, None, run) is None  # the empty canvas: no menu
