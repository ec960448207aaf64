"""The Inspector follows the cursor as a debugger's variables follow execution: with nothing
selected it shows the node the cursor's event is about (the node backward runs, the tensor an op
made); a node the user selected stays in it at every cursor until a click on empty canvas."""

from __future__ import annotations

from graphview.core import timeline
from graphview.core.options import RunOptions
from graphview.core.queries.names import node_title
from graphview.qt.panels.inspector import FOLLOWED_NOTE
from tests.conftest import model


def _shown(window) -> tuple[str, bool]:
    """The Inspector's title, and whether it says it follows the cursor."""
    text = window.inspector.toPlainText()
    return text.split("\n", 1)[0], FOLLOWED_NOTE in text


def test_stepping_through_backward_the_inspector_shows_each_node_it_runs(window, record):
    run = record(model("mlp_optimizer"), steps=1)
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(0)
    window.move(timeline.next_backward)
    call = next(iter(run.backwards.values()))
    ran = []
    while len(ran) < len(call.order):
        window.move(timeline.next_backward_node)
        ev = run.events[window.cursor]
        assert ev["ev"] == "bw_node"
        ran.append(ev["vid"])
        assert _shown(window) == (node_title(run.op_nodes[ev["vid"]].name), True)
        assert "running now" in window.inspector.toPlainText()
    assert ran == list(call.order)  # every node backward ran, in torch's order


def test_stepping_onto_an_op_shows_the_tensor_it_made(window, record):
    run = record(model("mlp_optimizer"), steps=1)
    window.begin_run(run.start["script"], RunOptions(), run)
    index = next(i for i, ev in enumerate(run.events) if ev.get("ev") == "op" and ev.get("op") == "relu")
    window.set_cursor(index)
    tid = run.events[index]["outputs"][0][0]
    assert _shown(window) == (run.tensor_title(tid, run.events[index]["grad_fn"]), True)  # "output of relu"


def test_a_node_the_user_selected_stays_until_a_click_on_empty_canvas(window, record):
    run = record(model("mlp_optimizer"), steps=1)
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(0)
    window.move(timeline.next_backward)
    weight = next(i for i, item in window.scene.node_items.items() if item.node.title == "model.2.weight")
    window.scene.select_node(weight)
    for _ in range(3):
        window.move(timeline.next_backward_node)
        assert _shown(window) == ("model.2.weight", False)
    window.scene.clearSelection()  # a click on empty canvas: the Inspector is the cursor's again
    running = run.op_nodes[run.events[window.cursor]["vid"]].name
    assert _shown(window) == (node_title(running), True)


def test_behind_another_tab_it_shows_the_cursors_node_when_brought_forward(window, record, qtbot):
    """Following is not paid for while the Inspector is hidden (behind the code's tab at
    1366x768): the node is drawn when the Inspector shows, the one the cursor is on then."""
    run = record(model("mlp_optimizer"), steps=1)
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(0)
    window.inspector_dock.hide()
    qtbot.waitUntil(lambda: not window.inspector.isVisible())
    window.move(timeline.next_backward)
    window.move(timeline.next_backward_node)
    window.move(timeline.next_backward_node)
    assert window.inspector.toPlainText().startswith("Click a node")  # not drawn while hidden
    window.inspector_dock.show()
    qtbot.waitUntil(window.inspector.isVisible)
    running = run.op_nodes[run.events[window.cursor]["vid"]].name
    assert _shown(window) == (node_title(running), True)


def test_a_gradient_checks_table_stays_while_the_cursor_moves(window, record):
    """A gradient check the user asked for is not replaced by the node the cursor comes to (with
    nothing selected the Inspector follows the cursor); a node selected takes its place."""
    run = record(model("mlp_optimizer"), steps=1)
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(0)
    window.show_gradcheck({"tensor": "inputs", "shape": [1], "autograd": [0.25], "numeric": [0.25000001],
                           "eps": 1e-6, "max_abs_error": 1e-8, "max_rel_error": 4e-8}, {"status": "ok"})
    for _ in range(5):
        window.move(timeline.next_backward_node)
        assert _shown(window) == ("Gradient check: inputs", False)
    weight = next(i for i, item in window.scene.node_items.items() if item.node.title == "model.2.weight")
    window.scene.select_node(weight)  # a node chosen: the table goes
    assert _shown(window) == ("model.2.weight", False)
    window.scene.clearSelection()  # then empty canvas: the Inspector follows the cursor again
    running = run.op_nodes[run.events[window.cursor]["vid"]].name
    assert _shown(window) == (node_title(running), True)
