"""The recorder's own work: unseen by the script, as true as torch's own numbers, never slower
for being shared."""

from __future__ import annotations

import gc
import runpy

import torch

from graphview.capture.summaries import HIST_BINS, HIST_SAMPLE_MAX, LightSummaries, summarize

COUNTING_MODE = """
import torch
from torch.overrides import TorchFunctionMode

calls = []


class Count(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        calls.append(getattr(func, "__name__", type(func).__name__))
        return func(*args, **(kwargs or {}))


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
with Count():
    loss = model(torch.randn(3, 4)).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""


def test_a_scripts_own_torch_function_mode_sees_the_calls_of_a_plain_run(record, write_script):
    """The recorder's reads (module, optimizer and backward hooks, value summaries) bypass torch
    function handling: a mode the script enters sees exactly what it sees unrecorded."""
    path = write_script(COUNTING_MODE)
    plain = runpy.run_path(path, run_name="__main__")["calls"]
    keep: dict = {}
    run = record(path, keep=keep)
    assert run.status == "ok"
    assert keep["calls"] == plain
    assert plain.count("linear") == 2 and "relu" in plain  # the mode did see the script's calls
    assert [op["op"] for _, op in run.ops][:4] == ["randn", "linear", "relu", "linear"]


def _histc(values: torch.Tensor, lo: float, hi: float) -> list[int]:
    return [int(c) for c in torch.histc(values, bins=HIST_BINS, min=lo, max=hi)]


def test_histograms_equal_torch_histc_on_bin_edges_and_every_dtype():
    """CPU histograms are NumPy's, by torch.histc's arithmetic: values on bin edges (integers,
    a linspace), float64, half, bfloat16, integer and bool tensors, a transposed view and a
    sampled large tensor bin exactly as torch.histc bins them."""
    torch.manual_seed(0)
    cases = [
        torch.arange(1000, dtype=torch.float32) * 3 - 700,
        torch.linspace(-1.3, 2.7, 4801),
        torch.randint(-50, 50, (5000,)).to(torch.float64),
        torch.rand(3000) * 1e-3 + 1.0,
        torch.randn(80, 60).t(),
        torch.randn(4000).half(),
        torch.randn(4000).bfloat16(),
        torch.randint(-5, 9, (3000,)),
        torch.rand(2000) > 0.3,
        torch.randn(400, 300),  # sampled: every k-th value
    ]
    for t in cases:
        stats = summarize(t, hist=True)["stats"]
        flat = t.reshape(-1)
        stride = max(1, -(-flat.numel() // HIST_SAMPLE_MAX))
        sample = flat[::stride]
        if sample.dtype in (torch.half, torch.bfloat16, torch.bool):
            sample = sample.float()  # as graphview bins them: in float32
        elif not sample.is_floating_point():
            sample = sample.double()
        whole = flat.float() if flat.dtype in (torch.half, torch.bfloat16, torch.bool) else flat
        assert stats["min"] == whole.min().item() and stats["max"] == whole.max().item()
        assert stats["hist"] == _histc(sample, stats["min"], stats["max"]), t.dtype
        assert sum(stats["hist"]) == sample.numel()
        assert stats.get("hist_of", flat.numel()) == sample.numel()


def test_light_summaries_are_shared_only_by_the_same_values():
    """A backward call's light summary of a view over the same memory is the norm of the values;
    a change in place, a different tensor in reused memory and a strided view are summarized
    anew, each equal to summarizing it directly."""
    light = LightSummaries()
    g = torch.randn(128, 96)
    direct = summarize(g, light=True)
    assert light.summary(g) == direct
    transposed = light.summary(g.t())
    assert transposed["shape"] == [96, 128]
    assert transposed["stats"] == direct["stats"]
    assert light.summary(g.view(-1))["stats"] == direct["stats"]
    every_other = g[:, ::2]  # not dense: other values, its own norm
    assert light.summary(every_other) == summarize(every_other, light=True)
    assert light.summary(every_other)["stats"]["norm"] < direct["stats"]["norm"]
    g.mul_(2)  # same memory, new version
    doubled = light.summary(g)
    assert abs(doubled["stats"]["norm"] - 2 * direct["stats"]["norm"]) < 1e-3 * direct["stats"]["norm"]
    for _ in range(20):  # freed memory, likely reused by the next tensor of that size
        del g
        gc.collect()
        g = torch.randn(128, 96) * 5
        assert light.summary(g) == summarize(g, light=True)


def test_summaries_of_extreme_values_warn_nothing(recwarn):
    """graphview's own sums and norms never put a floating-point warning in the script's output."""
    for t in (torch.full((20000,), 3e38), torch.tensor([3e38, -3e38] * 100),
              torch.tensor([float("inf"), -float("inf"), 1.0] * 40), torch.full((300,), 1e308, dtype=torch.float64)):
        assert summarize(t, hist=True)["stats"]["numel"] == t.numel()
        assert summarize(t, light=True)["stats"]["norm"] == "inf"
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def _sample_as_graphview_reads_it(t: torch.Tensor) -> torch.Tensor:
    """SAMPLE_RUNS runs of SAMPLE_RUN consecutive values, evenly spaced over ``t``'s memory."""
    from graphview.capture.summaries import SAMPLE_RUN, SAMPLE_RUNS

    step = (t.numel() - SAMPLE_RUN) // (SAMPLE_RUNS - 1)
    flat = t.detach().as_strided((t.numel(),), (1,), t.storage_offset())  # its memory, in order
    return torch.cat([flat[i * step:i * step + SAMPLE_RUN] for i in range(SAMPLE_RUNS)])


def test_a_large_tensor_is_summarized_from_a_sample_that_says_so():
    """Above SAMPLE_ABOVE values the statistics are those torch computes on the sampled runs (the
    norm scaled to the whole tensor), they say how many values they saw, and for a tensor of
    random values they are close to the whole tensor's."""
    from graphview.capture.summaries import SAMPLE_ABOVE, SAMPLE_RUN, SAMPLE_RUNS

    torch.manual_seed(0)
    big = torch.randn(32, 64, 1024) * 3 + 1
    assert big.numel() > SAMPLE_ABOVE
    for t in (big, big.transpose(0, 2)):  # a permuted view covers the same memory: the same sample
        stats = summarize(t)["stats"]
        sample = _sample_as_graphview_reads_it(big)
        assert stats["sampled"] == sample.numel() == SAMPLE_RUNS * SAMPLE_RUN
        assert stats["numel"] == big.numel()
        assert stats["min"] == sample.min().item() and stats["max"] == sample.max().item()
        assert abs(stats["mean"] - sample.double().mean().item()) < 1e-6
        scaled = sample.double().norm().item() * (big.numel() / sample.numel()) ** 0.5
        assert abs(stats["norm"] - scaled) < 1e-6 * scaled
        # random values: the sample tells the whole tensor's mean and norm closely
        assert abs(stats["mean"] - big.mean().item()) < 0.05
        assert abs(stats["norm"] / big.norm().item() - 1) < 0.01
        light = summarize(t, light=True)["stats"]
        assert light["sampled"] == sample.numel() and abs(light["norm"] - scaled) < 1e-6 * scaled


def test_a_nan_in_the_sample_is_counted_and_the_text_says_sampled():
    from graphview.core.events import summary_text

    t = torch.randn(600, 1000)
    t[0, 5] = float("nan")  # inside the first run
    summary = summarize(t)
    assert summary["stats"]["nan"] == 1 and summary["stats"]["sampled"] > 0
    text = summary_text(summary)
    assert "a sample of 65536" in text and "nan=1 in the sample" in text and "mean≈" in text
    assert "sample min=" in text and "sample max=" in text  # the sample's own extremes, not estimates


def test_small_strided_and_expanded_tensors_are_summarized_exactly():
    """A tensor at most SAMPLE_ABOVE values, a strided slice (not dense) and an expanded tensor
    (stride 0: its values read once, the norm and the histogram scaled by the repeat) are exact."""
    from graphview.capture.summaries import SAMPLE_ABOVE

    torch.manual_seed(1)
    small = torch.randn(SAMPLE_ABOVE)
    strided = torch.randn(1200, 1000)[:, ::2]
    expanded = torch.randn(32, 1, 300).expand(32, 64, 300)
    for t in (small, strided, expanded):
        stats = summarize(t, hist=True)["stats"]
        assert "sampled" not in stats
        assert stats["min"] == t.min().item() and stats["max"] == t.max().item()
        assert abs(stats["mean"] - t.double().mean().item()) < 1e-5
        assert abs(stats["norm"] / t.double().norm().item() - 1) < 1e-5
        assert sum(stats["hist"]) == stats.get("hist_of", t.numel())
    stats = summarize(expanded, hist=True)["stats"]  # each distinct value counted as often as it appears
    assert "hist_of" not in stats and stats["hist"] == _histc(expanded.contiguous(), stats["min"], stats["max"])
    ones = torch.ones(()).expand(2048, 1024)  # the gradient of a sum: one value, repeated
    stats = summarize(ones, hist=True)["stats"]
    assert stats["hist"][0] == ones.numel() and stats["norm"] == ones.numel() ** 0.5


def test_parameters_inputs_and_grads_are_never_sampled():
    """The summaries with a histogram (parameters, inputs, .grad) are exact at any size: an
    embedding's gradient, a few non-zero rows among 50,000, reads as it is; a single Inf shows."""
    torch.manual_seed(2)
    emb = torch.nn.Embedding(50000, 64)
    emb(torch.randint(0, 50000, (4, 8))).pow(2).sum().backward()
    grad = emb.weight.grad
    stats = summarize(grad, hist=True)["stats"]
    assert "sampled" not in stats
    assert stats["min"] == grad.min().item() and stats["max"] == grad.max().item()
    assert abs(stats["norm"] / grad.double().norm().item() - 1) < 1e-6
    weight = torch.rand(600, 1000)
    weight[300, 500] = float("inf")
    assert summarize(weight, hist=True)["stats"]["inf"] == 1


def test_the_gradient_sent_into_a_leaf_is_summarized_exactly_as_its_grad_is(record, write_script):
    """A gradient of more than 2^18 values on its way is summarized from a sample, but the one a
    node sends into a leaf's AccumulateGrad is the leaf's new .grad: exact, so the two agree."""
    run = record(write_script(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "w = torch.randn(600, 1000, requires_grad=True)\n"
        "loss = (w * 3).tanh().sum()\n"
        "loss.backward()\n"))
    call = next(iter(run.backwards.values()))
    names = {vid: run.op_nodes[vid].name for vid in call.order}
    mul = next(vid for vid, name in names.items() if name == "MulBackward0")
    tanh = next(vid for vid, name in names.items() if name == "TanhBackward0")
    assert "sampled" in call.grads_out.get(tanh)[0]["stats"]  # on its way: a sample
    into_leaf = call.grads_out.get(mul)[0]["stats"]
    assert "sampled" not in into_leaf
    grad = run.grads[next(t for t, i in run.tensors.items() if i.get("name") == "w")][-1].value["stats"]
    assert abs(into_leaf["norm"] / grad["norm"] - 1) < 1e-6


def test_a_grad_that_is_the_gradient_it_received_is_read_once_less_and_says_the_same(record, write_script,
                                                                                   monkeypatch):
    """AccumulateGrad keeps the very tensor it received as a leaf's first .grad: the norm its
    bw_node event read a moment ago is that .grad's, not computed again (the other statistics and
    the histogram are); every number is what summarizing the .grad afresh gives, and torch's."""
    from graphview.capture import summaries
    from graphview.core import value_stats

    passes = []
    real = value_stats._einsum_square
    monkeypatch.setattr(value_stats, "_einsum_square", lambda a: passes.append(a.size) or real(a))
    keep: dict = {}
    run = record(write_script(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "w = torch.randn(300, 200, requires_grad=True)\n"
        "(w * 3).tanh().sum().backward()\n"), keep=keep)
    # w's values as the op read it, the gradient out of tanh, the one into w: not again for w.grad
    assert passes.count(60_000) == 3
    w = next(t for t, i in run.tensors.items() if i.get("name") == "w")
    shown = run.grads[w][-1].value["stats"]
    grad = keep["w"].grad
    assert shown == summaries.summarize(grad, hist=True)["stats"]
    assert abs(shown["norm"] / torch.linalg.vector_norm(grad.double()).item() - 1) < 1e-6


def test_an_increment_a_tensor_hook_changed_is_summarized_exactly(record, write_script):
    """A leaf's tensor hook hands AccumulateGrad another gradient than its feeder sent: what it
    receives, the increment of .grad, is summarized exactly, as the .grad it goes into."""
    run = record(write_script(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "w = torch.randn(600, 1000, requires_grad=True)\n"
        "w.register_hook(lambda g: g * 2)\n"
        "(w * 3).tanh().sum().backward()\n"))
    tid = next(t for t, i in run.tensors.items() if i.get("name") == "w")
    accumulate = next(ev for _, ev in run.events.where({"accumulate"}) if ev["tid"] == tid)
    increment, grad = run.accumulation(accumulate)
    assert "sampled" not in increment["stats"] and "sampled" not in grad["stats"]
    assert abs(increment["stats"]["norm"] / grad["stats"]["norm"] - 1) < 1e-6


def test_the_gradient_into_a_linear_layers_weight_t_is_exact_as_the_weights_grad(record, write_script):
    """A linear layer multiplies by weight.t(): the gradient AddmmBackward0 sends into TBackward0 is
    the weight's gradient on its way (transposed), summarized exactly as the .grad it becomes: the
    norms along the way agree with the one torch computes for weight.grad."""
    import torch

    source = ("import torch\n"
              "torch.manual_seed(0)\n"
              "layer = torch.nn.Linear(1024, 600)\n"
              "x = torch.randn(8, 1024)\n"
              "layer(x).tanh().sum().backward()\n")
    run = record(write_script(source))
    call = next(iter(run.backwards.values()))
    names = {vid: run.op_nodes[vid].name for vid in call.order}
    addmm = next(vid for vid, name in names.items() if name == "AddmmBackward0")
    t = next(vid for vid, name in names.items() if name == "TBackward0")
    into_t = call.grads_out.get(addmm)[[child for child, _ in run.op_nodes[addmm].next].index(t)]["stats"]
    torch.manual_seed(0)
    layer = torch.nn.Linear(1024, 600)
    layer(torch.randn(8, 1024)).tanh().sum().backward()
    assert "sampled" not in into_t and into_t["numel"] == 600 * 1024
    assert abs(into_t["norm"] / layer.weight.grad.double().norm().item() - 1) < 1e-6


def test_the_gradient_into_an_embedding_lookup_is_still_sampled(record, write_script):
    """An embedding lookup's node also feeds one leaf, but what it receives is the output's
    gradient, not the table's .grad on its way: a big one stays sampled."""
    run = record(write_script(
        "import torch\n"
        "emb = torch.nn.Embedding(100, 64)\n"
        "idx = torch.randint(0, 100, (64, 128))\n"
        "(emb(idx) * 2).sum().backward()\n"))
    call = next(iter(run.backwards.values()))
    mul = next(v for v in call.order if run.op_nodes[v].name == "MulBackward0")
    assert (call.grads_out.get(mul)[0].get("stats") or {}).get("sampled")


class _Subclass(torch.Tensor):
    """A tensor subclass: summarized by the general path, never the short one for plain tensors."""


def test_the_short_path_for_plain_cpu_tensors_says_what_the_general_path_says():
    """Plain dense float CPU tensors (contiguous, transposed, sampled, with NaN or Inf, float64, a
    parameter) take a short path: each kind of summary equals the general path's on the same
    values, statistics and histogram, as torch computes them."""
    torch.manual_seed(0)
    tensors = [torch.randn(32, 64), torch.randn(64, 64).t(), torch.randn(700, 700), torch.randn(600, 600).t(),
               torch.randn(100, dtype=torch.float64), torch.nn.Parameter(torch.randn(64, 64)),
               torch.tensor([1.0, float("nan")] * 50), torch.tensor([1.0, float("inf")] * 50), torch.ones(3000),
               torch.arange(24 * 30, dtype=torch.float32)]
    kinds = [{}, {"light": True}, {"norm": False}, {"hist": True}, {"light": True, "exact": True}, {"exact": True}]
    for t in tensors:
        general = t.detach().as_subclass(_Subclass)
        for kind in kinds:
            short, expected = summarize(t, **kind), summarize(general, **kind)
            assert short == expected, (tuple(t.shape), t.dtype, kind)
    stats = summarize(tensors[0], hist=True)["stats"]
    assert stats["hist"] == _histc(tensors[0], stats["min"], stats["max"])
    assert abs(stats["mean"] - tensors[0].mean().item()) < 1e-6 and stats["min"] == tensors[0].min().item()
