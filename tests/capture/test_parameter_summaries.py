"""The parameters' summaries after an optimizer step, computed together
(graphview/capture/parameter_summaries.py), against torch itself: min and max are torch.aminmax's,
the histogram torch.histc's over the same range (of the same every-k-th sample for a large
tensor), the NaN and Inf counts torch.isnan / torch.isinf's, the norm torch's, the mean torch's
within float32 rounding; and everything but the norm is exactly what ``summarize`` says of each
parameter alone."""

from __future__ import annotations

import math

import pytest
import torch

from graphview.capture.parameter_summaries import STACK_MAX, summarize_parameters
from graphview.capture.summaries import HIST_BINS, HIST_SAMPLE_MAX, summarize
from graphview.core.events import FULL_VALUES_MAX
from tests.conftest import tiny_gpt2

_CLEAN = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _number(v):
    return _CLEAN.get(v, v) if isinstance(v, str) else v


def _assert_torch_says(p: torch.Tensor, summary: dict, norm_in_double: bool = False) -> None:
    """``summary`` of parameter ``p`` against torch's own reductions of ``p`` (``norm_in_double``:
    the norm against torch's in double precision, for a tensor whose float32 norm torch itself
    rounds further than that)."""
    p = p.detach()
    assert summary["shape"] == list(p.shape)
    if p.numel() <= FULL_VALUES_MAX:
        assert [_number(v) for v in summary["values"]] == pytest.approx(p.reshape(-1).tolist(), nan_ok=True, rel=0)
        return
    stats = summary["stats"]
    lo, hi = torch.aminmax(p)
    assert (_number(stats["min"]), _number(stats["max"])) == pytest.approx((lo.item(), hi.item()), nan_ok=True, rel=0)
    assert stats["numel"] == p.numel()
    assert stats["nan"] == int(torch.isnan(p).sum()) and stats["inf"] == int(torch.isinf(p).sum())
    # the norm in the parameter's float type, as torch computes it (an Inf where float32 overflows)
    norm = torch.linalg.vector_norm(p.double() if norm_in_double or p.dtype == torch.float64 else p.float()).item()
    assert _number(stats["norm"]) == pytest.approx(norm, rel=2e-6, nan_ok=True)
    mean, spread = p.double().mean().item(), p.double().abs().mean().item()
    if math.isfinite(_number(stats["mean"])) or not math.isfinite(mean):
        assert _number(stats["mean"]) == pytest.approx(mean, abs=1e-6 * spread, nan_ok=True)
    else:  # a sum float32 cannot hold on the way (as the norm's)
        assert p.double().abs().sum().item() > torch.finfo(torch.float32).max
    if not (math.isfinite(lo.item()) and math.isfinite(hi.item())):
        assert "hist" not in stats  # no finite range to bin
        return
    stride = -(-p.numel() // HIST_SAMPLE_MAX)
    sample = p.reshape(-1)[::stride]
    if sample.dtype not in (torch.float32, torch.float64):
        sample = sample.float()
    if (hi.item() - lo.item()) * HIST_BINS >= torch.finfo(sample.dtype).max / 2:
        sample = sample.double()  # a range the float type cannot hold: binned as torch bins it in float64
    if lo == hi:  # (torch.histc would widen the range to [min - 1, max + 1]: graphview draws one full bin)
        assert stats["hist"] == [sample.numel()] + [0] * (HIST_BINS - 1)
    else:
        assert stats["hist"] == [int(c) for c in torch.histc(sample, bins=HIST_BINS, min=lo.item(), max=hi.item())]
    assert stats.get("hist_of", p.numel()) == sample.numel()


def _assert_as_summarize(params: list, summaries: list) -> None:
    """Everything but the norm (NumPy's einsum here, BLAS's dot there: the last bits) as ``summarize``."""
    for p, summary in zip(params, summaries):
        alone = summarize(p, hist=True)
        if "stats" in alone:
            norms = summary["stats"].pop("norm"), alone["stats"].pop("norm")
            assert _number(norms[0]) == pytest.approx(_number(norms[1]), rel=2e-6, nan_ok=True)
        assert summary == alone


def _stepped(model: torch.nn.Module, loss_of) -> list[torch.Tensor]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_of(model).backward()
    optimizer.step()
    return [p for p in model.parameters() if p.grad is not None]


def test_a_deep_mlp_and_gpt2_summarize_as_torch_computes_each_parameter():
    torch.manual_seed(0)
    layers = []
    for _ in range(40):
        layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
    mlp = torch.nn.Sequential(*layers, torch.nn.Linear(64, 10))
    scope: dict = {}
    exec(tiny_gpt2(), scope)
    gpt2, ids = scope["model"], scope["ids"]
    for params in (_stepped(mlp, lambda m: m(torch.randn(8, 64)).square().mean()),
                   _stepped(gpt2, lambda m: m(input_ids=ids, labels=ids).loss)):
        summaries = summarize_parameters(params)
        assert len(summaries) == len(params)
        for p, summary in zip(params, summaries):
            _assert_torch_says(p, summary)
        _assert_as_summarize(params, summaries)


def _odd_parameters() -> list[torch.Tensor]:
    torch.manual_seed(1)
    p = torch.nn.Parameter
    with_nan = torch.randn(32, 16)
    with_nan[3, 5] = math.nan
    with_inf = torch.randn(32, 16)
    with_inf[0, 0], with_inf[1, 1] = math.inf, -math.inf
    edges = torch.arange(-48, 48, dtype=torch.float32).reshape(8, 12) / 4  # values on bin edges
    small_nan = torch.randn(7)
    small_nan[2] = math.nan
    odd = [p(with_nan), p(torch.randn(32, 16)), p(with_inf), p(torch.full((32, 16), 0.25)),
            p(torch.randn(32, 16).half()), p(torch.randn(32, 16).bfloat16()), p(torch.randn(32, 16).double()),
            p(torch.randn(16, 32).t()),  # not contiguous: summarize's own way
            p(torch.randn(300, 200)),  # binned from every k-th value
            p(torch.randn(STACK_MAX + 7)),  # larger than a stack: read in place
            p(torch.tensor([-3e38, 3e38] * 40)),  # a range float32 cannot hold: binned in float64
            p(edges), p(small_nan), p(torch.randn(5)), p(torch.tensor(2.5)), p(torch.randn(5).double()),
            p(torch.randint(0, 9, (40, 3)).float()), p(torch.empty(0, 4)), p(torch.full((70,), -0.0))]
    return odd + [p(q.detach().clone()) for q in odd]  # each shape twice: summarized together


def test_odd_parameters_summarize_as_torch_computes_them():
    params = _odd_parameters()
    summaries = summarize_parameters(params)
    for p, summary in zip(params, summaries):
        if p.numel():
            _assert_torch_says(p, summary)
    _assert_as_summarize(params, summaries)
    nan_stats = summaries[0]["stats"]
    assert nan_stats["min"] == "nan" and nan_stats["nan"] == 1 and "hist" not in nan_stats
    assert summaries[3]["stats"]["hist"] == [32 * 16] + [0] * (HIST_BINS - 1)  # all equal: bin 0
    assert summaries[12]["values"][2] == "nan"


def test_a_step_records_each_stepped_parameter_as_torch_has_it_right_after_step(record, write_script):
    """Through the recorder: one value event a parameter with a gradient (not the frozen group's,
    not a parameter that got none), each with the values the parameter had right after step()."""
    keep: dict = {}
    path = write_script(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "body = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))\n"
        "frozen = torch.nn.Linear(4, 4)\n"
        "unused = torch.nn.Linear(3, 3)\n"
        "half = torch.nn.Linear(4, 40).bfloat16()\n"
        "for q in frozen.parameters():\n"
        "    q.requires_grad_(False)\n"
        "opt = torch.optim.SGD([{'params': body.parameters()}, {'params': frozen.parameters()},\n"
        "                       {'params': unused.parameters()}, {'params': half.parameters()}], lr=0.1)\n"
        "x = torch.randn(8, 16)\n"
        "loss = frozen(body(x)).square().mean() + half(x[:, :4].bfloat16()).float().mean()\n"
        "loss.backward()\n"
        "body[2].bias.grad[1] = float('nan')\n"
        "opt.step()\n"
        "after = {f'{k}.{n}': p.detach().clone() for k, m in (('body', body), ('half', half))\n"
        "         for n, p in m.named_parameters()}\n"
    )
    run = record(path, keep=keep)
    stepped = [ev for ev in run.events if ev["ev"] == "value" and ev.get("reason") == "optimizer"]
    names = [run.tensors[ev["tid"]]["name"] for ev in stepped]
    assert names == ["body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias", "half.weight", "half.bias"]
    for name, ev in zip(names, stepped):
        _assert_torch_says(keep["after"][name], {k: ev[k] for k in ("shape", "values", "stats") if k in ev})
    assert stepped[3]["values"][1] == "nan"


def test_torch_profiler_lists_nothing_of_the_summaries_but_reads():
    """NumPy does the work: torch.profiler sees graphview read each parameter, and no op of its own
    (no stack, cat or norm beside the script's ops)."""
    from torch.profiler import ProfilerActivity, profile

    params = _odd_parameters()[:4] + [torch.nn.Parameter(torch.randn(64, 64)) for _ in range(5)]
    params += [torch.nn.Parameter(torch.randn(64)) for _ in range(5)]
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for p in params:
            summarize_parameters([p])
        summarize_parameters(params)
    # what Tensor.numpy() calls (detach, to, resolve_conj, resolve_neg), as test_inprocess lists them
    reads = {"aten::detach", "detach", "aten::to", "aten::resolve_conj", "aten::resolve_neg"}
    assert {e.key for e in prof.key_averages()} <= reads


def test_large_parameters_read_a_block_at_a_time_say_what_torch_says(monkeypatch):
    """Above BLOCKED_ABOVE values min, max, the sum and the sum of squares are made a block of
    BLOCK values at a time, each block read once (NOTE [Statistics a block at a time] in
    summaries.py): still torch's numbers, with a NaN or an Inf in a middle block or in the last,
    shorter one, in float32 and float64; and the same numbers whether a parameter is summarized
    alone or with the others of its shape."""
    from graphview.capture import parameter_summaries
    from graphview.core import value_stats
    from graphview.core.value_stats import BLOCK, BLOCKED_ABOVE

    blocks_read = []

    def counted(flat, squares):
        blocks_read.append(-(-flat.size // BLOCK))
        return value_stats.blocked_reductions(flat, squares)

    monkeypatch.setattr(parameter_summaries, "blocked_reductions", counted)
    torch.manual_seed(4)
    numel = BLOCKED_ABOVE + 2 * BLOCK + 33  # the last block shorter than the others
    params = []
    for dtype in (torch.float32, torch.float64):
        for where, bad in ((None, 0.0), (BLOCK + 7, math.nan), (numel - 1, math.inf), (3 * BLOCK, -math.inf)):
            values = torch.randn(numel, dtype=dtype) * 2 + 0.25
            if where is not None:
                values[where] = bad
            params.append(torch.nn.Parameter(values))
    summaries_together = summarize_parameters(params)
    assert blocks_read == [-(-numel // BLOCK)] * len(params)  # each read a block at a time
    for p, summary in zip(params, summaries_together):  # (closer to the exact norm than torch's float32 one)
        _assert_torch_says(p, summary, norm_in_double=True)
    _assert_as_summarize(params, summaries_together)
    assert [s["stats"]["nan"] for s in summaries_together] == [0, 1, 0, 0] * 2
    assert [s["stats"]["inf"] for s in summaries_together] == [0, 0, 1, 1] * 2


@pytest.mark.parametrize("numel", [1 << 16, 3 * (1 << 20) + 5])
def test_a_large_tensors_norm_is_torchs_in_double_precision(numel):
    """Large norms are BLAS dot products of rows added in double precision (NOTE [Sums of squares by
    rows] in summaries.py): a gradient's light summary, a tensor's full one and the blocked one of a
    tensor larger than the cache give torch's norm in double precision to within 2e-8 of it (one
    float32 einsum over 3M values was 1e-7 to 3e-7 off), and an overflowing sum still warns nothing."""
    import warnings

    torch.manual_seed(3)
    t = torch.randn(numel) * 3 + 1
    exact = torch.linalg.vector_norm(t.double()).item()
    gradient = summarize(t, light=True, exact=True)["stats"]["norm"]
    whole = summarize(t, hist=True)["stats"]["norm"]
    assert gradient == pytest.approx(exact, rel=2e-8, abs=0)
    assert whole == pytest.approx(exact, rel=2e-8, abs=0)
    huge = torch.full((numel,), 1e30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert summarize(huge, light=True, exact=True)["stats"]["norm"] == "inf"
        assert summarize(huge, hist=True)["stats"]["norm"] == "inf"
