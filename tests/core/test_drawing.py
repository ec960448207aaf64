"""The layered drawing: stable positions while a run streams, no shared cells, stacked module boxes."""

from __future__ import annotations

import pytest

from graphview.core.drawing import Drawing, unnamed_title
from graphview.core.run import Run
from tests.conftest import lesson, model, zoo


def _stream(events: list[dict], chunk: int) -> tuple[Run, Drawing, dict[str, tuple[int, int]]]:
    """Feed the events as a live run does, a chunk at a time; remember where each node first landed."""
    run = Run()
    drawing = Drawing(run)
    first: dict[str, tuple[int, int]] = {}
    for start in range(0, len(events), chunk):
        run.extend(events[start:start + chunk])
        drawing.update(final=start + chunk >= len(events))
        for node in drawing.nodes.values():
            if node.placed and node.id not in first:
                first[node.id] = (node.layer, node.slot)
    return run, drawing, first


@pytest.mark.parametrize("path", [model("transformer_block"), model("mlp_optimizer"), lesson("chain_rule")])
def test_a_placed_node_never_moves_and_live_nodes_never_share_a_place(record, path):
    events = record(path, steps=3).events
    run, drawing, first = _stream(events, chunk=7)
    # every node is drawn but what nothing drawn uses: graphview's own read of each step's loss
    # (``loss.detach().reshape(-1).tolist()``)
    unplaced = [n for n in drawing.nodes.values() if not n.placed]
    assert all(n.kind == "detached" and not run.tensor_name(n.ref) for n in unplaced)
    assert first and len(first) == len(drawing.nodes) - len(unplaced)
    for node in drawing.nodes.values():
        if node.placed:
            assert (node.layer, node.slot) == first[node.id], node.id
    # autograd edges read downwards, in every step (a parameter drawn in step 1 stays above the
    # AccumulateGrad node each later step makes for it)
    upward = [(e.source, e.target) for e in drawing.edges if e.kind in ("flow", "accumulate")
              and drawing.nodes[e.source].layer >= drawing.nodes[e.target].layer]
    assert upward == []
    for index in range(0, len(events), max(1, len(events) // 40)):
        cells = [(n.layer, n.slot) for n in drawing.nodes.values() if n.placed and drawing.visible(n, index)]
        assert len(cells) == len(set(cells)), f"two live nodes share a place at event {index}"


def test_boxes_of_unrelated_modules_never_share_a_row(record):
    run = record(model("transformer_block"))
    drawing = Drawing(run)
    drawing.update()
    end_of_forward = min(call.start for call in run.backwards.values())
    rows: dict[str, set[int]] = {}
    for node in drawing.nodes.values():
        if node.module and drawing.visible(node, end_of_forward):
            rows.setdefault(node.module, set()).add(node.layer)
    assert {"encoder.layers.0.self_attn", "encoder.layers.0.norm1", "encoder.layers.0.linear1", "head"} <= set(rows)

    def related(a: str, b: str) -> bool:
        return a == b or a.startswith(b + ".") or b.startswith(a + ".")

    clashes = [(a, b) for a in rows for b in rows if a < b and not related(a, b) and rows[a] & rows[b]]
    assert clashes == []
    # stacked in call order: norm1 ends above where linear1 begins
    assert max(rows["encoder.layers.0.norm1"]) < min(rows["encoder.layers.0.linear1"])


def test_a_module_that_never_ran_has_no_box_its_leaves_sit_in_the_module_that_used_them(record):
    """MultiheadAttention computes its output projection itself (F.multi_head_attention_forward
    reads ``out_proj.weight``); ``out_proj`` is never called. A box for it, drawn around its
    parameters, also enclosed the attention ops beside them: ScaledDotProductAttention looked like
    part of out_proj. Its parameters and their AccumulateGrad belong to ``self_attn``, which used them."""
    run = record(model("transformer_block"))
    assert "encoder.layers.0.self_attn.out_proj" not in run.module_entered
    drawing = Drawing(run)
    drawing.update()
    modules = {node.module for node in drawing.nodes.values()}
    assert "encoder.layers.0.self_attn.out_proj" not in modules
    weight = [n for n in drawing.nodes.values() if n.title.endswith("self_attn.out_proj.weight")]
    grads = [n for n in drawing.nodes.values() if n.subtitle.endswith("self_attn.out_proj.weight.grad")]
    assert weight and grads
    assert {n.module for n in weight + grads} == {"encoder.layers.0.self_attn"}
    # a module that ran keeps its own parameters
    assert {n.module for n in drawing.nodes.values() if n.title.endswith("linear1.weight")} == {"encoder.layers.0.linear1"}


@pytest.mark.parametrize("name", ["transformer_block", "mlp_optimizer", "teacher_student_detach"])
def test_each_training_step_draws_in_the_same_place(record, name):
    """Step k's graph is destroyed before step k+1 builds its own: the new one takes the same
    cells, so a long run neither drifts sideways nor piles up what ``.item()`` and friends made."""
    run = record(model(name), steps=4)
    drawing = Drawing(run)
    drawing.update()
    cells = []
    for step in run.steps:
        # (a model's parameters may be first seen in step 1: they stay, step 2's graph is drawn around them)
        born = [n for n in drawing.nodes.values()
                if step["start"] <= n.born <= step["end"] and n.kind not in ("param", "input", "input_grad")]
        cells.append(sorted((n.layer, n.slot) for n in born))
    assert len(cells) == 4 and cells[1]
    assert cells[1] == cells[2] == cells[3]
    if name != "teacher_student_detach":  # (there step 1 places the teacher before the student's weights exist)
        assert cells[0] == cells[1]  # step 2 went right of step 1, past the weights drawn below
    end = len(run.events) - 1
    shown_at_step_end = [sum(drawing.visible(n, step["end"]) for n in drawing.nodes.values()) for step in run.steps]
    assert shown_at_step_end[1] == shown_at_step_end[3], "the canvas grows with every step"
    assert sum(drawing.visible(n, end) for n in drawing.nodes.values()) <= shown_at_step_end[0]


def test_a_real_models_scratch_tensors_are_not_drawn_and_its_masks_sit_in_its_box(record):
    """GPT-2's constructor makes its weights with torch.empty before they become Parameters:
    dozens of unnamed tensors nothing uses, which drawn would be a row as wide as the model.
    Tensors a module makes without grad (masks, position ids) belong to that module's box."""
    run = record(zoo("gpt2_lm"), steps=1)
    drawing = Drawing(run)
    drawing.update(final=True)
    scratch = [n for n in drawing.nodes.values() if n.kind == "input" and unnamed_title(n.title)
               and not n.preds and not drawing._out.get(n.id)]
    assert len(scratch) > 10 and not any(n.placed for n in scratch)
    placed = [n for n in drawing.nodes.values() if n.placed]
    assert all(n.preds or drawing._out.get(n.id) or not unnamed_title(n.title) for n in placed)
    derived = [n for n in placed if n.id in drawing.derived]
    inside = [n for n in derived if (n.module or "").startswith("transformer")]
    assert inside and all(run.producers[n.ref].get("module") == n.module for n in inside)


def test_parameters_a_model_initialises_in_its_constructor_sit_in_their_module_boxes(record):
    """BERT initialises its weights in its constructor (under no_grad): they are recorded there,
    unnamed; they are named at the model's first call. Drawn as the run streams in (the app's
    way), each weight still takes its name and its module when it is placed, so the module box
    of ``...attention.self.query`` holds its weight (not a column of weights outside every box)."""
    from graphview.core.hierarchy import module_boxes

    pytest.importorskip("transformers")
    whole = record(zoo("bert_mlm"), steps=1)
    live, drawing, _ = _stream(whole.events, chunk=50)
    named = {n.title: n for n in drawing.nodes.values() if n.kind == "param" and n.placed}
    query = named["bert.encoder.layer.0.attention.self.query.weight"]
    assert query.module == "bert.encoder.layer.0.attention.self.query"
    assert all(n.module == title.rpartition(".")[0] for title, n in named.items() if "." in title)
    boxes = {box.path: box for box in module_boxes(drawing)}
    assert query.id in boxes["bert.encoder.layer.0.attention.self.query"].members


@pytest.mark.parametrize("script", ["bert_mlm", "gpt2_lm", "llama_decoder", "t5_seq2seq", "vit_classifier",
                                    "whisper_asr", "clip_contrastive"])
def test_real_models_drawn_as_they_stream_in_place_what_the_whole_run_places(record, script):
    """The app draws a run as its events come. T5's ``_shift_right`` fills a no-grad tensor in place
    with a mask made from it (a loop of no-grad edges), which once sent the drawing round that loop
    until Python's recursion limit. T5's decoder weights, made in its constructor and first used
    far into the step, were drawn in the encoder's rows while the run streamed, splitting the
    decoder's box in two: the outermost boxes are those of the whole run drawn at once. Whisper's decoder
    and CLIP's text tower go beside the branch before them the same way, whole or streamed."""
    from graphview.core.hierarchy import module_boxes

    pytest.importorskip("transformers")
    whole = record(zoo(script), steps=2)
    live, drawing, _ = _stream(whole.events, chunk=50)
    at_once = Drawing(whole)
    at_once.update(final=True)
    assert {n.id for n in drawing.nodes.values() if n.placed} == {n.id for n in at_once.nodes.values() if n.placed}
    end = len(whole.events) - 1
    assert sum(drawing.visible(n, end) for n in drawing.nodes.values()) == \
        sum(at_once.visible(n, end) for n in at_once.nodes.values())

    # the first step drawn as it streams in has the module boxes of the first step drawn at once
    first = whole.events[:whole.steps[0]["end"] + 1]
    boxes = []
    for chunk in (50, len(first)):
        _, step, _ = _stream(first, chunk)
        boxes.append([(box.key, box.top, box.bottom) for box in module_boxes(step) if box.level == 0])
    assert boxes[0] == boxes[1]


def test_buffers_a_model_makes_in_its_constructor_sit_in_their_module_boxes(record):
    """ResNet's BatchNorm buffers (running_mean, running_var, num_batches_tracked) are made and filled
    in its constructor, recorded there as plain inputs, and known as buffers at the model's first
    call: drawn as the run streams in, each sits in its BatchNorm's box, not in a grid above the model."""
    from graphview.core.hierarchy import module_boxes

    pytest.importorskip("transformers")
    whole = record(zoo("resnet_classifier"), steps=1)
    live, drawing, _ = _stream(whole.events, chunk=20)
    buffers = [n for n in drawing.nodes.values()
               if n.placed and n.id.startswith("t") and live.tensors[n.ref].get("kind") == "buffer"]
    assert len(buffers) >= 9 and any(live.tensor_name(n.ref).endswith("running_mean") for n in buffers)
    boxes = {box.path: box for box in module_boxes(drawing)}
    for node in buffers:
        assert node.module == live.tensor_name(node.ref).rpartition(".")[0]
        assert node.id in boxes[node.module].members


@pytest.mark.parametrize("script", ["bert_mlm", "gpt2_lm", "t5_seq2seq"])
def test_what_a_models_constructor_made_and_threw_away_is_not_drawn(record, script):
    """BERT's constructor pads a bias that weight tying then replaces (``.data``, ``pad``): tensors
    nothing in the step uses. Every leaf or no-grad tensor the constructor made that is drawn is
    named, or feeds an autograd node or a named tensor (directly or through no-grad tensors)."""
    pytest.importorskip("transformers")
    run = record(zoo(script), steps=1)
    drawing = Drawing(run)
    drawing.update(final=True)

    def reaches_something(node):
        todo, seen = [node], {node.id}
        while todo:
            current = todo.pop()
            if current.kind in ("op", "accumulate") or run.tensor_name(current.ref):
                return True
            for edge in drawing._out.get(current.id, ()):
                if edge.target in drawing.nodes and edge.target not in seen:
                    seen.add(edge.target)
                    todo.append(drawing.nodes[edge.target])
        return False

    built = run.steps[0]["start"]
    drawn = [n for n in drawing.nodes.values()
             if n.placed and n.born < built and n.kind not in ("op", "accumulate", "intermediate")]
    assert drawn and all(reaches_something(n) for n in drawn)


@pytest.mark.parametrize("name,made_at", [("nonscalar_seed", 6), ("numpy_mlp_comparison", 17)])
def test_what_the_script_makes_from_a_drawn_tensor_is_drawn(record, name, made_at):
    """The seed of ``y.backward(torch.ones_like(y))`` and ``w1.detach()`` before ``.numpy()`` are the
    lessons' point: unnamed and feeding no autograd node, they are still drawn (made in the script
    from something drawn)."""
    run = record(lesson(name))
    drawing = Drawing(run)
    drawing.update(final=True)
    made = [n for n in drawing.nodes.values() if n.kind == "detached" and n.line == made_at]
    assert made and all(n.placed for n in made)


def test_a_long_no_grad_chain_is_drawn_and_steps_through(write_script, record):
    """``h = h * 0.999`` under no_grad, 1,500 times: a chain of derived tensors far longer than
    Python's recursion limit allows to walk recursively."""
    script = write_script("import torch\nh = torch.ones(2)\nwith torch.no_grad():\n"
                          "    for _ in range(1500):\n        h = h * 0.999\nprint(h.sum().item())\n")
    run = record(script)
    drawing = Drawing(run)
    drawing.update(final=True)
    end = len(run.events) - 1
    assert len(drawing.derived) >= 1400
    assert isinstance(drawing.derived_changing(0, end), list)
    assert any(drawing.visible(n, end) for n in drawing.nodes.values())


class _CountedGets:
    """A drawing's table of edges as its lifetimes read it, counting the reads."""

    def __init__(self, table: dict) -> None:
        self.table, self.reads = table, 0

    def get(self, key, default=None):
        self.reads += 1
        return self.table.get(key, default)


def test_a_no_grad_residual_stream_is_walked_once_not_once_a_path(write_script, record):
    """``h = h + torch.tanh(h)`` under no_grad: each tensor feeds the next two ways, so the paths
    from the first to the last double with each block (a transformer's residual stream, generating
    under no_grad). The end of each, not known while the last is alive, was worked out again along
    every path: a 4-layer GPT-2 generating 4 tokens took 161 s to draw 1,200 of its events, and its
    export never ended. Each tensor is now asked once while the run does not grow."""
    script = write_script("import torch\nh = torch.ones(4)\nwith torch.no_grad():\n"
                          "    for _ in range(12):\n        h = h + torch.tanh(h)\nprint(h.sum().item())\n")
    run = record(script)
    drawing = Drawing(run)
    counted = drawing.lifetimes.out = _CountedGets(drawing.lifetimes.out)
    drawing.update(final=True)
    end = len(run.events) - 1
    assert len(drawing.derived) >= 24
    changing = drawing.derived_changing(0, end)
    assert set(changing) == {n for n in drawing.derived if drawing.lifetimes.dead_index(drawing.nodes[n]) is None}
    assert counted.reads <= 4 * len(drawing.nodes)  # (once a path: over 10,000 reads)


def test_a_variable_named_like_tensor_keeps_its_name(write_script, record):
    run = record(write_script("import torch\ntensor_a = torch.ones(3)\nw = torch.ones(3, requires_grad=True)\n"
                              "loss = (w * tensor_a).sum()\nloss.backward()\n"))
    drawing = Drawing(run)
    drawing.update(final=True)
    assert "tensor_a" in {n.title for n in drawing.nodes.values()}


@pytest.mark.parametrize("script", [model("transformer_block"), model("checkpointing"), "zoo:bert_mlm"])
def test_a_layout_in_time_slices_places_what_a_layout_of_each_piece_places(record, script):
    """The window lays a trace out in slices of the event loop (``update(seconds=...)``: here so
    short that each call places 64 elements and leaves the rest for the next) while the trace is
    still being read: every node lands where laying out each piece read as a whole puts it."""
    if str(script).startswith("zoo:"):
        pytest.importorskip("transformers")
        script = zoo(script[4:])
    whole = record(script, steps=2)
    assert whole.status == "ok"

    def read(seconds):
        run = Run()
        drawing = Drawing(run)
        calls = 0
        for start in range(0, len(whole.events), 1500):
            run.extend(whole.events[start:start + 1500])
            drawing.update(final=False, patient=True, seconds=seconds)
            calls += 1
            while seconds is None and drawing.behind:
                pytest.fail("an update without a time limit left work")
        while drawing.behind:
            drawing.update(final=False, patient=True, seconds=seconds)
            calls += 1
        drawing.update(final=True, patient=True)
        return drawing, calls

    pieces, piece_calls = read(None)
    sliced, calls = read(0.0)
    assert calls > piece_calls  # the slices did leave work for later calls
    placed = {n.id: (n.layer, n.slot) for n in sliced.nodes.values() if n.placed}
    assert placed and placed == {n.id: (n.layer, n.slot) for n in pieces.nodes.values() if n.placed}
    assert sorted((e.source, e.target, e.kind) for e in sliced.edges) == \
        sorted((e.source, e.target, e.kind) for e in pieces.edges)


def test_an_unnamed_intermediate_tensor_is_called_after_the_op_that_made_it(record, write_script):
    """A tensor the script never named is drawn as "output of <op>" (the op that made it, as its
    autograd node records), not as "tensor"; a named one keeps its name."""
    from graphview.core.drawing import Drawing

    run = record(write_script(
        "import torch\n"
        "x = torch.ones(2, requires_grad=True)\n"
        "h = x * 3\n"
        "loss = (h.exp() - 1).sum()\n"
        "loss.backward()\n"))
    drawing = Drawing(run)
    drawing.update()
    titles = {n.title for n in drawing.nodes.values() if n.kind == "intermediate"}
    assert {"h", "output of exp", "output of sub", "loss"} <= titles
    assert "tensor" not in titles


def test_a_view_a_constructor_zeroes_is_not_drawn_in_a_plain_script(record, write_script):
    """BERT's constructor zeroes its embedding's padding row through a view (``weight[pad].zero_()``
    under no_grad): that unnamed view was drawn all run long beside the loss, as a leaf input that
    requires grad. Made before the model's first call and used by nothing after, it is scratch, as
    before a step script's first step; the weight itself is drawn, and a view the forward uses is."""
    run = record(write_script(
        "import torch\n"
        "from torch import nn\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.embed = nn.Embedding(10, 4)\n"
        "        with torch.no_grad():\n"
        "            self.embed.weight[0].zero_()\n"
        "    def forward(self, ids):\n"
        "        return self.embed(ids)\n"
        "model = Model()\n"
        "row = model.embed.weight[1]\n"
        "(model(torch.tensor([1, 2])).sum() + row.sum()).backward()\n"))
    drawn = _placed(run)
    assert not [n for n in drawn if unnamed_title(n.title) and n.kind in ("input", "input_grad")]
    assert any(n.title == "embed.weight" for n in drawn) and any(n.title == "row" for n in drawn)


GPT2_LOOP = """
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=100, n_positions=32)
model = GPT2LMHeadModel(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    input_ids = torch.randint(0, config.vocab_size, (2, 16))
    optimizer.zero_grad()
    out = model(input_ids=input_ids, labels=input_ids)
    loss = out.loss
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
"""


def test_a_plain_loops_second_iteration_is_drawn_where_the_first_was_as_the_run_streams_in(record, write_script):
    """In a plain loop the first iteration's graph lives on until ``out`` is bound again: the
    second forward is drawn beside it, in the same rows. Read as the window reads a run (in
    pieces, while it streams), GPT-2's second forward went below the whole first iteration:
    the position ids it makes without grad, in its model's box, held the rows."""
    pytest.importorskip("transformers")
    whole = record(write_script(GPT2_LOOP))
    run = Run()
    drawing = Drawing(run)
    for start in range(0, len(whole.events), 200):
        run.extend(whole.events[start:start + 200])
        drawing.update(final=False)
    drawing.update(final=True)
    for title in ("EmbeddingBackward0", "output of embedding"):
        first = [n for n in drawing.nodes.values() if n.title == title and n.module == "transformer.wte"]
        assert len(first) == 2 and first[0].layer == first[1].layer, title
    # and everything in the row the layout of the whole run puts it in (the labels GPT-2 shifts
    # without grad held the first loss's rows, or not, as an edge read later said they were detached)
    read_whole = Drawing(whole)
    read_whole.update(final=True)
    assert {n.id: n.layer for n in drawing.nodes.values() if n.placed} == \
        {n.id: n.layer for n in read_whole.nodes.values() if n.placed}


def test_an_input_the_loop_binds_anew_goes_when_torch_frees_it(record, write_script):
    """A plain loop binds ``images`` to a new batch each iteration: the last batch is freed then
    (once the graph that saved it is gone), and goes from the canvas. Three iterations drew three
    ``images``, all live."""
    import weakref

    import torch

    run = record(write_script(
        "import torch\n"
        "model = torch.nn.Linear(3, 2)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for i in range(3):\n"
        "    images = torch.randn(4, 3)\n"
        "    opt.zero_grad()\n"
        "    loss = model(images).sum()\n"
        "    loss.backward()\n"
        "    opt.step()\n"))
    drawing = Drawing(run)
    drawing.update(final=True)
    updates = [index for index, _ in run.optimizer_steps]
    for index in updates:
        shown = [n for n in drawing.nodes.values() if n.placed and n.title == "images" and drawing.visible(n, index)]
        assert len(shown) == 1
    # the batch is freed where torch frees it: once the name is bound again and nothing else holds it
    first = next(n for n in drawing.nodes.values() if n.title == "images")
    freed = run.tensor_dead[first.ref]
    assert updates[0] < freed < updates[1] and freed <= drawing.dead_index(first) < updates[1]
    # torch agrees: the Linear saved the batch for backward, and backward freed it with the graph
    images = torch.randn(4, 3)
    gone = weakref.ref(images)
    loss = torch.nn.Linear(3, 2)(images).sum()
    del images
    assert gone() is not None  # held by the graph
    loss.backward()
    del loss
    assert gone() is None


def test_an_input_the_script_does_not_keep_stays_while_the_ops_it_feeds_live(record, write_script):
    """``model(torch.randn(...))``: torch frees the batch the script never named at the end of the
    forward, while the conv's saved copy of it lives until backward. The batch stays drawn with the
    graph it feeds (it vanished at backward's start, its edge with it)."""
    run = record(write_script(
        "import torch\n"
        "import torch.nn.functional as F\n"
        "model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2))\n"
        "loss = F.cross_entropy(model(torch.randn(2, 3, 8, 8)), torch.randint(0, 2, (2,)))\n"
        "loss.backward()\n"))
    drawing = Drawing(run)
    drawing.update(final=True)
    start = next(i for i, e in enumerate(run.events) if e["ev"] == "backward_start")
    batch = next(n for n in drawing.nodes.values() if n.kind == "input" and n.subtitle.startswith("2×3×8×8"))
    assert run.tensor_dead[batch.ref] < start  # torch freed the script's tensor before backward
    assert drawing.visible(batch, start)


def test_how_a_constructor_made_a_buffer_is_not_drawn(record, write_script):
    """Llama's rotary embedding makes ``inv_freq = 1 / base ** (arange(0, d, 2) / d)`` in its
    constructor (and keeps an unread copy, ``original_inv_freq``): the arange, pow and div were
    drawn above the buffer, a chain of unnamed "tensor" nodes at the top of every step. The buffer
    the forward reads is drawn; how it was made, and a buffer nothing reads, are not."""
    run = record(write_script(
        "import torch\n"
        "from torch import nn\n"
        "class Rotary(nn.Module):\n"
        "    def __init__(self, dim):\n"
        "        super().__init__()\n"
        "        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))\n"
        "        self.register_buffer('inv_freq', inv_freq, persistent=False)\n"
        "        self.register_buffer('original_inv_freq', inv_freq.clone(), persistent=False)\n"
        "    def forward(self, x):\n"
        "        return x * self.inv_freq\n"
        "rotary = Rotary(8)\n"
        "w = torch.randn(4, requires_grad=True)\n"
        "(rotary(w) ** 2).sum().backward()\n"))
    drawn = _placed(run)
    [buffer] = [n for n in drawn if n.kind in ("input", "detached")]
    assert run.tensors[buffer.ref]["kind"] == "buffer" and buffer.title in ("inv_freq", "rotary.inv_freq")
    assert {"w", "MulBackward0", "PowBackward0", "SumBackward0"} <= {n.title for n in drawn}


def test_data_prepared_before_the_model_runs_keeps_its_lineage(record, write_script):
    """What a script computes from its data before the first call of its model (normalizing a
    batch) is not a constructor's scratch: raw, its mean and std, and x are drawn, joined."""
    run = record(write_script(
        "import torch\n"
        "lin = torch.nn.Linear(4, 1)\n"
        "raw = torch.randn(8, 4)\n"
        "x = (raw - raw.mean(0)) / raw.std(0)\n"
        "lin(x).sum().backward()\n"))
    drawing = Drawing(run)
    drawing.update(final=True)
    placed = {n.id: n for n in drawing.nodes.values() if n.placed}
    x = next(n for n in placed.values() if n.title == "x")
    # a drawn path up from x to raw, through the sub and the div
    todo, reached = [x.id], set()
    while todo:
        node = placed.get(todo.pop())
        if node is not None and node.id not in reached:
            reached.add(node.id)
            todo.extend(node.preds)
    assert any(placed[i].title == "raw" for i in reached) and len(reached) >= 4


def test_the_modules_of_one_model_take_each_others_freed_rows(record, write_script):
    """A mixture of experts runs one expert a step: each step's expert goes in the rows the last
    one's freed graph left, below its weights (a model's rows are kept from other models, not from
    its own modules: the experts went further down each step)."""
    run = record(write_script(
        "import torch\n"
        "from torch import nn\n"
        "class MoE(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.inp = nn.Linear(8, 8)\n"
        "        self.experts = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(4)])\n"
        "    def forward(self, x, k):\n"
        "        return self.experts[k](self.inp(x))\n"
        "model = MoE()\n"
        "for step in range(4):\n"
        "    model(torch.randn(2, 8), step).pow(2).mean().backward()\n"))
    drawing = Drawing(run)
    drawing.update(final=True)
    rows = sorted(n.layer for n in drawing.nodes.values()
                  if n.placed and n.kind == "op" and n.title == "AddmmBackward0" and n.module.startswith("experts."))
    # each expert's weight and its AccumulateGrad keep their two rows above its op, where the next
    # expert's weights cannot go (a box around them would hold them): two rows lower each step, no more
    assert len(rows) == 4 and {b - a for a, b in zip(rows, rows[1:])} == {2}, rows


def _placed(run) -> list:
    """The nodes the whole run drawn at once places."""
    drawing = Drawing(run)
    drawing.update(final=True)
    return [n for n in drawing.nodes.values() if n.placed]


def test_a_result_made_without_grad_is_called_after_its_op(record, write_script):
    """An evaluation under no_grad drew a column of "tensor" nodes: each is called after the op that
    made it, as a result autograd records is."""
    run = record(write_script(
        "import torch\n"
        "w = torch.randn(4, requires_grad=True)\n"
        "(w * 2).sum().backward()\n"
        "with torch.no_grad():\n"
        "    score = (w * 3).exp().sum()\n"))
    titles = {n.title for n in _placed(run) if n.kind in ("detached", "input")}
    assert {"output of mul", "output of exp", "score"} <= titles and "tensor" not in titles


def _foreign_nodes(drawing: Drawing, boxes, index: int) -> list[tuple[str, str]]:
    """(box key, node id) of every node shown at event ``index`` inside the rectangle of a box (the
    rows and columns of its members shown then) that is not one of the box's own."""
    shown = [n for n in drawing.nodes.values() if n.placed and drawing.visible(n, index)]
    found = []
    for box in boxes:
        members = [drawing.nodes[m] for m in box.members if drawing.visible(drawing.nodes[m], index)]
        if not members:
            continue
        top, bottom = min(n.layer for n in members), max(n.layer for n in members)
        left, right = min(n.slot for n in members), max(n.slot for n in members)
        found += [(box.key, n.id) for n in shown if n.id not in box.members
                  and top <= n.layer <= bottom and left <= n.slot <= right]
    return found


@pytest.mark.parametrize("layers", [2, 12])
def test_a_tied_lm_head_is_one_box_per_call_holding_nothing_of_another_module(record, write_script, layers):
    """GPT-2's lm_head reads the embedding's weight (tied). Its ``weight.t()`` was placed below that
    weight, drawn already at the top, and went down to the first row free of other modules: in a
    deep model (twelve layers, over a thousand rows) a walk capped at a thousand rows left it in the
    last MLP's rows, a box of its own ("Linear · 1 op" beside "Linear · 3 ops"). And the loss's
    labels, padded in the model's own forward (no box), sat in lm_head's box above the loss."""
    from graphview.core.hierarchy import module_boxes

    pytest.importorskip("transformers")
    from tests.conftest import tiny_gpt2

    whole = record(write_script(tiny_gpt2(layers)), steps=2)
    events = whole.events
    head_ops = {op.id for op in whole.op_nodes.values() if op.module == "lm_head"}
    assert len(head_ops) == 8  # each step: view, t (the tied weight), mm, _unsafe_view
    # several points of the run as it streams in: where each step's lm_head call has returned,
    # each step's backward begins and ends, and the run's end
    exits = [i for i, e in enumerate(events) if e["ev"] == "module_exit" and e.get("path") == "lm_head"]
    points = sorted(exits + [c.start for c in whole.backwards.values()] + [s["end"] for s in whole.steps]
                    + [len(events) - 1])
    assert len(exits) == 2 and len(points) == 7
    run = Run()
    drawing = Drawing(run)
    for point in points:
        while len(run.events) <= point:  # a chunk at a time, as a live run comes
            run.extend(events[len(run.events):min(point + 1, len(run.events) + 200)])
            drawing.update(final=len(run.events) == len(events))
        boxes = module_boxes(drawing)
        heads = [box for box in boxes if box.path == "lm_head"]
        assert len(heads) == 1, (point, [(b.key, b.top, b.bottom) for b in heads])
        shown = {m for m in heads[0].members if drawing.visible(drawing.nodes[m], point)}
        if point in exits:  # the call that just returned: its four ops in one box, none left out
            drawn = {m for m in head_ops if m in drawing.nodes and drawing.visible(drawing.nodes[m], point)}
            assert len(drawn) == 4 and shown & head_ops == drawn, point
        assert {drawing.nodes[m].module for m in heads[0].members} == {"lm_head"}
        assert _foreign_nodes(drawing, boxes, point) == [], point
    # the tied weight and its AccumulateGrad stay the embedding's
    weight = [n for n in drawing.nodes.values() if n.title == "transformer.wte.weight"]
    assert weight and {n.module for n in weight} == {"transformer.wte"}


def test_recordings_of_a_script_drawn_as_their_events_come_in_any_batches_place_each_node_alike(record):
    """A live run is drawn as its events come, in batches as the window's timer finds them. Where
    a batch ended moved nodes: the gradient-penalty sample (a backward with create_graph, then
    another) whose events all came in the first batch was drawn as a run given whole, its input x
    a column further right than when they came in several. Three recordings, their events in one
    batch, in batches of 7 and in batches of 3 and 11: every node in one place."""
    places = []
    for sizes in ([10 ** 6], [7], [3, 11]):
        events = record(model("gradient_penalty"), steps=2).events
        run = Run()
        drawing = Drawing(run)  # (as the window's: made when the run starts, before its events)
        start = taken = 0
        while start < len(events):
            size = sizes[taken % len(sizes)]
            run.extend(events[start:start + size])
            start, taken = start + size, taken + 1
            drawing.update(final=start >= len(events))
        places.append({node.id: (node.layer, node.slot) for node in drawing.nodes.values() if node.placed})
    assert len(places[0]) > 60
    assert places[1] == places[0] and places[2] == places[0]
