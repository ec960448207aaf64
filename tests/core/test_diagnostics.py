"""Each pitfall script is reported with the right line; the other samples raise no alarm."""

from __future__ import annotations

import pytest

from graphview.core.diagnostics import diagnose
from tests.conftest import LESSONS, MODELS, SAMPLES

PITFALLS = SAMPLES / "pitfalls"

# script -> (finding code, line it points at, extra options)
EXPECTED = {
    "no_grad_fn": ("no-grad-fn", 8, {}),
    "grad_none_non_leaf": ("grad-none-non-leaf", 9, {}),
    "grad_none_unused": ("grad-none-unused", 10, {}),
    "forgot_zero_grad": ("no-zero-grad", 9, {}),
    "backward_twice": ("backward-twice", 9, {}),
    "retain_graph_unused": ("retain-graph-unused", 7, {}),
    "graph_kept_across_steps": ("graph-kept", 17, {"steps": 4}),
    "nonscalar_backward": ("non-scalar-backward", 6, {}),
    "update_outside_no_grad": ("update-outside-no-grad", 7, {}),
    "nan_gradient": ("nan-grad", 6, {}),
    "inplace_on_saved": ("inplace-saved", 6, {}),
    "detach_is_not_copy": ("detach-is-not-copy", 7, {}),
    "eval_is_not_no_grad": ("eval-is-not-no-grad", 9, {}),
    "inference_memory_creep": ("inference-graphs-kept", 10, {}),
    "cpu_is_not_detach": ("cpu-is-not-detach", 6, {}),
    "unscaled_micro_batches": ("unscaled-accumulation", 11, {}),
    "total_loss_keeps_graphs": ("graph-kept", 11, {}),
    "detached_branch_gets_no_grad": ("grad-none-detached", 9, {}),
    "checkpoint_batchnorm": ("checkpoint-recomputes-batchnorm", 11, {}),
    "inference_tensor_in_graph": ("inference-tensor-in-graph", 8, {}),
    "create_graph_unused": ("create-graph-unused", 8, {}),
}


def test_bare_layers_name_their_parameters_after_their_variable(record):
    run = record(PITFALLS / "detached_branch_gets_no_grad.py")
    names = {info.get("name") for info in run.tensors.values()}
    assert {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"} <= names


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_pitfall_is_reported_at_its_line(name, record):
    code, line, options = EXPECTED[name]
    run = record(PITFALLS / f"{name}.py", **options)
    findings = diagnose(run)
    codes = [(f.code, f.line) for f in findings]
    assert (code, line) in codes, codes
    finding = next(f for f in findings if f.code == code)
    assert finding.explanation and finding.fix


def test_no_grad_fn_names_the_line_that_cut_the_graph(record):
    run = record(PITFALLS / "no_grad_fn.py")
    finding = next(f for f in diagnose(run) if f.code == "no-grad-fn")
    assert finding.related_lines == [6] and "no_grad" in finding.explanation


def test_backward_twice_names_both_calls_and_the_node(record):
    run = record(PITFALLS / "backward_twice.py")
    finding = next(f for f in diagnose(run) if f.code == "backward-twice")
    assert finding.related_lines == [8]
    assert run.op_nodes[int(finding.node[2:])].name == "MulBackward0"


def test_nan_points_at_the_node_that_made_it_not_the_leaf(record):
    run = record(PITFALLS / "nan_gradient.py")
    finding = next(f for f in diagnose(run) if f.code == "nan-grad")
    # backward meets root * 0.0 first (gradient 0, fine), then sqrt: 0 * 1/(2*sqrt(0)) = nan
    assert "SqrtBackward0" in finding.title and finding.line == 6
    # its moment is when the NaN leaves that node, so jumping there shows it in "grad out"
    ev = run.events[finding.index]
    assert ev["ev"] == "bw_node_done" and f"op{ev['vid']}" == finding.node
    assert any(g and g.get("values") and "nan" in g["values"] for g in ev["grads_out"])


def test_the_canvas_marks_where_the_nan_began_and_where_it_went(record):
    """The graph says what the finding says: SqrtBackward0 sent the first NaN (torch: its
    gradient is nan where x is 0), ``x * 1.0``'s MulBackward0 passed it on; not before they ran."""
    import torch

    x = torch.tensor([0.0, 4.0], requires_grad=True)
    torch.sqrt(x * 1.0).mul(0.0).sum().backward()
    assert torch.isnan(x.grad[0]) and x.grad[1] == 0  # what the script's x.grad is
    run = record(PITFALLS / "nan_gradient.py")
    finding = next(f for f in diagnose(run) if f.code == "nan-grad")
    by_name = {}
    for vid, op in run.op_nodes.items():
        by_name.setdefault(op.name, []).append(vid)
    call = next(iter(run.backwards.values()))
    sqrt, = by_name["SqrtBackward0"]
    first_mul, last_mul = sorted(by_name["MulBackward0"])  # x * 1.0, then root * 0.0
    assert f"op{sqrt}" == finding.node
    assert run.non_finite_out(sqrt, call.end) == "first"
    assert run.non_finite_out(first_mul, call.end) == "passed"
    assert run.non_finite_out(last_mul, call.end) is None  # it sent 0 * 1 = 0
    assert run.non_finite_out(sqrt, finding.index - 1) is None  # before sqrt's backward ended


ALARM_FREE = [p for p in sorted(LESSONS.glob("*.py")) if not p.name.startswith("error_")] + sorted(MODELS.glob("*.py"))


@pytest.mark.parametrize("path", ALARM_FREE, ids=lambda p: p.name)
def test_samples_raise_no_false_alarm(path, record):
    run = record(path, steps=3)
    assert [f.code for f in diagnose(run)] == []


def test_a_weight_initialised_under_no_grad_and_left_out_of_the_loss_is_unused_not_cut(record, write_script):
    """BERT initialises its weights in place under no_grad; its pooler is not in a loss built from
    the last hidden state. The pooler's .grad is None because it was not used in the loss, not
    because its initialisation 'used it inside a no_grad region' (as it was reported). A real
    no_grad cut on the way to the loss is still found, at its line."""
    run = record(write_script(
        "import torch\n"
        "body = torch.nn.Linear(4, 4)\n"
        "pooler = torch.nn.Linear(4, 4)\n"
        "with torch.no_grad():\n"
        "    pooler.weight.normal_(0.0, 0.02)\n"
        "    body.weight.data.normal_(0.0, 0.02)\n"
        "h = body(torch.randn(2, 4))\n"
        "pooled = pooler(h)\n"
        "h.sum().backward()\n"
        "print(pooler.weight.grad, body.weight.grad is None)\n"))
    findings = [f for f in diagnose(run) if f.code.startswith("grad-none")]
    assert [f.code for f in findings] == ["grad-none-unused"] and "pooler.weight" in findings[0].title
    run = record(write_script(
        "import torch\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "x = torch.randn(3, requires_grad=True)\n"
        "with torch.no_grad():\n"
        "    w.mul_(0.5)\n"
        "    scaled = w * 2\n"
        "loss = (scaled * x).sum()\n"
        "loss.backward()\n"
        "print(w.grad)\n"))
    cut = [f for f in diagnose(run) if f.code == "grad-none-detached"]
    assert len(cut) == 1 and cut[0].line == 6  # scaled = w * 2, not the in-place w.mul_(0.5)


def test_a_modules_buffer_raises_no_alarm(record, write_script):
    """``nn.Buffer(t)`` runs ``t.detach().requires_grad_(False)``: an in-place op on a detached
    tensor that writes no value. It was reported as 'writing into a detached tensor changes the
    original' in every model with a buffer (BERT's position ids), and so was a write into the buffer
    afterwards, whose 'original' is a temporary nothing reads again; a real write still is."""
    run = record(write_script(
        "import torch\n"
        "class Scaled(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.scale = torch.nn.Buffer(torch.full((3,), 2.0))\n"
        "        self.scale.copy_(torch.full((3,), 2.0))\n"  # (BERT fills its buffers again in _init_weights)
        "        self.lin = torch.nn.Linear(3, 3)\n"
        "    def forward(self, x):\n"
        "        return self.lin(x) * self.scale\n"
        "model = Scaled()\n"
        "model(torch.randn(2, 3)).sum().backward()\n"))
    assert any(e["ev"] == "op" and e["op"] == "requires_grad_" for e in run.events)
    assert [f.code for f in diagnose(run)] == []
    run = record(write_script(
        "import torch\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "d = w.detach()\n"
        "d.requires_grad_(False)\n"
        "d.mul_(2)\n"))
    assert [f.code for f in diagnose(run)] == ["detach-is-not-copy"]


def test_nan_after_a_sampled_gradient_says_the_sample_could_have_missed_one(record, write_script):
    """A gradient of more than 2^18 values is summarized from a sample: a NaN found after one is
    still reported at the node that made it, with a word that an earlier sample could miss one."""
    run = record(write_script(
        "import torch\n"
        "a = torch.zeros(1, requires_grad=True)\n"
        "big = torch.randn(600, 1000, requires_grad=True)\n"
        "n = torch.sqrt(a) * 0\n"  # made first: its nodes run last in backward
        "loss = n.sum() + (big * 3).tanh().sum()\n"
        "loss.backward()\n"))
    call = next(iter(run.backwards.values()))
    sampled = [vid for vid in call.order for g in call.grads_out.get(vid) or ()
               if isinstance(g, dict) and "sampled" in (g.get("stats") or {})]
    assert sampled  # TanhBackward0 sent a 600,000-value gradient on its way
    finding = next(f for f in diagnose(run) if f.code == "nan-grad")
    assert "SqrtBackward0" in finding.title
    assert "summarized from a sample" in finding.explanation


def test_a_single_inf_sent_into_a_leaf_is_found_at_the_node_that_made_it(record, write_script):
    """One Inf among 600,000 values that only elementwise ops touch would fall outside a sample;
    the gradient a node sends into a leaf's AccumulateGrad is summarized exactly (as the leaf's
    .grad is), so the finding names that node, with no word about samples."""
    run = record(write_script(
        "import torch\n"
        "w = torch.nn.Parameter(torch.rand(600, 1000) + 0.1)\n"
        "with torch.no_grad():\n"
        "    w[300, 500] = 0.0\n"
        "torch.sqrt(w).sum().backward()\n"))
    call = next(iter(run.backwards.values()))
    sqrt = next(vid for vid in call.order if run.op_nodes[vid].name == "SqrtBackward0")
    assert _non_finite_summary(call.grads_out.get(sqrt)[0])
    finding = next(f for f in diagnose(run) if f.code == "nan-grad")
    assert "SqrtBackward0" in finding.title and finding.line == 5
    assert "sample" not in finding.explanation


def _non_finite_summary(g) -> bool:
    stats = (g or {}).get("stats") or {}
    return bool(stats.get("nan") or stats.get("inf")) or not isinstance(stats.get("norm"), float)


def test_the_findings_made_a_piece_at_a_time_are_the_findings_of_the_whole_run(record):
    """The window diagnoses a big run in slices (diagnosing pauses between checks and within the
    long ones); what the slices find, sorted, is what diagnose finds."""
    from graphview.core import diagnostics

    for name in ("detach_is_not_copy", "update_outside_no_grad", "graph_kept_across_steps"):
        code, _, options = EXPECTED[name]
        run = record(PITFALLS / f"{name}.py", **options)
        pieces = list(diagnostics.diagnosing(run))
        assert pieces.count(None) >= len(diagnostics.CHECKS)  # a point to pause after every check
        found = sorted((f for f in pieces if f is not None), key=lambda f: f.index)
        assert [f.to_dict() for f in found] == [f.to_dict() for f in diagnose(run)]
        assert code in [f.code for f in found]


def test_gradients_with_nan_or_inf_are_noted_as_the_events_come(record, write_script):
    """What the NaN finding asks of a backward call (which nodes sent NaN or Inf, where the first
    sampled gradient came) is noted as the run takes in each event: the nodes noted are the nodes
    whose outgoing gradients torch itself computes with an Inf."""
    import torch

    source = ("import torch\n"
              "w = torch.nn.Parameter(torch.tensor([4.0, 0.0, 1.0]))\n"
              "y = torch.sqrt(w) * 2\n"
              "y.sum().backward()\n")
    run = record(write_script(source))
    call = next(iter(run.backwards.values()))
    noted = sorted(run.op_nodes[vid].name for vid in call.non_finite)
    # torch: the gradients each node sends on, seen by a hook on every node of the same graph
    w = torch.nn.Parameter(torch.tensor([4.0, 0.0, 1.0]))
    y = torch.sqrt(w) * 2
    loss = y.sum()
    sent_inf = []
    todo, seen = [loss.grad_fn], set()
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        node.register_hook(lambda grads_in, grads_out, node=node: sent_inf.append(node.name()) if any(
            g is not None and not torch.isfinite(g).all() for g in grads_in) else None)
        todo.extend(child for child, _ in node.next_functions)
    loss.backward()
    assert noted == sorted(sent_inf) == ["SqrtBackward0"]
    assert call.first_sampled is None  # three values: nothing sampled


def test_two_losses_of_one_forward_are_not_unscaled_micro_batches(record, write_script):
    """A language-model loss and a router's auxiliary loss backpropagated one after the other over
    the same forward (retain_graph) add up as they should: dividing them, as the micro-batch
    finding says, would halve both gradients."""
    run = record(write_script(
        "import torch\n"
        "lin = torch.nn.Linear(4, 2)\n"
        "opt = torch.optim.SGD(lin.parameters(), lr=0.1)\n"
        "for step in range(2):\n"
        "    out = lin(torch.randn(3, 4))\n"
        "    lm, aux = out.pow(2).mean(), out.abs().mean()\n"
        "    opt.zero_grad()\n"
        "    lm.backward(retain_graph=True)\n"
        "    aux.backward()\n"
        "    opt.step()\n"))
    assert [c.ok for c in run.backwards.values()] == [True] * 4
    assert not [f for f in diagnose(run) if f.code == "unscaled-accumulation"]


def test_eval_between_training_steps_under_no_grad_is_not_a_finding(record, write_script):
    """model.eval() for an evaluation under inference_mode, then train() for the next step: the
    training steps' graphs (a checkpoint's recompute inside backward among them) came after the
    first eval() and were taken for graphs recorded in eval mode."""
    run = record(write_script(
        "import torch\n"
        "from torch.utils.checkpoint import checkpoint\n"
        "model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(2):\n"
        "    model.train()\n"
        "    loss = checkpoint(model, torch.randn(3, 4), use_reentrant=False).pow(2).mean()\n"
        "    opt.zero_grad()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    model.eval()\n"
        "    with torch.inference_mode():\n"
        "        model(torch.randn(3, 4))\n"))
    assert any(op.get("recompute") is not None for _, op in run.ops)
    assert [ev["type"] for _, ev in run.events.where({"module_mode"})] == ["Sequential"] * 4
    assert not [f for f in diagnose(run) if f.code == "eval-is-not-no-grad"]


def test_a_frozen_parameter_whose_grad_is_read_is_not_a_finding(record, write_script):
    """clip_grad_norm_ reads every parameter's .grad: a layer frozen on purpose
    (requires_grad_(False)) was reported as "created with requires_grad=False", with the fix of
    unfreezing it. A plain tensor made without requires_grad still is."""
    run = record(write_script(
        "import torch\n"
        "model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 1))\n"
        "model[0].requires_grad_(False)\n"
        "w = torch.randn(4)\n"
        "model(torch.randn(3, 4) * w).sum().backward()\n"
        "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "print(w.grad)\n"))
    found = [(f.code, f.title.split(".grad")[0]) for f in diagnose(run) if f.code.startswith("grad-none")]
    assert found == [("grad-none-no-requires-grad", "w")]


def test_a_missing_zero_grad_is_found_when_gradients_are_clipped(record, write_script):
    """clip_grad_norm_ writes into every .grad after backward: the ledger's entry between two
    accumulations hid the missing zero_grad of the usual transformer training loop."""
    run = record(write_script(
        "import torch\n"
        "lin = torch.nn.Linear(4, 1)\n"
        "opt = torch.optim.SGD(lin.parameters(), lr=0.1)\n"
        "for step in range(3):\n"
        "    lin(torch.randn(3, 4)).pow(2).mean().backward()\n"
        "    torch.nn.utils.clip_grad_norm_(lin.parameters(), 1.0)\n"
        "    opt.step()\n"))
    assert any(e.how == "in_place" for entries in run.grads.values() for e in entries)
    assert [f.line for f in diagnose(run) if f.code == "no-zero-grad"] == [7]


def test_a_counter_a_checkpoint_recomputes_is_not_a_batchnorm(record, write_script):
    """Only a norm layer's running statistics make the checkpointed-BatchNorm finding; a module's
    own counter updated in its forward (recomputed too) is another story."""
    run = record(write_script(
        "import torch\n"
        "from torch.utils.checkpoint import checkpoint\n"
        "class Counting(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.lin = torch.nn.Linear(4, 4)\n"
        "        self.register_buffer('calls', torch.zeros((), dtype=torch.long))\n"
        "    def forward(self, x):\n"
        "        self.calls.add_(1)\n"
        "        return self.lin(x)\n"
        "block = Counting()\n"
        "checkpoint(block, torch.randn(2, 4), use_reentrant=False).sum().backward()\n"))
    assert any(op.get("recompute") is not None and op["op"] == "add_" for _, op in run.ops)
    assert not [f for f in diagnose(run) if f.code == "checkpoint-recomputes-batchnorm"]
