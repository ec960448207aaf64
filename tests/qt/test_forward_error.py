"""A script that raises in forward (an op given tensors of shapes that do not fit): the tensors the
failing op took are drawn as where the error happened, and the window opens with them in view. At
1366x768 the newcomer's failed run showed the error in the status bar and the Console, but no node
had the red outline the legend lists, and the failing module was off-screen."""

from __future__ import annotations

from PySide6.QtCore import QRectF

from graphview.core.options import RunOptions
from graphview.core.trace import read_trace

RAISES_DEEP = ("import torch\n"
               "from torch import nn\n"
               "torch.manual_seed(0)\n"
               "model = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(8, 8), nn.ReLU())], nn.Linear(8, 2))\n"
               "h = torch.randn(3, 8)\n"
               "for layer in model[:-1]:\n"
               "    h = layer(h)\n"
               "y = model[12](h.t())  # 8x3 against 8x2: raises in forward\n"
               "y.sum().backward()\n")


def test_the_tensors_a_failing_op_took_are_outlined_and_in_view(window, record, write_script, tmp_path):
    run = record(write_script(RAISES_DEEP))
    (at, error), = run.errors
    assert error["type"] == "RuntimeError" and error["line"] == 8
    # the op that raised, the module it ran in and the tensors it took, as the run recorded them
    transposed = next(e for e in run.events if e.get("ev") == "op" and e.get("op") == "t")["outputs"][0][0]
    params = {e["name"]: e["tid"] for e in run.events if e.get("ev") == "tensor" and e.get("kind") == "param"}
    took = [transposed, params["model.12.weight"], params["model.12.bias"]]
    assert (error["op"], error["module"], error["inputs"]) == ("linear", "model.12", took)
    window.resize(1366, 768)
    window.begin_run(run.start["script"], RunOptions(), run)  # a failed run opens where it failed
    assert window.cursor == at
    scene, view = window.scene, window.view
    port = QRectF(view.viewport().rect())
    hidden_by = scene.boxes._hidden_by
    for tid in took:  # each drawn as where the error happened: its node, or the shut box holding it
        item = scene.node_items[f"t{tid}"]
        box = hidden_by.get(item.node.id)
        shown = box if box is not None else item
        assert shown.isVisible() and (box.error if box is not None else item.state == "error"), item.node.title
        assert port.contains(QRectF(view.mapFromScene(shown.sceneBoundingRect()).boundingRect())), item.node.title
    failed = [i.node.title for i in scene.node_items.values() if i.isVisible() and i.state == "error"]
    assert failed == ["output of t"]  # (no other node: the op that raised made none)
    assert [g.box.key for g in scene.groups.values() if g.isVisible() and g.error] == ["model.12"]
    # every box open, the graph taller than the view: going to the error from the start follows it there
    window.actions["open_all"].trigger()
    scene.boxes.settle()
    window.actions["to_start"].trigger()
    window.move(lambda run, cursor: at)
    scene.boxes.settle()
    assert scene.shown_rect().height() > view.mapToScene(view.viewport().rect()).boundingRect().height()
    failed = {i.node.ref: i for i in scene.node_items.values() if i.isVisible() and i.state == "error"}
    assert sorted(failed) == sorted(took)
    for item in failed.values():
        assert port.contains(QRectF(view.mapFromScene(item.sceneBoundingRect()).boundingRect())), item.node.title
    assert scene.place_at_event(at) == scene.place_at_event(next(  # the error is about what the op took
        i for i in range(at) if run.events[i].get("ev") == "op" and run.events[i].get("op") == "t"))
    # one step back and forth: the outline goes and comes with the error's event
    window.move(lambda run, cursor: at - 1)
    assert not any(i.state == "error" for i in scene.node_items.values())
    window.move(lambda run, cursor: at)
    assert sorted(i.node.ref for i in scene.node_items.values() if i.isVisible() and i.state == "error") == took
    # a trace keeps it: read back, the error event says the same
    path = tmp_path / "failed.gvtrace"
    window.export_trace(str(path))
    errors = [e for e in read_trace(path).events if e.get("ev") == "error"]
    assert [(e["op"], e["module"], e["inputs"]) for e in errors] == [("linear", "model.12", took)]
