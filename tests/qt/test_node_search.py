"""Finding nodes: the search field's text in a node's name, op, module or a tied weight's other
names; the status bar counts the hits; a code line selects the nodes it made."""

from __future__ import annotations

import torch

from graphview.core import timeline
from graphview.core.options import RunOptions
from graphview.qt.node_search import matching_nodes
from tests.conftest import model


def test_the_text_is_looked_for_in_names_ops_modules_and_a_tensors_other_names(record):
    from graphview.core.drawing import Drawing

    run = record(model("mlp_optimizer"), steps=1)
    drawing = Drawing(run)
    drawing.update()
    ids = list(drawing.nodes)
    # torch: a Linear on a batch of 2-d inputs is one addmm, whose node is AddmmBackward0
    layer = torch.nn.Linear(8, 16)
    assert type(layer(torch.randn(32, 8)).grad_fn).__name__ == "AddmmBackward0"
    addmm = matching_nodes("addmm", ids, drawing.nodes, {})
    assert len(addmm) == 2 and all(drawing.nodes[n].title == "AddmmBackward0" for n in addmm)
    in_first = matching_nodes("model.0", ids, drawing.nodes, {})
    assert in_first and all("model.0" in ((drawing.nodes[n].module or "") + drawing.nodes[n].title) for n in in_first)
    weight = next(n for n in ids if drawing.nodes[n].title == "model.0.weight")
    aliases = {drawing.nodes[weight].ref: ["decoder.weight"]}  # (as a tied weight's other name)
    assert matching_nodes("decoder", ids, drawing.nodes, aliases) == [weight]
    assert matching_nodes("decoder", ids, drawing.nodes, {}) == []


def test_search_selects_the_hits_and_counts_them_in_the_status_bar(window, record, qtbot):
    run = record(model("mlp_optimizer"), steps=1)
    window.begin_run(run.start["script"], RunOptions(steps=1), run)
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    window.set_cursor(timeline.next_backward(run, 0))  # the graph complete
    window.node_search.find("  AddMM ")
    assert sorted(i.node.title for i in window.scene.selectedItems()) == ["AddmmBackward0"] * 2
    assert window.statusBar().currentMessage() == "2 nodes match 'addmm'"
    window.node_search.find("no such node")
    assert window.statusBar().currentMessage() == "no node matches 'no such node'"
    line = next(op["line"] for _, op in run.ops if op["op"] == "cross_entropy")
    window.node_search.select_line(line)
    made = {window.scene.drawing.nodes[n].title for n in window.scene.placed_ids()
            if window.scene.drawing.nodes[n].line == line and window.scene.shown_at_cursor(n)}
    assert made and {i.node.title for i in window.scene.selectedItems()} == made


def test_the_count_of_hits_goes_when_the_cursor_moves_or_the_search_changes(window, record, qtbot):
    """"2 nodes match" stayed its 5 s in the status bar while the user stepped on to a graph it did
    not count; it stays while the cursor stays (a live run growing under it)."""
    run = record(model("mlp_optimizer"), steps=1)
    window.begin_run(run.start["script"], RunOptions(steps=1), run)
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    start = timeline.next_backward(run, 0)
    window.set_cursor(start)
    window.search.setText("addmm")
    window.find()
    assert window.statusBar().currentMessage() == "2 nodes match 'addmm'"
    window.set_cursor(start)  # the same moment again: still what it counted
    assert window.statusBar().currentMessage() == "2 nodes match 'addmm'"
    window.move(timeline.next_backward_node)
    assert window.cursor != start and window.statusBar().currentMessage() == ""
    window.find()
    assert window.statusBar().currentMessage() == "2 nodes match 'addmm'"
    window.search.setText("addmm ")  # typing in the field: the count was of the search before
    assert window.statusBar().currentMessage() == ""
    window.find()
    window.statusBar().showMessage("something else", 5000)  # (a message after the count)
    window.move(timeline.next_backward_node)  # is not the search's to clear
    assert window.statusBar().currentMessage() == "something else"
