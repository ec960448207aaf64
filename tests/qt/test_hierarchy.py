"""Big graphs open with their module hierarchy shut down to what reads at fit; boxes open and
shut with the graph laid out again; a shut box shows what runs inside it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QFont, QFontMetricsF

from graphview.core.held import held_by_nodes
from graphview.core.hierarchy import Layout, collapsed_at_level
from graphview.qt.canvas import GraphScene, GraphView
from tests.conftest import model, zoo


@pytest.fixture
def canvas(qtbot):
    scene = GraphScene()
    view = GraphView(scene)
    qtbot.addWidget(view)
    view.resize(1100, 900)  # the canvas of a 1600x1000 window
    view.show()
    return scene, view


def _open(canvas, run, index=None):
    scene, view = canvas
    scene.set_run(run)
    scene.set_cursor(len(run.events) - 1 if index is None else index)
    view.fit_readable()
    return scene, view


def _before_backward(run):
    return min(call.start for call in run.backwards.values())


def test_a_big_model_opens_shut_to_the_deepest_level_that_reads(canvas, record):
    run = record(model("transformer_block"), steps=1)
    scene, view = _open(canvas, run, _before_backward(run))
    boxes = scene.boxes.boxes
    assert scene.collapsed, "a 200-node graph does not read at fit: its boxes start shut"
    levels = [level for level in range(max(b.level for b in boxes) + 1)
              if scene.collapsed == collapsed_at_level(boxes, level)]
    assert levels, "the shut boxes are one level of the hierarchy"
    level = levels[0]
    assert view.fits_readable(*scene.boxes.layout.size())
    if level < max(b.level for b in boxes):  # one level deeper would not read
        from graphview.core.hierarchy import Layout
        deeper = Layout(scene.drawing, boxes, collapsed_at_level(boxes, level + 1))
        assert not view.fits_readable(*deeper.size())
    # at fit, node names are at least 9 px high on screen
    view.fit()
    title = QFont("DejaVu Sans", 9)
    title.setBold(True)
    pixels = QFontMetricsF(title).capHeight() / 0.72 * view.transform().m11()  # cap height ~ 0.72 em
    assert view.transform().m11() >= view.readable_scale() and pixels >= 9
    # every shut box is labelled with its path and type, and shows what is inside
    shut = [g for g in scene.groups.values() if g.isVisible() and g.collapsed]
    assert shut
    for group in shut:
        assert group.box.type and group.ops > 0
        assert group.ops == sum(1 for m in group.box.members
                                if scene.shown_at_cursor(m) and scene.drawing.nodes[m].kind == "op")
    layer = scene.groups.get("encoder.layers.0")
    if layer is not None and layer.collapsed:
        vids = {scene.drawing.nodes[m].ref for m in layer.box.members
                if scene.drawing.nodes[m].kind in ("op", "accumulate")}
        assert layer.saved == held_by_nodes(run, vids, scene.cursor).total > 0


def test_a_small_graph_opens_with_every_box_open(canvas, record):
    run = record(model("mlp_optimizer"), steps=1)
    scene, view = canvas
    view.resize(1800, 1400)
    _open(canvas, run, _before_backward(run))
    assert scene.collapsed == set()


def _shut_all(scene):
    scene.boxes.set_all(collapsed_at_level(scene.boxes.boxes, 0))


def test_a_shut_box_lights_up_while_a_node_inside_runs(canvas, record):
    run = record(model("transformer_block"), steps=1)
    scene, view = _open(canvas, run, _before_backward(run))
    _shut_all(scene)
    layer = scene.boxes.keyed["encoder.layers.0"]
    vids = {scene.drawing.nodes[m].ref for m in layer.members if scene.drawing.nodes[m].kind == "op"}
    running = next(i for i, e in enumerate(run.events) if e["ev"] == "bw_node" and e.get("vid") in vids)
    scene.set_cursor(running)
    group = scene.groups["encoder.layers.0"]
    assert group.collapsed and group.running
    assert scene.item_at_event(running) is group  # stepping follows the box that holds the node
    scene.set_cursor(running - 1 if run.events[running - 1].get("vid") not in vids else _before_backward(run))
    assert not scene.groups["encoder.layers.0"].running


def test_opening_a_box_lays_out_again_and_keeps_the_picture_in_place(canvas, record, qtbot):
    run = record(model("transformer_block"), steps=1)
    scene, view = _open(canvas, run, _before_backward(run))
    _shut_all(scene)
    view.fit()
    group = scene.groups["encoder.layers.0"]
    above = scene.node_items[next(i for i in scene.node_items if scene.node_items[i].isVisible()
                                  and scene.node_items[i].node.title == "tokens")]
    on_screen = view.mapFromScene(above.pos())
    head = scene.groups["head"]
    head_before = head.rect.top()
    group.sigToggled.emit(group.key)  # what a double-click does
    assert "encoder.layers.0" not in scene.collapsed
    assert scene.boxes.gliding  # nodes glide to their places
    qtbot.waitUntil(lambda: not scene.boxes.gliding, timeout=15000)
    assert (view.mapFromScene(above.pos()) - on_screen).manhattanLength() <= 2
    assert head.rect.top() > head_before  # what came after moved down to make room
    # its children are shut: one level opened, not all of them
    assert "encoder.layers.0.self_attn" in scene.collapsed
    assert scene.groups["encoder.layers.0.self_attn"].isVisible()
    group.sigToggled.emit(group.key)
    qtbot.waitUntil(lambda: not scene.boxes.gliding, timeout=15000)
    assert head.rect.top() == head_before


def test_a_search_hit_inside_a_shut_box_opens_it(canvas, record):
    run = record(model("transformer_block"), steps=1)
    scene, view = _open(canvas, run, _before_backward(run))
    _shut_all(scene)
    hit = next(i for i in scene.node_items.values() if i.node.title == "encoder.layers.0.linear1.weight")
    assert not hit.isVisible()
    view.center_on_node(hit.node.id)
    assert hit.isVisible()
    assert "encoder.layers.0" not in scene.collapsed and "encoder.layers.0.linear1" not in scene.collapsed
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert shown.contains(hit.pos() + QPointF(0, 0))


def test_the_view_menu_opens_and_shuts_a_level_at_a_time(canvas, record):
    run = record(model("transformer_block"), steps=1)
    scene, view = _open(canvas, run, _before_backward(run))
    boxes = scene.boxes.boxes
    view.change_level(None)
    assert scene.collapsed == set()
    view.change_level(-1)
    deepest = max(b.level for b in boxes)
    assert scene.collapsed == collapsed_at_level(boxes, deepest)
    for _ in range(deepest + 2):
        view.change_level(-1)
    assert scene.collapsed == collapsed_at_level(boxes, 0)
    view.change_level(1)
    assert scene.collapsed == collapsed_at_level(boxes, 1)
    shown = {g.key for g in scene.groups.values() if g.isVisible() and g.collapsed}
    assert "encoder.layers.0.self_attn" in shown and "encoder.layers.0" not in scene.collapsed


def test_a_small_model_opens_with_every_node_though_it_does_not_fit(canvas, record):
    """A model whose step draws few nodes (mlp_optimizer: 17) opens with its module boxes open even
    in a canvas too small to show it whole at a readable zoom: its AddmmBackward0 and AccumulateGrad
    are what a learner opened it to see; it reads by scrolling."""
    scene, view = canvas
    view.resize(500, 300)
    run = record(model("mlp_optimizer"), steps=3)
    scene.set_run(run)
    scene.set_cursor(len(run.events) - 1)
    assert not view.readable_fit()(*Layout(scene.drawing, scene.boxes.boxes, set()).size())  # too big to read at fit
    assert not scene.boxes.open_to_fit(view.readable_fit()) and not scene.collapsed


def test_a_shut_box_shows_once_its_module_has_run(canvas, record):
    """Mid-forward, the shut box of a module that has not run yet is not drawn (its parameters exist
    since the step began, but a card "0 ops" where the graph is still to grow confused a new user),
    nor its parameters; from its first op on it is."""
    scene, view = canvas
    run = record(model("transformer_block"), steps=1)
    scene.set_run(run)
    scene.set_cursor(len(run.events) - 1)
    scene.boxes.set_all(collapsed_at_level(scene.boxes.boxes, 0))
    head = scene.boxes.keyed["head"]
    nodes = scene.drawing.nodes
    first = min(nodes[m].born for m in head.members if nodes[m].kind == "op")
    params = [m for m in head.members if nodes[m].kind == "param"]
    scene.set_cursor(first - 1)
    assert params and all(m in scene.at_cursor.visible for m in params)  # the weights exist ...
    assert not scene.groups["head"].isVisible()  # ... but the module has not run: nothing of it shows
    assert not any(scene.node_items[m].isVisible() for m in params if m in scene.node_items)
    assert not any(e.isVisible() for e in scene.edge_items if e.source.node.id in head.members
                   or e.target.node.id in head.members)
    scene.set_cursor(first)
    assert scene.groups["head"].isVisible() and scene.groups["head"].collapsed


def test_nested_boxes_starting_on_one_row_keep_both_names_readable(canvas, record):
    """``model · Sequential`` and ``model.0 · Linear`` begin on the same row: the inner name sits
    under the outer one, inside its own box, on no node (right of it, 6 units apart and 5 lower,
    the two read as one line: "model · Sequential model.0 · Linear"), and the inner box's outline
    breaks where it would cross the outer name."""
    run = record(model("mlp_optimizer"), steps=1)
    scene, view = _open(canvas, run, _before_backward(run))
    open_groups = {g.path: g for g in scene.groups.values() if g.isVisible() and not g.collapsed}
    outer, inner = open_groups["model"], open_groups["model.0"]
    assert abs(inner.rect.top() - outer.rect.top()) < inner.LABEL_H, "the two boxes start on one row"
    name, under = outer.label_rect(), inner.label_rect()
    assert under.top() >= name.bottom() + 1 and under.left() == inner.rect.left() + 10  # a line of its own
    assert under.width() == inner.label_width() + 10  # whole
    assert inner.rect.top() < under.top() and under.bottom() < inner.rect.bottom()  # inside its box
    assert not any(item.sceneBoundingRect().intersects(under) for item in scene.node_items.values()
                   if item.isVisible())  # on no node nor its badges
    assert outer.label_rect().intersects(inner.rect.adjusted(-1, -1, 1, 1)), "the outer name lies on the inner outline"
    assert inner.spared == (outer.label_rect(),), "...which breaks for it"
    assert outer.spared == ()


def test_a_tied_lm_head_shows_one_box_at_every_point_of_a_two_step_run(canvas, record, write_script):
    """GPT-2 of twelve (tiny) layers, its lm_head reading the embedding's weight: the canvas showed
    two lm_head boxes, "Linear · 3 ops" and "Linear · 1 op" (the tied ``weight.t()``, drawn in the
    last MLP's rows). Wherever the cursor is, lm_head is one box, shut with its four ops."""
    pytest.importorskip("transformers")
    from tests.conftest import tiny_gpt2

    run = record(write_script(tiny_gpt2(12)), steps=2)
    scene, view = canvas
    scene.set_run(run)
    exits = [i for i, e in enumerate(run.events) if e["ev"] == "module_exit" and e.get("path") == "lm_head"]
    backwards = sorted(call.start for call in run.backwards.values())
    assert len(exits) == len(backwards) == 2
    scene.set_cursor(len(run.events) - 1)
    scene.boxes.set_all(collapsed_at_level(scene.boxes.boxes, 0))  # every box shut, as a big model opens
    for index in exits + backwards:
        scene.set_cursor(index)
        heads = [g for g in scene.groups.values() if g.path == "lm_head" and g.isVisible()]
        assert [(g.collapsed, g.ops) for g in heads] == [(True, 4)], (index, [(g.key, g.ops) for g in heads])
        assert heads[0].summary().startswith("4 ops")
    scene.set_cursor(len(run.events) - 1)  # the run's end: the second step's graph freed
    assert len([g for g in scene.groups.values() if g.path == "lm_head" and g.isVisible()]) <= 1


def test_repeated_blocks_shut_read_as_one_stack_with_a_bar_per_block(canvas, record):
    """GPT-2's blocks under ``transformer.h`` (a ModuleList, which never runs) read as one card,
    ``transformer.h.0-2 · GPT2Block ×3``, with a bar per block: its activations at the cursor."""
    from graphview.core.hierarchy import blocks_held
    from graphview.qt.canvas.groups import BARS_H, SHUT_H

    run = record(zoo("gpt2_lm"), steps=1)
    at = _before_backward(run)
    scene, view = _open(canvas, run, at)
    stack = scene.boxes.keyed["transformer.h"]
    scene.boxes.set_all({"transformer.h"})
    scene.set_cursor(at)
    group = scene.groups["transformer.h"]
    assert group.collapsed and group.isVisible()
    assert stack.label == "transformer.h.0-1 · GPT2Block ×2"
    assert group.rect.height() == SHUT_H + BARS_H
    expected = tuple((block.title, ops, held.activations)
                     for block, ops, held in blocks_held(scene.drawing, stack, scene.boxes.keyed, at))
    assert group.blocks == expected and [title for title, _, _ in expected] == ["transformer.h.0", "transformer.h.1"]
    assert all(activations > 0 for _, _, activations in group.blocks)
    assert "transformer.h.1: " in group.toolTip() and "GPT2Block ×2" in group.toolTip()
    # once backward has freed what they saved, the bars say so
    scene.set_cursor(len(run.events) - 1)
    assert all(activations == 0 for _, _, activations in scene.groups["transformer.h"].blocks)


def test_children_of_different_kinds_are_not_a_stack(record):
    from graphview.core.drawing import Drawing
    from graphview.core.hierarchy import module_boxes

    drawing = Drawing(record(model("transformer_block"), steps=1))
    drawing.update(final=True)
    assert all(box.repeats is None for box in module_boxes(drawing))  # one layer; attention beside linears


def test_a_thin_stack_of_blocks_opens_one_block_at_a_time(canvas, record, write_script):
    """Opened, GPT-2's four blocks show block 0 and one card ``transformer.h.1-3 · GPT2Block ×3``
    with a bar per block; double-clicking that card shows its first block apart (block 1), the
    rest a thinner stack; a search hit inside a thin stack brings its block apart and opens it."""
    from tests.conftest import tiny_gpt2

    pytest.importorskip("transformers")
    run = record(write_script(tiny_gpt2(4)), steps=1)
    at = _before_backward(run)
    scene, view = _open(canvas, run, at)
    boxes = scene.boxes
    stack = boxes.keyed["transformer.h"]
    boxes.set_all(collapsed_at_level(boxes.boxes, stack.level + 1))
    scene.set_cursor(at)

    def shown():
        return sorted(g.key for g in scene.groups.values()
                      if g.isVisible() and g.collapsed and g.key.startswith("transformer.h") and "." not in g.key[14:])

    assert shown() == ["transformer.h.0", "transformer.h/1-3"]
    thin = scene.groups["transformer.h/1-3"]
    assert thin.box.label == "transformer.h.1-3 · GPT2Block ×3"
    assert [title for title, _, _ in thin.blocks] == ["transformer.h.1", "transformer.h.2", "transformer.h.3"]
    assert all(activations > 0 for _, _, activations in thin.blocks)
    boxes.toggle("transformer.h/1-3")
    assert shown() == ["transformer.h.0", "transformer.h.1", "transformer.h/2-3"]
    assert not scene.groups["transformer.h/1-3"].isVisible()
    inside = next(m for m in boxes.keyed["transformer.h.3"].members if scene.drawing.nodes[m].kind == "op")
    assert boxes.reveal([inside])
    assert boxes.layout.position(inside) is not None and "transformer.h.3" not in boxes.collapsed


@pytest.mark.parametrize("reentrant", [False, True])
def test_a_shut_box_the_script_checkpoints_shows_what_torch_keeps_for_it(canvas, record, write_script, monkeypatch,
                                                                        reentrant):
    """``checkpoint(model[2], h)`` in the script: model.2's shut card (what the window, a picture
    of it and the card's tooltip show) holds, when the step's backward starts, the input torch
    keeps for the checkpoint, in both modes. With ``use_reentrant=False`` it showed 0 B: torch
    keeps the input beside the graph, in no autograd node of the box."""
    from tests.capture.test_memory_answers import BLOCK_STARTS, SCRIPT_CHECKPOINT, kept_by_the_scripts_checkpoint

    path = write_script(f"REENTRANT = {reentrant}\n" + SCRIPT_CHECKPOINT.replace("FIRST", BLOCK_STARTS["linear"]))
    run = record(path, steps=1)
    start = run.steps[0]["start"]
    at = min(call.start for call in run.backwards.values() if call.start > start)
    scene, view = _open(canvas, run, at)
    [box] = [b for b in scene.boxes.boxes if b.path == "model.2"
             and any(scene.drawing.nodes[m].born >= start for m in b.members)]
    scene.boxes.set_all({box.key})
    scene.set_cursor(at)
    group = scene.groups[box.key]
    assert group.collapsed and group.isVisible()
    kept = kept_by_the_scripts_checkpoint(path, monkeypatch)
    assert group.held.activations == kept == 1024
    assert "holds 1.00 KiB of activations for backward" in group.toolTip()
