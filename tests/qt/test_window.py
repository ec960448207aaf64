"""The desktop window, offscreen: what is drawn, stepping, inspector, chart, export."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from PySide6.QtCore import QRectF, QUrl
from PySide6.QtGui import QColor, QImage, QPainter

from graphview.core import timeline
from graphview.core.options import RunOptions
from graphview.qt.canvas import FILL, NodeItem
from tests.conftest import lesson, model


def show(window, run, options=None):
    window.begin_run(run.start["script"] if run.start else None, options or RunOptions(), run)
    return window


def items_by_title(window):
    return {item.node.title: item for item in window.scene.node_items.values()}


def color_at_center(window, item: NodeItem) -> QColor:
    rect = item.sceneBoundingRect()
    image = QImage(int(rect.width()), int(rect.height()), QImage.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    window.scene.render(painter, QRectF(image.rect()), rect)
    painter.end()
    center = item.mapToScene(0, -6) - rect.topLeft()  # above the subtitle, left of the title text
    return QColor(image.pixel(int(center.x()) - 60, int(center.y())))


def test_chain_rule_is_drawn_with_the_right_kinds(window, record):
    run = record(lesson("chain_rule"))
    show(window, run)
    window.set_cursor(len(run.events) - 1)
    items = items_by_title(window)
    assert {t: i.kind for t, i in items.items() if t in ("x", "a", "b", "y")} == {
        "x": "input_grad", "a": "intermediate", "b": "intermediate", "y": "output"}
    kinds = sorted(i.kind for i in window.scene.node_items.values())
    assert kinds == sorted(["input_grad", "accumulate", "op", "intermediate", "op", "intermediate", "op", "output"])
    # the leaf shows the gradient the run recorded: dy/dx = 20
    assert items["x"].grad == "20"
    # after the backward the grad_fn nodes are freed (drawn grey); the leaf keeps its colour
    assert items["MulBackward0"].state == "freed"
    assert color_at_center(window, items["x"]).name() == FILL["input_grad"].name()


def test_stepping_forward_and_back_grows_and_shrinks_the_graph(window, record):
    run = record(lesson("chain_rule"))
    show(window, run)

    def visible():
        return sum(1 for i in window.scene.node_items.values() if i.isVisible())

    window.set_cursor(0)
    counts = []
    for _ in range(4):
        window.move(timeline.step_forward)
        counts.append(visible())
    assert counts == sorted(counts) and counts[-1] > counts[0]
    before = visible()
    window.move(timeline.step_back)
    assert visible() <= before
    # run to the backward, then one backward node: PowBackward0 is executing
    window.move(timeline.next_backward)
    window.move(timeline.next_backward_node)
    items = items_by_title(window)
    assert items["PowBackward0"].state == "running"
    assert color_at_center(window, items["PowBackward0"]).name() == QColor("#ffd59e").name()
    assert "PowBackward0" in window.position_label.text()


def test_inspector_shows_recorded_values(window, record, qtbot):
    run = record(lesson("prediction"))
    show(window, run)
    window.set_cursor(len(run.events) - 1)
    w = items_by_title(window)["w"]
    window.scene.select_node(w.node.id)
    text = window.inspector.toPlainText()
    assert ".grad" in text and "-18" in text and "requires_grad" in text
    mul = items_by_title(window)["MulBackward0"]
    window.scene.select_node(mul.node.id)
    text = window.inspector.toPlainText()
    assert "line 9" in text and "saved tensors" in text


def _inspector_says(window, run, names) -> dict[str, str]:
    """What the inspector says of each named tensor, with the cursor at the run's end."""
    show(window, run)
    window.set_cursor(len(run.events) - 1)
    by_name = {info.get("name"): tid for tid, info in run.tensors.items()}
    said = {}
    for name in names:
        window.inspector.show_node(run, run._current_tensor_node[by_name[name]], window.cursor)
        said[name] = window.inspector.toPlainText()
    return said


def test_the_inspector_says_where_a_tensor_was_made_or_first_used(window, record, write_script):
    """A tensor an op made reads "made at" its line; a layer's weight, made where graphview does not
    see it (the layer's constructor), reads "first used at" the line that used it, not the line of
    the optimizer step that updated it last."""
    run = record(write_script(
        "import torch\n"
        "layer = torch.nn.Linear(3, 2)\n"
        "x = torch.randn(4, 3)\n"
        "loss = layer(x).sum()\n"
        "loss.backward()\n"
        "torch.optim.SGD(layer.parameters(), lr=0.1).step()\n"))
    said = _inspector_says(window, run, ("x", "layer.weight", "loss"))
    assert "made at\nline 3" in said["x"]
    assert "first used at\nline 4" in said["layer.weight"] and "made at" not in said["layer.weight"]
    assert "made at\nline 4" in said["loss"]
    # a non-leaf's .grad is None: the inspector says why, and what keeps it
    assert "None (autograd keeps .grad of leaves only: call .retain_grad()" in said["loss"]
    assert said["x"].rstrip().endswith(".grad\nNone")


def test_the_inspector_says_a_tensor_made_under_no_grad_is_an_ops_result(window, record, write_script):
    """A model's logits computed under no_grad read "input (leaf)", as a tensor the script made
    itself does: they read as the result of the op that made them, under no_grad, a leaf."""
    run = record(write_script(
        "import torch\n"
        "layer = torch.nn.Linear(3, 2)\n"
        "x = torch.randn(4, 3)\n"
        "with torch.no_grad():\n"
        "    logits = layer(x)\n"
        "with torch.inference_mode():\n"
        "    scores = logits.softmax(-1)\n"))
    said = _inspector_says(window, run, ("x", "logits", "scores"))
    by_name = {info.get("name"): tid for tid, info in run.tensors.items()}
    for name in said:
        info = run.tensors[by_name[name]]
        assert info["kind"] == "input" and info["is_leaf"]  # (what the recording says)
    assert "kind\ninput (leaf)" in said["x"]  # made by torch.randn with grad on: an input
    assert f"kind\nresult of {run.made_by[by_name['logits']]['op']} under no_grad (a leaf: no grad_fn)" in said["logits"]
    assert "kind\nresult of softmax under inference_mode (a leaf: no grad_fn)" in said["scores"]


def test_memory_chart_plots_the_recorded_series(window, record):
    run = record(model("mlp_optimizer"))
    show(window, run)
    series = run.memory_series("cpu")
    top = window.memory.curves["activation"].yData
    expected = [a + p + i for a, p, i in zip(series["activation"], series["param"], series["input"])]
    assert list(top) == expected
    assert max(expected) > 0
    window.set_cursor(10)
    assert window.memory.cursor_line.value() == 10
    # the bytes after event i are drawn from i to i + 1 (they hold until the next event)
    first = next(i for i, v in enumerate(expected) if v > 0)
    path = window.memory.curves["activation"].curve.getPath()
    polygon = path.toFillPolygon()
    points = [(polygon.at(k).x(), polygon.at(k).y()) for k in range(polygon.size())]

    def drawn_at(x):
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            if y0 == y1 and min(x0, x1) <= x <= max(x0, x1):
                return y0
        return None

    assert drawn_at(first - 0.5) == 0
    assert drawn_at(first + 0.5) == expected[first]


def test_retain_graph_keeps_bytes_after_backward_and_no_grad_is_zero(window, record):
    retained = record(model("mlp_optimizer"), retain_graph=True)
    show(window, retained)
    end_bw = next(i for i, e in enumerate(retained.events) if e["ev"] == "backward_end")
    window.set_cursor(end_bw)
    total = window.memory.series["total"]
    assert total[end_bw] > 0
    # saved-bytes badges are still on the nodes after that backward
    assert any(i.saved > 0 for i in window.scene.node_items.values() if i.isVisible())
    plain = record(model("mlp_optimizer"))
    show(window, plain)
    end_plain = next(i for i, e in enumerate(plain.events) if e["ev"] == "backward_end")
    assert window.memory.series["total"][end_plain] == 0
    no_grad = record(model("mlp_optimizer"), grad_mode="no_grad")
    show(window, no_grad)
    assert max(window.memory.series["total"]) == 0
    assert not any(i.kind == "op" for i in window.scene.node_items.values())


def test_gradient_ledger_lists_each_accumulation(window, record):
    run = record(lesson("accumulate_without_clearing"))
    show(window, run)
    window.set_cursor(len(run.events) - 1)
    assert window.ledger.topLevelItemCount() == 0 or not window.ledger.isVisible()  # built when shown
    window.bottom_tabs.setCurrentWidget(window.ledger)
    top = window.ledger.topLevelItem(0)
    assert top.text(0) == "w" and top.text(1) == "-16"
    assert [top.child(i).text(1) for i in range(top.childCount())] == ["-8", "-16"]
    assert top.child(0).text(0) == "backward 1: .grad += -8"


def test_the_ledger_names_the_op_that_changed_a_grad_in_place(window, record, write_script):
    run = record(write_script(
        "import torch\n"
        "w = torch.tensor([3.0, -4.0], requires_grad=True)\n"
        "(w * 10).sum().backward()\n"
        "torch.nn.utils.clip_grad_norm_([w], 1.0)\n"))
    show(window, run)
    window.bottom_tabs.setCurrentWidget(window.ledger)
    window.set_cursor(len(run.events) - 1)
    top = window.ledger.topLevelItem(0)
    rows = [(top.child(i).text(0), top.child(i).text(1)) for i in range(top.childCount())]
    assert rows[0][0] == "backward 1: .grad += [10, 10]"
    # torch: the norm is sqrt(200) = 14.14, so each of 10 is scaled to 1/sqrt(2)
    assert rows[1] == ("changed in place by _foreach_mul_", "[0.707107, 0.707107]")
    assert top.text(1) == "[0.707107, 0.707107]"


def test_a_tied_weight_is_found_by_its_other_name(window, record, write_script):
    """Searching for lm_head.weight, which is the embedding's weight, found no node; the Inspector
    says the tensor's other name."""
    run = record(write_script(
        "import torch\n"
        "from torch import nn\n"
        "class LM(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.embed = nn.Embedding(10, 4)\n"
        "        self.head = nn.Linear(4, 10, bias=False)\n"
        "        self.head.weight = self.embed.weight\n"
        "    def forward(self, ids):\n"
        "        return self.head(self.embed(ids))\n"
        "model = LM()\n"
        "model(torch.tensor([1, 2, 3])).logsumexp(-1).sum().backward()\n"))
    show(window, run)
    window.set_cursor(next(i for i, e in enumerate(run.events) if e["ev"] == "backward_start"))
    window.search.setText("head.weight")
    window.find()
    selected = [item.node for item in window.scene.selectedItems() if hasattr(item, "node")]
    assert [n.title for n in selected] == ["embed.weight"]
    window.inspector.show_node(run, selected[0].id, window.cursor)
    assert "also" in window.inspector.toPlainText() and "head.weight" in window.inspector.toPlainText()


def test_a_long_ledger_lists_the_latest_changes_and_counts_the_older(window, record, monkeypatch):
    from graphview.qt.formatting import capped
    from graphview.qt.panels import ledger

    monkeypatch.setattr(ledger, "SHOWN_BEFORE", 3)
    monkeypatch.setattr(ledger, "SHOWN_AFTER", 1)
    run = record(model("mlp_optimizer"), steps=4)
    show(window, run)
    window.bottom_tabs.setCurrentWidget(window.ledger)
    tid, entries = next(iter(run.grads.items()))
    cursor = entries[5].index
    window.set_cursor(cursor)
    top = window.ledger.topLevelItem(0)
    assert top.text(0) == run.tensor_name(tid)
    rows = [top.child(i).text(0) for i in range(top.childCount())]
    assert rows[0] == "… 3 earlier changes" and len(rows) == 1 + 3 + 1  # entries 3, 4, 5 and 6 after the cursor
    values = [top.child(i).text(1) for i in range(1, top.childCount())]
    assert values == [capped(e.value) for e in entries[3:7]] and top.text(1) == capped(entries[5].value)


def test_console_shows_an_error_whose_frames_have_no_source_text(window, record):
    """A frame's source text is optional in a trace (a file not on disk): the console raised
    KeyError on every cursor move (found by the mutated-trace test)."""
    from graphview.core.run import Run

    events = [dict(e) for e in record(lesson("error_backward_twice")).events]
    for ev in events:
        if ev["ev"] == "error":
            ev["traceback"] = [{k: v for k, v in frame.items() if k != "text"} for frame in ev["traceback"]]
    run = Run(events)
    show(window, run)
    window.set_cursor(len(run.events) - 1)
    assert "Trying to backward through the graph a second time" in window.console.toPlainText()


def test_console_shows_the_error_with_a_link_and_marks_the_line(window, record):
    run = record(lesson("error_backward_twice"))
    show(window, run)
    window.set_cursor(len(run.events) - 1)
    html = window.console.toHtml()
    assert "Trying to backward through the graph a second time" in window.console.toPlainText()
    assert "line:8" in html
    assert window.code.error_line == 8


def test_clicking_a_code_line_selects_its_nodes(window, record):
    run = record(lesson("chain_rule"))
    show(window, run)
    window.set_cursor(len(run.events) - 1)
    window._on_line_clicked(6)
    selected = [i.node.title for i in window.scene.selectedItems()]
    assert "AddBackward0" in selected


def test_search_selects_matching_nodes(window, record):
    run = record(model("mlp_optimizer"))
    show(window, run)
    window.set_cursor(window.overview_index())  # the last graph, complete, before its backward
    window.search.setText("addmm")
    window.find()
    assert window.scene.selectedItems() and all("Addmm" in i.node.title for i in window.scene.selectedItems())


def test_exports_png_svg_pdf_csv_and_data(window, record, tmp_path):
    run = record(lesson("prediction"))
    show(window, run)
    window.set_cursor(len(run.events) - 1)
    window.export_image(str(tmp_path / "g.png"))
    assert not QImage(str(tmp_path / "g.png")).isNull()
    window.export_image(str(tmp_path / "g.svg"))
    ET.parse(tmp_path / "g.svg")
    window.export_image(str(tmp_path / "g.pdf"))
    assert (tmp_path / "g.pdf").read_bytes().startswith(b"%PDF")
    window.export_chart_csv(str(tmp_path / "m.csv"))
    assert (tmp_path / "m.csv").read_text().startswith("event,activation_bytes")
    window.export_chart_png(str(tmp_path / "m.png"))
    assert not QImage(str(tmp_path / "m.png")).isNull()
    window.export_data(str(tmp_path / "g.json"))
    window.export_trace(str(tmp_path / "run.gvtrace"))
    assert (tmp_path / "run.gvtrace").stat().st_size > 0


def test_unwritable_export_path_reports_and_keeps_working(window, record, tmp_path):
    run = record(lesson("prediction"))
    show(window, run)
    window.export_image(str(tmp_path / "missing" / "g.png"))
    assert "does not exist" in window.statusBar().message()
    window.move(timeline.step_forward)  # still usable


@pytest.mark.parametrize("kind", ["retain", "detach"])
def test_toggles_request_a_new_run_with_options(window, record, qtbot, kind):
    run = record(model("mlp_optimizer"))
    show(window, run)
    with qtbot.waitSignal(window.sigRunRequested) as blocker:
        if kind == "retain":
            window.toggles.retain.setChecked(True)
            window.toggles.run_button.click()
        else:
            window.toggles.request_detach("fc2")
    options = blocker.args[0]
    assert options.retain_graph if kind == "retain" else options.detach_at == ["fc2"]


def test_earlier_runs_stay_as_overlays(window, record):
    first = record(model("mlp_optimizer"))
    show(window, first)
    second = record(model("mlp_optimizer"), retain_graph=True)
    window.begin_run(first.start["script"], RunOptions(retain_graph=True), second)
    assert len(window.memory.overlays) == 1
    assert window.memory.overlays[0].name().startswith("earlier run: default")


def test_module_groups_collapse_and_expand(window, record):
    run = record(model("transformer_block"))
    show(window, run)
    window.set_cursor(window.overview_index())
    scene = window.scene
    scene.boxes.set_all(set())  # every box open: the drawing's own layout
    assert "encoder.layers.0.self_attn" in scene.groups
    inside = [i for i in scene.node_items.values() if i.isVisible()
              and (scene.module_of(i) or "").startswith("encoder.layers.0.self_attn")]
    assert len(inside) > 5
    below = [i for i in scene.node_items.values() if i.isVisible() and (scene.module_of(i) or "").startswith("head")]
    heights = {i.node.id: i.pos().y() for i in below}
    scene.set_collapsed("encoder.layers.0.self_attn", True, animate=False)
    assert all(not i.isVisible() for i in inside)
    group = scene.groups["encoder.layers.0.self_attn"]
    assert group.isVisible() and group.collapsed and group.members == len(inside)
    assert group.ops == sum(1 for i in inside if i.node.kind == "op")
    # edges from outside now end at the collapsed box
    assert any(e.isVisible() and e.rerouted for e in scene.edge_items)
    # laid out again: the rows the attention took are gone, what came after moved up
    rows = {i.node.layer for i in inside}
    assert all(i.pos().y() < heights[i.node.id] - (len(rows) - 2) * 96 for i in below)
    scene.set_collapsed("encoder.layers.0.self_attn", False, animate=False)
    assert all(i.isVisible() for i in inside)
    assert all(i.pos().y() == heights[i.node.id] for i in below)  # back where the drawing had them


def test_overview_shows_the_graph_and_moves_the_view(window, record, qtbot):
    run = record(model("mlp_optimizer"))
    show(window, run)
    window.set_cursor(window.overview_index())
    overview = window.view.overview
    overview.redraw()
    assert overview.pixmap is not None and not overview.pixmap.isNull()
    window.view.zoom(3)
    before = window.view.mapToScene(window.view.viewport().rect().center())
    overview._jump(overview.rect().topLeft())
    after = window.view.mapToScene(window.view.viewport().rect().center())
    assert before != after


def test_diagnostics_panel_lists_findings_and_jumps_to_them(window, record):
    from graphview.core.diagnostics import diagnose
    from tests.conftest import SAMPLES

    run = record(SAMPLES / "pitfalls" / "backward_twice.py")
    show(window, run)
    assert window.diagnostics.topLevelItemCount() == len(diagnose(run)) >= 1
    item = window.diagnostics.topLevelItem(0)
    finding = item.data(0, 0x0100)
    window._on_finding(finding)
    assert window.cursor == finding.index
    assert window.code.current_line == finding.line
    assert [i.node.id for i in window.scene.selectedItems()] == [finding.node]
    # the whole explanation and fix are shown beside the list, not cut at the column's edge
    detail = window.diagnostics.detail.toPlainText()
    assert finding.explanation in detail and finding.fix in detail


def test_a_rerun_says_what_the_toggle_removed(window, record):
    first = record(model("mlp_optimizer"))
    show(window, first)
    cut = record(model("mlp_optimizer"), detach_at=["model.1"])
    window.begin_run(first.start["script"], RunOptions(detach_at=["model.1"]), cut)
    assert "AccumulateGrad(model.0.weight)" in window.comparison and "nodes gone" in window.comparison


def test_gradcheck_result_is_shown(window, record):
    run = record(lesson("chain_rule"))
    show(window, run)
    window.show_gradcheck({"tensor": "x", "shape": [], "autograd": [20.0], "numeric": [20.0000001], "eps": 1e-6,
                           "max_abs_error": 1e-7, "max_rel_error": 5e-9}, {"status": "ok"})
    assert "agree" in window.statusBar().message()
    assert "Gradient check: x" in window.inspector.toPlainText()


def test_incremental_cursor_moves_match_a_full_redraw(window, record):
    """Short cursor moves (forward while streaming, back, jumps while scrubbing) revisit only the
    items the events in between touch: the picture equals a full pass over every item."""
    import random

    run = record(model("mlp_optimizer"), steps=2)
    scene = window.scene
    scene.set_run(run)
    scene.live = True
    scene.set_cursor(0)

    from graphview.qt.canvas import GraphScene

    reference = GraphScene()
    reference.set_run(run)

    def picture(of):
        nodes = {i: (it.isVisible(), it.state, it.kind, it.saved, it.grad) for i, it in of.node_items.items()}
        edges = [(e.edge.source, e.edge.target, e.isVisible(), e.freed) for e in of.edge_items]
        return nodes, edges

    def check(index):
        scene.set_cursor(index)
        reference._complete = False  # the reference always takes the full pass
        reference.set_cursor(index)
        assert picture(scene) == picture(reference), index

    for index in range(1, len(run.events), 3):
        check(index)
    scene.live = False  # a finished run, scrubbed both ways
    for index in range(len(run.events) - 1, 0, -5):
        check(index)
    rng = random.Random(0)
    for _ in range(60):
        check(rng.randrange(len(run.events)))


def test_inspector_draws_the_histogram_of_a_parameter(window, record):
    run = record(model("mlp_optimizer"))
    show(window, run)
    tid = next(t for t, info in run.tensors.items() if info.get("name") == "model.0.weight")
    node_id = next(n.id for n in run.tensor_nodes.values() if n.tid == tid)
    end = len(run.events) - 1
    window.set_cursor(end)
    window.scene.select_node(node_id)
    html_text = window.inspector.toHtml()
    assert "hist:value" in html_text and "hist:grad" in html_text
    counts = run.value_at(tid, end)["stats"]["hist"]
    image = window.inspector.loadResource(2, QUrl("hist:value"))
    assert image.width() > 100 and sum(counts) == 16 * 8
    # the tallest bar reaches the top of the plot area: its column is painted near the top
    tallest = counts.index(max(counts))
    bar_w = (image.width() - 2) / len(counts)
    x = int(1 + (tallest + 0.5) * bar_w)
    assert image.pixelColor(x, 4).name() == "#4c8bf5"


def test_inspector_says_when_a_node_is_running(window, record):
    run = record(lesson("chain_rule"))
    show(window, run)
    start = next(i for i, e in enumerate(run.events) if e["ev"] == "bw_node")
    vid = run.events[start]["vid"]
    done = next(i for i, e in enumerate(run.events) if e["ev"] == "bw_node_done" and e.get("vid") == vid)
    window.set_cursor(start)
    window.scene.select_node(f"op{vid}")
    assert "running now" in window.inspector.toPlainText()
    window.set_cursor(done)
    assert "running now" not in window.inspector.toPlainText()
    assert "executed 1×" in window.inspector.toPlainText()


def test_a_script_that_fails_before_any_op_says_so(window, record, write_script):
    run = record(write_script("import torch\nx = torch.ones(2\n"))
    show(window, run)
    assert run.failed and not window.scene.node_items
    assert window.bottom_tabs.currentWidget() is window.console
    assert "SyntaxError" in window.statusBar().message()
    assert "before autograd recorded anything" in window.view.message
    assert "SyntaxError" in window.view.message
    assert "The Console tab has the traceback" in window.view.message


def test_backward_on_a_tensor_without_grad_fn_marks_that_tensor(window, record):
    run = record(lesson("error_no_grad_fn"))
    show(window, run)
    index, error = run.errors[0]
    assert error["vid"] is None
    window.set_cursor(index)
    root = run.backwards[error["bid"]].roots_tensors[0]
    marked = [i for i in window.scene.node_items.values() if i.state == "error"]
    assert [i.node.ref for i in marked] == [root]
    window.set_cursor(index - 1)
    assert not any(i.state == "error" for i in window.scene.node_items.values())


@pytest.mark.parametrize("name", ["small_cnn", "transformer_block", "weight_sharing", "checkpointing"])
def test_boxes_of_unrelated_modules_do_not_overlap(window, record, name):
    """Every module call gets its own box (small_cnn calls self.pool twice), and the boxes of
    modules that are not nested never overlap."""
    run = record(model(name))
    show(window, run)
    window.scene.boxes.set_all(set())
    window.set_cursor(min(call.start for call in run.backwards.values()))
    boxes = [g for g in window.scene.groups.values() if g.isVisible()]
    assert boxes

    def related(a, b):
        return a == b or a.startswith(b + ".") or b.startswith(a + ".")

    clashes = [(a.path, b.path) for i, a in enumerate(boxes) for b in boxes[i + 1:]
               if (not related(a.path, b.path) or a.path == b.path) and a.rect.intersects(b.rect)]
    assert clashes == []
    if name == "small_cnn":
        assert sorted(g.path for g in boxes).count("pool") == 2


def test_stepping_keeps_the_current_node_in_view(window, record):
    run = record(model("transformer_block"))
    show(window, run)
    window.view.resetTransform()
    window.view.scale(0.9, 0.9)
    window.set_cursor(0)
    moves = 0
    while moves < 60 or window.scene.item_at_event(window.cursor) is None:
        window.move(timeline.step_forward)
        moves += 1
        assert moves < 2000
    item = window.scene.item_at_event(window.cursor)
    shown = window.view.mapToScene(window.view.viewport().rect()).boundingRect()
    assert shown.contains(item.sceneBoundingRect().center())


def test_a_module_that_only_wraps_another_draws_no_second_box(window, record):
    run = record(model("transformer_block"))
    show(window, run)
    window.scene.boxes.set_all(set())
    window.set_cursor(min(call.start for call in run.backwards.values()))
    boxes = [g for g in window.scene.groups.values() if g.isVisible()]
    paths = {g.path for g in boxes}
    # encoder and encoder.layers hold exactly the nodes of encoder.layers.0
    assert "encoder.layers.0" in paths and "encoder" not in paths and "encoder.layers" not in paths
    assert len({(g.rect.x(), g.rect.y(), g.members) for g in boxes}) == len(boxes)


def test_keys_go_to_the_focused_form_control_not_the_timeline(window, record, qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    run = record(lesson("chain_rule"))
    show(window, run)
    window.set_cursor(5)
    box = window.toggles.retain
    box.setFocus()
    qtbot.waitUntil(box.hasFocus)
    QTest.keyClick(box, Qt.Key_Space)
    assert box.isChecked() and window.cursor == 5  # ticked, and the timeline did not move
    window.view.setFocus()
    qtbot.waitUntil(window.view.hasFocus)
    QTest.keyClick(window.view, Qt.Key_Right)
    assert window.cursor > 5  # on the canvas, → steps


def test_fit_key_works_on_the_canvas(window, record, qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    run = record(model("transformer_block"))
    show(window, run)
    window.view.resetTransform()
    window.view.scale(1.2, 1.2)
    window.view.setFocus()
    qtbot.waitUntil(window.view.hasFocus)
    QTest.keyClick(window.view, Qt.Key_F)
    assert window.view.transform().m11() < 1.0


def test_a_trace_cannot_be_run_again_and_says_so(window, record):
    run = record(lesson("chain_rule"))
    window.begin_run(None, RunOptions(), run)  # as a trace opens: no script to run
    assert not window.toggles.isEnabled() and "open its script" in window.toggles.toolTip()
    window.begin_run(run.start["script"], RunOptions(), run)
    assert window.toggles.isEnabled()


def test_a_rerun_reports_per_step_changes_and_options_that_did_nothing(window, record):
    first = record(model("mlp_optimizer"))
    show(window, first)
    cut = record(model("mlp_optimizer"), grad_mode="no_grad")
    window.begin_run(first.start["script"], RunOptions(grad_mode="no_grad"), cut)
    message = window.statusBar().message()
    assert "autograd nodes per step" in message and "peak saved" in message
    assert "the loss has no grad_fn: the graph is cut at line 14" in message  # the cut, named
    nothing = record(model("mlp_optimizer"), detach_at=["nosuchmodule"])
    window.begin_run(first.start["script"], RunOptions(detach_at=["nosuchmodule"]), nothing)
    assert "detach at 'nosuchmodule' matched nothing" in window.statusBar().message()


def test_a_selection_outlives_a_cursor_where_its_node_is_not_shown(window, record):
    """Select a weight, go back to the start (where it is not recorded yet): the Inspector keeps it
    and says why it is not drawn; go forward again and it is selected again (it was dropped, and
    the Inspector showed its placeholder)."""
    run = record(model("mlp_optimizer"))
    window.begin_run(run.start["script"], RunOptions(), run)
    later = window.overview_index()
    window.set_cursor(later)
    node_id = next(i for i, item in window.scene.node_items.items() if item.node.title == "model.2.weight")
    window.scene.select_node(node_id)
    assert window.inspector.toPlainText().startswith("model.2.weight")
    window.set_cursor(0)
    text = window.inspector.toPlainText()
    assert text.startswith("model.2.weight") and "not recorded yet" in text
    window.set_cursor(later)
    assert [i.node.id for i in window.scene.selectedItems()] == [node_id]
    assert "not recorded yet" not in window.inspector.toPlainText()
    window.scene.clearSelection()  # a click on empty canvas: the Inspector follows the cursor again
    assert window.inspector.toPlainText().startswith("loss")  # (the tensor the backward at the cursor starts from)


def test_a_freed_batch_goes_and_a_freed_result_fades_as_the_cursor_steps(window, record, write_script):
    """Stepping through a plain loop: the first batch's node goes once torch freed it and the ops
    it fed are gone (the window revisits only what the events stepped over touch), and after backward a result
    that torch freed (the ReLU's, inside the model's forward) is drawn freed, not as solid as
    the loss the script still holds."""
    run = record(write_script(
        "import torch\n"
        "model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for i in range(2):\n"
        "    images = torch.randn(2, 3)\n"
        "    opt.zero_grad()\n"
        "    loss = model(images).sum()\n"
        "    loss.backward()\n"
        "    opt.step()\n"))
    show(window, run)
    first = min((n for n in window.scene.drawing.nodes.values() if n.title == "images"), key=lambda n: n.born)
    freed = window.scene.drawing.dead_index(first)  # freed by torch, and the ops it fed gone
    assert freed >= run.tensor_dead[first.ref]
    window.set_cursor(freed - 1)
    assert window.scene.shown_at_cursor(first.id)
    for index in range(freed - 1, freed + 1):  # one event at a time, as Step does
        window.set_cursor(index + 1)
    assert not window.scene.shown_at_cursor(first.id)
    after_backward = next(i for i, e in enumerate(run.events) if e["ev"] == "backward_end")
    window.set_cursor(after_backward)
    drawing = window.scene.drawing
    relu = next(n for n in drawing.nodes.values() if n.title == "output of relu" and drawing.visible(n, after_backward))
    loss = next(n for n in drawing.nodes.values() if n.title == "loss" and drawing.visible(n, after_backward))
    assert drawing.tensor_state(relu, after_backward) == "freed"
    assert drawing.tensor_state(loss, after_backward) == "live"
    window.scene.boxes.set_all(set())
    window.set_cursor(after_backward)
    assert window.scene.node_items[relu.id].state == "freed"


def test_the_inspector_says_which_other_node_saves_the_same_memory(window, record, write_script):
    """A max-pool saves the ReLU's result, which the ReLU saves too: one storage (the memory chart
    counts it once) on two cards. The Inspector of each says the other holds the same memory."""
    run = record(write_script(
        "import torch\n"
        "x = torch.randn(1, 2, 4, 4, requires_grad=True)\n"
        "h = torch.relu(x * 2)\n"
        "loss = torch.nn.functional.max_pool2d(h, 2).sum()\n"
        "loss.backward()\n"))
    show(window, run)
    at = next(i for i, e in enumerate(run.events) if e["ev"] == "backward_start")
    pool = next(o for o in run.op_nodes.values() if o.name.startswith("MaxPool2DWithIndicesBackward"))
    relu = next(o for o in run.op_nodes.values() if o.name.startswith("ReluBackward"))
    mul = next(o for o in run.op_nodes.values() if o.name.startswith("MulBackward"))
    said = {}
    for op in (pool, relu, mul):
        window.inspector.show_node(run, op.id, at)
        said[op.name] = window.inspector.toPlainText()
    assert f"the same memory {relu.name} saves" in said[pool.name]
    assert f"the same memory {pool.name} saves" in said[relu.name]
    assert "the same memory" not in said[mul.name]


def test_a_window_that_showed_runs_is_destroyed_cleanly(qtbot, record):
    """Deleting a window whose memory chart had drawn runs crashed the process one time in two
    (pyqtgraph's items destroyed with their scene): the chart is taken apart first."""
    import gc

    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    from graphview.core.options import RunOptions
    from graphview.qt.main_window import MainWindow

    run = record(lesson("chain_rule"))
    for _ in range(4):
        window = MainWindow(samples=[])
        window.show()
        for _ in range(3):
            window.begin_run(run.start["script"], RunOptions(), run)
            window.set_cursor(len(run.events) - 1)
        QApplication.processEvents()
        assert window.memory.scene().items()
        destroyed = []
        window.memory.destroyed.connect(lambda *_: destroyed.append(True))
        window.close()
        window.deleteLater()
        QApplication.sendPostedEvents(None, QEvent.DeferredDelete)
        gc.collect()
        assert destroyed == [True]  # with its window, not left behind
