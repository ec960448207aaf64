"""Capture must not change what it measures: lifetimes, gradients and error messages."""

from __future__ import annotations

import gc
import json

import pytest
import torch
from torch.multiprocessing.reductions import StorageWeakRef

from graphview.capture.recorder import Recorder


def _in_place_cases():
    def saved_output():
        p = torch.ones(3, requires_grad=True)
        q = p.exp()
        q += 1
        q.sum().backward()

    def saved_input_regraded():
        p = torch.ones(3, requires_grad=True)
        a = p * 2
        b = a * a
        a.add_(1)
        b.sum().backward()

    def sigmoid_2d():
        p = torch.ones(2, 3, requires_grad=True)
        q = p.sigmoid()
        q.mul_(2)
        q.sum().backward()

    def leaf_without_grad():
        x = torch.ones(3, requires_grad=True)
        y = torch.ones(3)
        z = x * y
        y.add_(1)
        z.sum().backward()

    def through_a_view():
        p = torch.ones(4, requires_grad=True)
        h = p * 1
        v = h[:2]
        w = v * v
        v.mul_(10)
        w.sum().backward()

    def leaf_in_place():
        w = torch.ones(2, requires_grad=True)
        w.add_(1)

    return [saved_output, saved_input_regraded, sigmoid_2d, leaf_without_grad, through_a_view, leaf_in_place]


def _message(fn) -> str | None:
    try:
        fn()
    except RuntimeError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("case", _in_place_cases(), ids=lambda f: f.__name__)
def test_in_place_errors_identical_under_recording(case, tmp_path):
    plain = _message(case)
    assert plain is not None, "the case must fail in plain torch"
    with Recorder(lambda e: None, str(tmp_path / "none.py")):
        recorded = _message(case)
    assert recorded == plain


def _lesson_program():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 2))
    x = torch.randn(4, 5)
    y = torch.randint(0, 2, (4,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward(retain_graph=True)
    loss.backward()
    w = torch.tensor(3.0, requires_grad=True)
    g = torch.autograd.grad(w ** 3, w, create_graph=True)[0]
    g2 = torch.autograd.grad(g, w)[0]
    return [p.grad.clone() for p in model.parameters()] + [g.detach(), g2]


def test_gradients_identical_under_recording(tmp_path):
    plain = _lesson_program()
    with Recorder(lambda e: None, str(tmp_path / "none.py")):
        recorded = _lesson_program()
    for a, b in zip(plain, recorded):
        assert torch.equal(a, b)


def _lifetimes(record: bool, tmp_path):
    """Which storages are alive at four checkpoints, for a script-like sequence of ops."""
    gc.disable()
    states = []
    recorder = Recorder(lambda e: None, str(tmp_path / "none.py")) if record else None
    try:
        if recorder:
            recorder.__enter__()
        x = torch.randn(64, 256)
        lin1, lin2 = torch.nn.Linear(256, 512), torch.nn.Linear(512, 10)
        h1 = lin1(x)
        h2 = torch.relu(h1)
        out = lin2(h2).pow(2).mean()
        refs = {name: StorageWeakRef(t.untyped_storage()) for name, t in (("h1", h1), ("h2", h2))}
        abandoned = torch.randn(100, requires_grad=True).exp()
        refs["abandoned"] = StorageWeakRef(abandoned.untyped_storage())
        del h1, h2, abandoned
        states.append({k: not r.expired() for k, r in refs.items()})
        out.backward()
        states.append({k: not r.expired() for k, r in refs.items()})
        del out
        states.append({k: not r.expired() for k, r in refs.items()})
    finally:
        if recorder:
            recorder.__exit__(None, None, None)
        gc.enable()
    return states


def test_storage_lifetimes_identical_under_recording(tmp_path):
    assert _lifetimes(True, tmp_path) == _lifetimes(False, tmp_path)


def test_events_hold_no_tensors_or_nodes(tmp_path, record):
    from tests.conftest import model

    run = record(model("mlp_optimizer"), steps=2)
    for event in run.events:
        json.dumps(event)  # plain data only: this raises on a tensor or a node


def test_recorder_removes_every_patch(tmp_path):
    engine = torch.autograd._engine_run_backward
    apply = torch.autograd.Function.__dict__["apply"]
    zero = torch.optim.Optimizer.zero_grad
    with Recorder(lambda e: None, str(tmp_path / "none.py")):
        assert torch.autograd._engine_run_backward is not engine
    assert torch.autograd._engine_run_backward is engine
    assert torch.autograd.graph._engine_run_backward is engine
    assert torch.autograd.Function.__dict__["apply"] is apply
    assert torch.optim.Optimizer.zero_grad is zero
    assert not torch.overrides._is_torch_function_mode_enabled()


def test_private_apis_we_rely_on_exist():
    """Pin the private torch names capture depends on, so an upgrade that moves one fails here."""
    import torch.autograd.graph as g

    assert callable(g._engine_run_backward)
    assert callable(torch._C._current_autograd_node)
    y = torch.ones(1, requires_grad=True) * 2
    assert isinstance(y.grad_fn._sequence_nr(), int)
    assert any(a.startswith("_raw_saved_") for a in dir(y.grad_fn))
    # a non-reentrant checkpoint's recompute keeps its tensors through these hooks (see hooks/saved.py)
    import torch.utils.checkpoint as checkpoint

    assert callable(checkpoint._recomputation_hook(lambda: None, 0).pack_hook)


def test_user_hooks_show_in_the_recorded_gradient_flow(record, write_script):
    """A tensor hook that rescales a gradient: the recorded flow is what the engine really passed."""
    from graphview.core.events import summary_scalar  # noqa: F401

    run = record(write_script(
        "import torch\n"
        "w = torch.tensor([1., 2., 3.], requires_grad=True)\n"
        "h = w * 2\n"
        "h.register_hook(lambda g: g * 10)\n"
        "(h ** 2).sum().backward()\n"
    ))
    call = run.backwards[1]
    mul = next(v for v in call.order if run.op_nodes[v].name == "MulBackward0")
    assert call.grads_in[mul][0]["values"] == [40.0, 80.0, 120.0]
    assert run.grad_values(run.tensor_by_name("w"))[-1]["values"] == [80.0, 160.0, 240.0]


def test_failing_optimizer_step_does_not_stop_recording(record, write_script):
    run = record(write_script(
        "import torch\n"
        "w = torch.ones(2, requires_grad=True)\n"
        "opt = torch.optim.LBFGS([w])\n"
        "def closure():\n"
        "    raise ValueError('no')\n"
        "try:\n"
        "    opt.step(closure)\n"
        "except ValueError:\n"
        "    pass\n"
        "(w * w).sum().backward()\n"
    ))
    assert len(run.backwards) == 1 and run.grad_values(run.tensor_by_name("w"))[-1]["values"] == [2.0, 2.0]


def test_names_come_from_the_caller_not_the_callee(record, write_script):
    run = record(write_script(
        "import torch\n"
        "def f(t):\n"
        "    u = t.sin()\n"
        "    return u.cos()\n"
        "inp = torch.ones(2, requires_grad=True)\n"
        "out = f(inp)\n"
    ))
    names = {info.get("name") for info in run.tensors.values()}
    assert {"inp", "u", "out"} <= names and "t" not in names


def test_a_tensor_taken_from_a_list_or_dict_is_named_by_it(record, write_script):
    """Micro-batches taken from a list (``model(feats[micro])``) were all called "tensor"; a
    variable's own name still comes first, and a long list is not looked into."""
    run = record(write_script(
        "import torch\n"
        "lin = torch.nn.Linear(4, 1)\n"
        "feats = [torch.randn(2, 4) for _ in range(2)]\n"
        "batch = {'ids': torch.randn(2, 4)}\n"
        "pair = [first := torch.randn(2, 4), torch.randn(2, 4)]\n"
        "many = [torch.randn(2, 4) for _ in range(40)]\n"
        "for micro in range(2):\n"
        "    lin(feats[micro]).sum().backward()\n"
        "lin(batch['ids']).sum().backward()\n"
        "lin(many[5]).sum().backward()\n"
        "lin(pair[0]).sum().backward()\n"
    ))
    names = {info.get("name") for info in run.tensors.values()}
    assert {"feats[0]", "feats[1]", "batch['ids']", "first", "pair[1]"} <= names
    assert "pair[0]" not in names and not any(n and n.startswith("many[") for n in names)


def test_a_list_filled_after_it_was_looked_at_still_names_its_tensors(record, write_script):
    """The containers of a scope are found once for as long as its variables hold the same objects
    (graphview/capture/script_names.py): a list empty when first looked at, then filled with no
    variable bound anew, is still looked into."""
    run = record(write_script(
        "import torch\n"
        "lin = torch.nn.Linear(4, 1)\n"
        "feats = []\n"
        "torch.randn(3) * 2\n"  # (an unnamed data tensor: the module's containers are looked at, feats empty)
        "feats.append(torch.randn(2, 4))\n"
        "lin(feats[0]).sum()\n"
    ))
    assert "feats[0]" in {info.get("name") for info in run.tensors.values()}


def test_detach_at_an_op_returning_a_structseq(record, write_script):
    run = record(write_script(
        "import torch\n"
        "x = torch.randn(3, 4, requires_grad=True)\n"
        "r = x.max(dim=0)\n"
        "print(r.values.requires_grad)\n"
    ), detach_at=["line:3"])
    assert run.status == "ok"
    assert "".join(e["text"] for e in run.events if e["ev"] == "stdout").strip() == "False"


def test_batchnorm_statistics_count_as_activations(record, write_script):
    run = record(write_script(
        "import torch\n"
        "bn = torch.nn.BatchNorm1d(4)\n"
        "x = torch.randn(8, 4)\n"
        "y = bn(x).sum()\n"
    ))
    kinds = {(s.attr, s.kind) for s in run.saved.values()}
    assert ("input", "input") in kinds  # x itself
    assert {k for a, k in kinds if a in ("result1", "result2")} == {"activation"}


def test_histograms_of_parameters_and_grads_equal_torch_histc(record, write_script):
    """Parameters, their .grad and their values after an optimizer step carry a histogram:
    the counts torch.histc gives over [min, max] of the same tensor."""
    from graphview.capture.summaries import HIST_BINS

    keep: dict = {}
    path = write_script(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "fc = torch.nn.Linear(32, 16)\n"
        "before = fc.weight.detach().clone()\n"
        "opt = torch.optim.SGD(fc.parameters(), lr=0.5)\n"
        "loss = fc(torch.randn(8, 32)).pow(2).sum()\n"
        "loss.backward()\n"
        "grad = fc.weight.grad.detach().clone()\n"
        "opt.step()\n"
        "after = fc.weight.detach().clone()\n"
    )
    run = record(path, keep=keep)
    tid = next(t for t, info in run.tensors.items() if info.get("name") == "fc.weight")

    def histc(t):
        return [int(c) for c in torch.histc(t, bins=HIST_BINS, min=t.min().item(), max=t.max().item())]

    import torch

    first = next(ev for ev in run.events if ev["ev"] == "tensor" and ev["tid"] == tid)
    assert first["stats"]["hist"] == histc(keep["before"])
    assert sum(first["stats"]["hist"]) == 32 * 16
    accumulate = next(ev for ev in run.events if ev["ev"] == "accumulate" and ev["tid"] == tid)
    assert accumulate["grad"]["stats"]["hist"] == histc(keep["grad"])
    stepped = next(ev for ev in run.events if ev["ev"] == "value" and ev["tid"] == tid)
    assert stepped["stats"]["hist"] == histc(keep["after"])
    # a large tensor is binned from every k-th value: the counts of torch.histc over that sample
    from graphview.capture.summaries import HIST_SAMPLE_MAX, summarize

    big = torch.randn(300, 200)
    summary = summarize(big, hist=True)["stats"]
    stride = -(-big.numel() // HIST_SAMPLE_MAX)
    sample = big.reshape(-1)[::stride]
    assert summary["hist_of"] == sample.numel() < big.numel()
    assert summary["hist"] == [int(c) for c in torch.histc(sample, bins=HIST_BINS, min=summary["min"], max=summary["max"])]
    # activations stay cheap: no histogram
    assert not any("hist" in (ev.get("stats") or {}) for ev in run.events if ev["ev"] == "tensor" and ev["kind"] == "activation")



def test_accumulations_that_leave_values_out_still_say_torchs_values(record, write_script):
    """An accumulate event leaves out the increment its bw_node showed arriving and, when .grad was
    None, a small .grad that is that very tensor: Run still gives torch's values, bit for bit."""
    import torch

    path = write_script(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "fc = torch.nn.Linear(16, 8)\n"
        "x = torch.randn(4, 16)\n"
        "fc(x).square().sum().backward()\n"
        "first = {n: p.grad.clone() for n, p in fc.named_parameters()}\n"
        "fc(x).pow(3).sum().backward()\n"
        "second = {n: p.grad.clone() for n, p in fc.named_parameters()}\n"
    )
    keep: dict = {}
    run = record(path, keep=keep)
    bias = next(t for t, info in run.tensors.items() if info.get("name") == "fc.bias")
    weight = next(t for t, info in run.tensors.items() if info.get("name") == "fc.weight")
    raw = [ev for ev in run.events if ev["ev"] == "accumulate" and ev["tid"] == bias]
    assert "increment" not in raw[0] and "grad" not in raw[0]  # both are the gradient that arrived
    assert "increment" not in raw[1] and "grad" in raw[1]  # the sum is a new value
    first, second = keep["first"], keep["second"]
    entries = run.grads[bias]
    assert entries[0].value["values"] == first["bias"].tolist() == entries[0].increment["values"]
    assert entries[1].value["values"] == second["bias"].tolist()
    assert entries[1].increment["values"] == (second["bias"] - first["bias"]).tolist() or torch.equal(
        torch.tensor(entries[1].increment["values"]) + first["bias"], second["bias"])
    weights = run.grads[weight]
    assert weights[1].value["stats"]["min"] == second["weight"].min().item()
    assert weights[0].increment["stats"]["norm"] > 0 and "hist" in weights[0].value["stats"]


def test_graphview_reading_a_steps_loss_is_none_of_the_scripts_ops(record):
    """A step script's loss is read back for its step_end (its value): those reads (detach,
    reshape, tolist) are graphview's, not the script's, and were recorded as ops with no line
    after each optimizer step (one also drew a detached tensor)."""
    from tests.conftest import model

    run = record(model("mlp_optimizer"), steps=2)
    between = []
    for index, ev in enumerate(run.events):
        if ev["ev"] == "optimizer_step":
            after = index
        elif ev["ev"] == "step_end":
            between += [e for e in run.events[after:index] if e["ev"] in ("op", "detach", "tensor")]
    assert between == []
    assert all(e["line"] is not None for e in run.events if e["ev"] == "op")
    # the value is still read: step() returned the loss
    assert all(e["result"] and e["result"]["values"] for e in run.events if e["ev"] == "step_end")


def test_grads_changed_in_place_by_unscaling_and_clipping_are_the_ledgers_values(record, write_script):
    """GradScaler's unscale, clip_grad_norm_ and clip_grad_value_ write into ``.grad`` with ops
    that return nothing or whose names start with ``_`` (``_amp_foreach_..._``, ``_foreach_mul_``):
    the ledger kept the gradient before them, 2x or 1024x what the optimizer used. After each line,
    the ledger's value is torch's, which the script itself copies."""
    path = write_script(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "lin = torch.nn.Linear(4, 2)\n"
        "scaler = torch.amp.GradScaler('cpu', init_scale=1024.0)\n"
        "opt = torch.optim.SGD(lin.parameters(), lr=0.1)\n"
        "seen = {}\n"
        "scaler.scale(lin(torch.randn(3, 4)).pow(2).sum() * 10).backward()\n"
        "seen[7] = lin.bias.grad.clone()\n"
        "scaler.unscale_(opt)\n"
        "seen[9] = lin.bias.grad.clone()\n"
        "torch.nn.utils.clip_grad_norm_(lin.parameters(), 1.0)\n"
        "seen[11] = lin.bias.grad.clone()\n"
        "lin.bias.grad.mul_(0.5)\n"
        "seen[13] = lin.bias.grad.clone()\n"
        "torch.nn.utils.clip_grad_value_(lin.parameters(), 0.01)\n"
        "seen[15] = lin.bias.grad.clone()\n")
    scope: dict = {}
    run = record(path, keep=scope)
    bias = next(tid for tid in run.grads if run.tensor_name(tid) == "lin.bias")
    entries = run.grads[bias]
    for line in (9, 11, 13, 15):
        last = [e for e in entries if run.events[e.index].get("line") == line][-1]
        assert last.how == "in_place"
        assert last.value["values"] == scope["seen"][line].tolist()
    # each is a change of its own: the one before it differs
    values = [tuple(scope["seen"][line].tolist()) for line in (7, 9, 11, 13, 15)]
    assert len(set(values)) == 5


def test_an_optimizer_step_fused_into_backward_comes_after_the_accumulation(record, write_script):
    """A post-accumulate-grad hook (each parameter stepped and zeroed as its gradient arrives) ran
    before graphview told the accumulation: the ledger read ``.grad`` None after every backward.
    Now the accumulation comes first, with the gradient the hook got (which the hook copies)."""
    path = write_script(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))\n"
        "opts = {p: torch.optim.SGD([p], lr=0.1) for p in m.parameters()}\n"
        "got = []\n"
        "def hook(p):\n"
        "    got.append((p, p.grad.clone()))\n"
        "    opts[p].step(); opts[p].zero_grad()\n"
        "for p in m.parameters():\n"
        "    p.register_post_accumulate_grad_hook(hook)\n"
        "for it in range(2):\n"
        "    m(torch.randn(5, 4)).pow(2).mean().backward()\n")
    scope: dict = {}
    run = record(path, keep=scope)
    names = {id(p): name for name, p in scope["m"].named_parameters()}
    for tid, entries in run.grads.items():
        name = run.tensor_name(tid).removeprefix("m.")
        got = [g for p, g in scope["got"] if names[id(p)] == name]
        assert [e.how for e in entries] == ["accumulate", "set_to_none"] * 2
        assert len(got) == 2
        for entry, grad in zip(entries[::2], got):
            assert entry.value["values"] == grad.reshape(-1).tolist()
            # the step the hook made comes after the accumulation it stepped with
            step = next(i for i, ev in run.events.where({"optimizer_step"}, entry.index) if tid in ev["tids"])
            assert entry.index < step


def test_a_sparse_gradient_says_its_values(record, write_script):
    """``Embedding(sparse=True)``'s gradient is a sparse tensor: its summary held only its size
    ("[400 values: ]"). Its statistics are those of every element, the zeros it does not store
    included, as torch's dense form of it has them."""
    path = write_script(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "emb = torch.nn.Embedding(50, 8, sparse=True)\n"
        "emb(torch.tensor([[1, 2, 2, 7]])).pow(2).sum().backward()\n")
    scope: dict = {}
    run = record(path, keep=scope)
    [(tid, entries)] = run.grads.items()
    stats = entries[-1].value["stats"]
    dense = scope["emb"].weight.grad.to_dense()
    assert stats["nnz"] == 3 * 8 and stats["numel"] == dense.numel()
    assert (stats["min"], stats["max"]) == (dense.min().item(), dense.max().item())
    assert stats["norm"] == pytest.approx(dense.norm().item(), rel=1e-6)
    assert stats["mean"] == pytest.approx(dense.mean().item(), rel=1e-6)


def test_a_fused_step_still_gets_the_gradient_torch_would_take(record, write_script):
    """AccumulateGrad takes the incoming gradient itself as a new ``.grad`` when nothing else
    holds it; graphview holding it while a post-accumulate-grad hook ran made torch copy it."""
    path = write_script(
        "import torch\n"
        "w = torch.nn.Parameter(torch.randn(1000))\n"
        "same = []\n"
        "def hook(p):\n"
        "    same.append(p.grad.data_ptr() == arrived[0])\n"
        "arrived = []\n"
        "w.register_post_accumulate_grad_hook(hook)\n"
        "y = (w * 2).sum()\n"
        "y.grad_fn.next_functions[0][0].register_hook(lambda gi, go: arrived.append(gi[0].data_ptr()))\n"
        "y.backward()\n")
    scope: dict = {}
    run = record(path, keep=scope)
    assert run.status == "ok" and scope["same"] == [True]
