"""The module hierarchy: one box per module call, layouts with boxes shut, the level that fits."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest

from graphview.core.drawing import Drawing
from graphview.core.hierarchy import (Layout, ModuleBox, box_lifetimes, collapsed_at_level, levels_that_fit,
                                      module_boxes)
from tests.conftest import model, zoo


def _drawing(record, name: str, **options) -> Drawing:
    drawing = Drawing(record(model(name), **options))
    drawing.update(final=True)
    return drawing


def test_boxes_a_checkpoint_recomputes_in_backward_say_so(record):
    drawing = _drawing(record, "transformer_block", steps=1, checkpoint=["encoder.layers.*"])
    boxes = {box.key: box for box in module_boxes(drawing)}
    recomputed = [box for key, box in boxes.items() if key.startswith("checkpoint recompute.")]
    assert recomputed and all(box.parent is not None for box in recomputed)
    labels = {box.label for box in recomputed}
    assert "encoder.layers.0.self_attn (recomputed) · MultiheadAttention" in labels
    assert any(label.startswith("encoder.layers.0 (recomputed)") for label in labels)
    assert not any("checkpoint recompute." in label for label in labels)


def test_boxes_name_their_path_and_type_and_hold_their_parameters(record):
    drawing = _drawing(record, "transformer_block", steps=1)
    boxes = {box.key: box for box in module_boxes(drawing)}
    layer = boxes["encoder.layers.0"]
    assert layer.label == "encoder.layers.0 · TransformerEncoderLayer"
    assert boxes["encoder.layers.0.self_attn"].type == "MultiheadAttention"
    assert boxes["encoder.layers.0.self_attn"].parent == "encoder.layers.0"
    assert boxes["encoder.layers.0.self_attn"].level == layer.level + 1
    # encoder and encoder.layers hold exactly the nodes of encoder.layers.0: no box of their own
    assert "encoder" not in boxes and "encoder.layers" not in boxes
    names = {drawing.nodes[m].title for m in layer.members if drawing.nodes[m].kind == "param"}
    assert "encoder.layers.0.linear1.weight" in names
    # every node of the module is inside its box, and nothing else is
    module_nodes = {n.id for n in drawing.nodes.values() if n.placed and (n.module or "").startswith("encoder.layers.0")}
    assert layer.members == module_nodes


def test_a_module_called_twice_gets_a_box_per_call(record):
    drawing = _drawing(record, "small_cnn", steps=1)
    keys = [box.key for box in module_boxes(drawing)]
    assert "pool" in keys and "pool#2" in keys


@pytest.mark.parametrize("name", ["transformer_block", "small_cnn", "mlp_optimizer"])
def test_a_shut_box_takes_one_cell_and_the_rest_keeps_its_order(record, name):
    drawing = _drawing(record, name, steps=1)
    boxes = module_boxes(drawing)
    assert Layout(drawing, boxes, set()).cells == {n.id: (n.layer, n.slot) for n in drawing.nodes.values() if n.placed}
    for box in boxes:
        layout = Layout(drawing, boxes, {box.key})
        assert set(layout.hidden_by) == box.members and box.key in layout.cells
        assert len(set(layout.cells.values())) == len(layout.cells)  # no two units share a cell
        outside = [n for n in drawing.nodes.values() if n.placed and n.id not in box.members]
        for a in outside:
            for b in outside:
                if a.layer < b.layer:  # above stays above, left stays left
                    assert layout.cells[a.id][0] < layout.cells[b.id][0]
                if a.layer == b.layer and a.slot < b.slot:
                    assert layout.cells[a.id][1] < layout.cells[b.id][1]
        full_rows, _ = Layout(drawing, boxes, set()).size()
        rows, _ = layout.size()
        assert rows <= full_rows


def test_shutting_every_layer_of_the_transformer_makes_it_short(record):
    drawing = _drawing(record, "transformer_block", steps=1)
    boxes = module_boxes(drawing)
    full, _ = Layout(drawing, boxes, set()).size()
    shut, columns = Layout(drawing, boxes, collapsed_at_level(boxes, 0)).size()
    assert full > 40 and shut <= 12 and columns <= 4


def test_the_level_that_fits_is_the_deepest_that_fits(record):
    drawing = _drawing(record, "transformer_block", steps=1)
    boxes = module_boxes(drawing)
    sizes = {level: Layout(drawing, boxes, collapsed_at_level(boxes, level)).size()
             for level in range(0, max(b.level for b in boxes) + 1)}
    assert levels_that_fit(drawing, boxes, lambda rows, cols: True) == set()  # it all fits: nothing shut
    assert levels_that_fit(drawing, boxes, lambda rows, cols: False) == collapsed_at_level(boxes, 0)
    # room for level 1 (the layer open, its parts shut) but not for every box open
    room = sizes[1][0]
    assert max(sizes) == 1 and Layout(drawing, boxes, set()).size()[0] > room
    chosen = levels_that_fit(drawing, boxes, lambda rows, cols: rows <= room)
    assert chosen == collapsed_at_level(boxes, 1)
    assert "encoder.layers.0" not in chosen and "encoder.layers.0.self_attn" in chosen


def test_a_layout_of_kept_nodes_drops_the_rows_and_columns_of_the_rest_and_keeps_their_order(record):
    """The leaves a run leaves at its end (parameters, inputs), and a shut box holding some of them."""
    drawing = _drawing(record, "mlp_optimizer", steps=1)
    boxes = module_boxes(drawing)
    keep = frozenset(n.id for n in drawing.nodes.values() if n.placed and n.kind in ("param", "input"))
    assert len(keep) >= 5
    layout = Layout(drawing, boxes, set(), keep=keep)
    assert set(layout.cells) == keep
    nodes = [drawing.nodes[n] for n in keep]
    rows = sorted({r for r, _ in layout.cells.values()})
    assert rows == list(range(rows[0], rows[0] + len({n.layer for n in nodes})))  # no row left empty
    assert rows[-1] - rows[0] < max(n.layer for n in nodes) - min(n.layer for n in nodes)
    for a, b in combinations(nodes, 2):  # above stays above, left stays left
        assert (a.layer < b.layer) == (layout.cells[a.id][0] < layout.cells[b.id][0])
        if a.layer == b.layer:
            assert (a.slot < b.slot) == (layout.cells[a.id][1] < layout.cells[b.id][1])
    shut = next(box for box in boxes if not keep.isdisjoint(box.members) and not keep >= box.members)
    with_shut = Layout(drawing, boxes, {shut.key}, keep=keep)
    assert shut.key in with_shut.cells and not (set(with_shut.cells) & shut.members)
    assert Layout(drawing, boxes, set(), keep=frozenset()).cells == {}


def test_nodes_by_square_are_where_the_layout_puts_them(record):
    drawing = _drawing(record, "transformer_block", steps=1)
    boxes = module_boxes(drawing)
    layout = Layout(drawing, boxes, collapsed_at_level(boxes, 1))
    ids = [n.id for n in drawing.nodes.values() if n.placed]
    side = 500.0
    squares = layout.by_square(ids, side)
    # every placed node once, in its unit's square (a node in a shut box: the box's place), in order
    assert sorted(n for square in squares.values() for n in square) == sorted(ids)
    for (gx, gy), square in squares.items():
        for node_id in square:
            x, y = layout.position(layout.hidden_by.get(node_id, node_id))
            assert (int(x // side), int(y // side)) == (gx, gy)
        assert square == [n for n in ids if n in set(square)]
    assert any(len({layout.hidden_by.get(n, n) for n in square}) < len(square) for square in squares.values())
    # worked out ahead (on a thread): handed to the first asker of as many ids, then worked out anew
    layout.work_out_squares(ids, side)
    ahead = layout.by_square(ids, side)
    assert ahead == squares
    assert layout.by_square(ids, side) is not ahead and layout.by_square(ids[:10], side) != squares


def test_a_box_lives_from_its_first_node_to_the_end_of_its_last(record):
    drawing = _drawing(record, "mlp_optimizer", steps=2)
    boxes = module_boxes(drawing)
    spans = box_lifetimes(drawing, boxes)
    assert set(spans) == {box.key for box in boxes}
    ended = 0
    for box in boxes:
        members = [drawing.nodes[m] for m in box.members]
        deaths = [drawing.dead_index(n) for n in members]
        end = max(deaths) if None not in deaths else None
        assert spans[box.key] == (min(n.born for n in members), end)
        ended += end is not None
    assert ended  # backward freed the graph of a layer whose parameters it does not hold: its box ends


def test_path_clear_follows_the_layout(record):
    drawing = _drawing(record, "transformer_block", steps=1)
    boxes = module_boxes(drawing)
    layout = Layout(drawing, boxes, collapsed_at_level(boxes, 0))
    units = list(layout.cells)
    # two units in one column with nothing between them: clear
    for a in units:
        for b in units:
            ra, ca = layout.cells[a]
            rb, cb = layout.cells[b]
            if ca == cb and rb == ra + 1:
                assert layout.path_clear(a, b, 90)
            if ca == cb and rb > ra + 1 and any(layout.cells[u] == (r, ca) for u in units for r in range(ra + 1, rb)):
                assert not layout.path_clear(a, b, 90)


def test_a_box_that_repeats_its_child_is_the_module_that_ran_not_its_module_list(record, write_script):
    """BERT's BertEncoder holds its layers in a ModuleList, ``encoder.layer``, which never runs:
    the two boxes hold the same nodes and one stands for both. It was the ModuleList (the deeper),
    labelled "encoder.layer · module"; it is the encoder, "encoder · Encoder"."""
    from graphview.core.hierarchy import module_boxes

    run = record(write_script(
        "import torch\n"
        "from torch import nn\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.layer = nn.ModuleList([nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(2)])\n"
        "    def forward(self, x):\n"
        "        for layer in self.layer:\n"
        "            x = layer(x)\n"
        "        return x\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.encoder = Encoder()\n"
        "        self.head = nn.Linear(4, 1)\n"
        "    def forward(self, x):\n"
        "        return self.head(self.encoder(x))\n"
        "model = Model()\n"
        "model(torch.randn(3, 4)).sum().backward()\n"))
    drawing = Drawing(run)
    drawing.update(final=True)
    top = {box.path: box.type for box in module_boxes(drawing) if box.level == 0}
    assert top == {"encoder": "Encoder", "head": "Linear"}
    assert {box.path for box in module_boxes(drawing)} >= {"encoder.layer.0", "encoder.layer.1"}


def _covered(drawing: Drawing) -> list[tuple[str, str]]:
    """(box, node) pairs where an open box, drawn around its members shown at some point of the
    run, encloses a shown node of another module (sampled at 60 points of the run)."""
    boxes = module_boxes(drawing)
    placed = [n for n in drawing.nodes.values() if n.placed]
    total = len(drawing.run.events)
    found = set()
    for index in range(0, total, max(1, total // 60)):
        shown = [n for n in placed if drawing.visible(n, index)]
        for box in boxes:
            members = [n for n in shown if n.id in box.members]
            if len(members) < 2:
                continue
            rows = min(n.layer for n in members), max(n.layer for n in members)
            slots = min(n.slot for n in members), max(n.slot for n in members)
            found.update((box.key, n.id) for n in shown if n.id not in box.members
                         and rows[0] <= n.layer <= rows[1] and slots[0] <= n.slot <= slots[1])
    return sorted(found)


@pytest.mark.parametrize("script", ["transformer_block", "weight_sharing", "teacher_student_detach",
                                    "zoo:vit_classifier", "zoo:custom_function", "zoo:resnet_classifier",
                                    "zoo:bert_mlm"])
def test_a_module_box_encloses_no_op_or_result_of_another_module(record, script):
    """A transformer layer's residual add went in the rows of its LayerNorm's weights and was drawn
    inside the LayerNorm's box; a custom Function applied between two layers, inside the model's;
    the teacher's box, around its weights once its graph was freed, around the student's graph (and
    the teacher's detached output, above the loss in a row of the student's prediction, in its box);
    BERT's ids and a ResNet's images, drawn above their first user, inside the box around the
    weights above it."""
    if script.startswith("zoo:"):
        pytest.importorskip("transformers")
        path = zoo(script[4:])
    else:
        path = model(script)
    drawing = Drawing(record(path, steps=2))
    drawing.update(final=True)
    assert module_boxes(drawing)
    assert _covered(drawing) == []


def test_what_a_constructor_computes_without_grad_is_one_shut_box(record):
    """Whisper's sinusoidal positions (arange, mul, exp, sin, cos, cat, copied into the encoder's
    position weight) are made before the step: one box, shut even when everything else fits."""
    from graphview.core.hierarchy import setup_end

    run = record(zoo("whisper_asr"), steps=1)
    drawing = Drawing(run)
    drawing.update(final=True)
    boxes = module_boxes(drawing)
    setup = [box for box in boxes if box.setup]
    assert len(setup) == 1
    box = setup[0]
    titles = {drawing.nodes[m].title for m in box.members}
    assert {"output of sin", "output of cos", "output of cat", "model.encoder.embed_positions.weight"} <= titles
    assert all(drawing.nodes[m].born < setup_end(run) for m in box.members)
    assert box.label == "made before the step · buffers, without grad" and box.parent is None
    assert levels_that_fit(drawing, boxes, lambda rows, columns: True) == {box.key}
    shut = Layout(drawing, boxes, {box.key})
    assert len(shut.cells) == len(Layout(drawing, boxes, set()).cells) - len(box.members) + 1  # one card
    assert all(member in shut.hidden_by for member in box.members)
    # ... and [ / ] still count levels from the model's boxes
    assert box.key in collapsed_at_level(boxes, 3) and box.key in collapsed_at_level(boxes, 0)


def test_a_model_without_such_a_chain_has_no_setup_box(record):
    drawing = _drawing(record, "transformer_block", steps=1)
    assert not any(box.setup for box in module_boxes(drawing))


ZOO_SCRIPTS = sorted(path.stem for path in Path(zoo("gpt2_lm")).parent.glob("*.py"))


def _shown_boxes(layout: Layout, boxes: list[ModuleBox]) -> dict[str, tuple[int, int, int, int]]:
    """Each box drawn in ``layout``: the columns and rows (left, top, right, bottom) of what it is
    drawn around (a shut box: its one cell); boxes inside a shut one are not drawn."""
    shown = {}
    for box in boxes:
        if box.key in layout.collapsed:
            row, column = layout.cells[box.key]
            shown[box.key] = (column, row, column, row)
        elif not all(member in layout.hidden_by for member in box.members):
            cells = [layout.cells[unit] for unit in {layout.hidden_by.get(m, m) for m in box.members}]
            rows, columns = [r for r, _ in cells], [c for _, c in cells]
            shown[box.key] = (min(columns), min(rows), max(columns), max(rows))
    return shown


@pytest.mark.parametrize("script", ZOO_SCRIPTS)
def test_module_boxes_never_overlap_unless_one_holds_the_other(record, script):
    """Every zoo model at every level ] opens (and with every box open): two boxes drawn at once
    either nest or are apart. Branches drawn side by side (Whisper's decoder beside its encoder)
    share rows, so this is no longer true by rows alone."""
    pytest.importorskip("transformers")
    drawing = Drawing(record(zoo(script), steps=1))
    drawing.update(final=True)
    boxes = module_boxes(drawing)
    keyed = {box.key: box for box in boxes}

    def holds(outer: ModuleBox, inner: ModuleBox) -> bool:
        parent = inner.parent
        while parent is not None:
            if parent == outer.key:
                return True
            parent = keyed[parent].parent
        return False

    deepest = max((box.level for box in boxes), default=0) + 1
    for level in range(deepest + 2):
        collapsed = collapsed_at_level(boxes, level) if level <= deepest else set()
        shown = _shown_boxes(Layout(drawing, boxes, collapsed), boxes)
        for a, b in combinations(shown, 2):
            (al, at, ar, ab), (bl, bt, br, bb) = shown[a], shown[b]
            if not (holds(keyed[a], keyed[b]) or holds(keyed[b], keyed[a])):
                assert ar < bl or br < al or ab < bt or bb < at, (level, a, shown[a], b, shown[b])


@pytest.mark.parametrize("script,first,second,level", [("whisper_asr", "model.encoder", "model.decoder", 1),
                                                       ("t5_seq2seq", "encoder", "decoder", 0),
                                                       ("clip_contrastive", "vision_model", "text_model", 0)])
def test_independent_branches_are_drawn_side_by_side(record, script, first, second, level):
    """An encoder and the decoder that reads its output only in cross-attention, CLIP's vision and
    text towers (which meet in the loss): the second starts at the top, right of the first with
    an empty column between, not in the rows below it. Shut, the two cards sit side by side."""
    pytest.importorskip("transformers")
    drawing = Drawing(record(zoo(script), steps=1))
    drawing.update(final=True)
    boxes = module_boxes(drawing)
    one, two = ({box.path: box for box in boxes}[path] for path in (first, second))
    columns = [[drawing.nodes[m].slot for m in box.members] for box in (one, two)]
    assert max(columns[0]) + 1 < min(columns[1])  # beside, a column apart
    assert two.top < one.bottom - (one.bottom - one.top) // 2  # from the top of the first's rows, not below it
    layout = Layout(drawing, boxes, collapsed_at_level(boxes, level))
    (row_one, column_one), (row_two, column_two) = layout.cells[one.key], layout.cells[two.key]
    assert abs(row_one - row_two) <= 1 and column_one + 1 < column_two


def test_an_open_stack_of_blocks_shows_one_block_apart_and_the_others_as_thin_stacks(record, write_script):
    """GPT-2's ``transformer.h.0-3 · GPT2Block ×4`` opened: block 0 as its own card (double-click
    opens it), blocks 1-3 as one thin stack with a bar per block, not a column of four cards; the
    block shown apart moves (``focus``), and a block opened stays open between two runs."""
    from graphview.core.hierarchy import blocks_held
    from tests.conftest import tiny_gpt2

    pytest.importorskip("transformers")
    run = record(write_script(tiny_gpt2(4)), steps=1)
    drawing = Drawing(run)
    drawing.update(final=True)
    boxes = module_boxes(drawing)
    keyed = {box.key: box for box in boxes}
    stack = keyed["transformer.h"]
    collapsed = collapsed_at_level(boxes, stack.level + 1)
    layout = Layout(drawing, boxes, collapsed)
    (thin,) = layout.runs.values()
    assert thin.label == "transformer.h.1-3 · GPT2Block ×3" and thin.parent == stack.key
    blocks = [keyed[f"transformer.h.{i}"] for i in range(4)]
    assert {"transformer.h.0", thin.key} <= layout.collapsed and not {b.key for b in blocks[1:]} & layout.collapsed
    assert thin.members == blocks[1].members | blocks[2].members | blocks[3].members
    assert all(layout.hidden_by[m] == thin.key for m in thin.members)
    assert {b.key for b in blocks[1:]} <= layout.covered
    # its bars are the stack's own for those blocks (checked against torch in tests/capture)
    at = min(call.start for call in run.backwards.values())
    assert blocks_held(drawing, thin, keyed, at) == blocks_held(drawing, stack, keyed, at)[1:]
    # the third block apart: 0-1 thin, 2 and 3 one card each
    focused = Layout(drawing, boxes, collapsed, {stack.key: 2})
    assert [r.label for r in focused.runs.values()] == ["transformer.h.0-1 · GPT2Block ×2"]
    assert {"transformer.h.2", "transformer.h.3"} <= focused.collapsed
    # block 0 opened: its children shut, the others still one thin stack
    opened = Layout(drawing, boxes, collapsed - {"transformer.h.0"})
    assert [r.key for r in opened.runs.values()] == [thin.key] and "transformer.h.0" not in opened.collapsed
    assert "transformer.h.0.attn" in opened.collapsed
    # the stack shut: no thin stack
    assert Layout(drawing, boxes, collapsed_at_level(boxes, stack.level)).runs == {}


def test_a_module_called_outside_the_model_names_its_type_once(record, write_script):
    """Hugging Face makes its loss module in forward, outside the model's tree of children: its
    path is its type, and its box said "CrossEntropyLoss · CrossEntropyLoss"."""
    run = record(write_script(
        "import torch\n"
        "from torch import nn\n"
        "class Classifier(nn.Module):\n"
        "    def __init__(self, head):\n"
        "        super().__init__()\n"
        "        self.head = head\n"
        "    def forward(self, x, labels):\n"
        "        return nn.CrossEntropyLoss()(self.head(x), labels)\n"
        "model = Classifier(nn.Linear(4, 3))\n"
        "model(torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1])).backward()\n"))
    drawing = Drawing(run)
    drawing.update(final=True)
    boxes = {box.path: box for box in module_boxes(drawing)}
    assert boxes["CrossEntropyLoss"].type == "CrossEntropyLoss"
    assert boxes["CrossEntropyLoss"].label == "CrossEntropyLoss"
    assert boxes["CrossEntropyLoss"].shown_kind is None
    assert run.module_label("CrossEntropyLoss") == "CrossEntropyLoss"
    assert run.module_types[""] == "Classifier" and boxes["head"].label == "head · Linear"
