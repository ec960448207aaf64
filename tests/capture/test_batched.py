"""Summaries of many parameters at once (capture/batched.py): each equals what torch computes for
that tensor alone, and what graphview's one-at-a-time summary says of it."""

from __future__ import annotations

import math

import pytest
import torch

from graphview.capture.batched import _batch_key, summarize_all
from graphview.capture.summaries import HIST_BINS, summarize


def _tensors() -> list[torch.Tensor]:
    torch.manual_seed(0)
    made = [
        torch.randn(64, 64), torch.randn(64), torch.randn(3, 5, dtype=torch.float64), torch.randn(7, 9) * 1e-3,
        torch.full((100,), 2.5),  # min == max: every value in the first bin
        torch.randn(200).abs() + 1e30,  # a float32 range far from 0
        torch.randn(40_000),  # larger than one histogram reads whole: summarized alone
        torch.randn(10, 10).t(),  # not contiguous: alone
        torch.arange(80, dtype=torch.int64),  # an integer dtype: alone
        torch.randn(128, dtype=torch.bfloat16),  # alone
        torch.nn.Parameter(torch.randn(33, 17)), torch.nn.Parameter(torch.randn(5)),
    ]
    with_nan = torch.randn(90)
    with_nan[3], with_nan[50] = float("nan"), float("inf")
    small_inf = torch.randn(4)
    small_inf[1] = float("-inf")
    return made + [with_nan, small_inf, torch.randn(0), torch.randn(2, 3)[:, :0]]


def test_each_summary_is_the_tensors_own():
    tensors = _tensors()
    assert sum(_batch_key(t) is not None for t in tensors) >= 9  # (most are read together)
    for t, got in zip(tensors, summarize_all(tensors)):
        alone = summarize(t, hist=True)
        assert got.keys() == alone.keys() and got["shape"] == list(t.shape)
        if "values" in alone:
            assert got["values"] == alone["values"]  # to the bit, NaN and Inf as strings
            continue
        if _batch_key(t) is None or alone["stats"]["nan"] or alone["stats"]["inf"]:
            assert got == alone  # summarized on its own
            continue
        ours, theirs = got["stats"], alone["stats"]
        assert ours.keys() == theirs.keys()
        for key in ("min", "max", "numel", "nan", "inf", "hist"):
            assert ours[key] == theirs[key], key
        # torch's own, in float64: the batch sums in float64
        wide = t.detach().double()
        if ours["nan"] == 0 and ours["inf"] == 0:
            assert ours["mean"] == pytest.approx(wide.mean().item(), rel=1e-12, abs=1e-300)
            assert ours["norm"] == pytest.approx(torch.linalg.vector_norm(wide).item(), rel=1e-12)
            assert ours["min"] == t.min().item() and ours["max"] == t.max().item()
            if t.dtype in (torch.float32, torch.float64) and ours["max"] > ours["min"]:
                expected = torch.histc(t.detach().reshape(-1)[:: max(1, -(-t.numel() // 16384))],
                                       bins=HIST_BINS, min=ours["min"], max=ours["max"])
                assert ours["hist"] == [int(c) for c in expected.tolist()]


def test_the_optimizer_steps_values_are_the_parameters_after_it(tmp_path):
    """The ``value`` events of an optimizer step: each parameter's statistics after the step."""
    from graphview.capture.recorder import Recorder

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    events: list[dict] = []
    with Recorder(events.append, __file__):
        model(torch.randn(8, 16)).square().mean().backward()
        optimizer.step()
    values = [e for e in events if e["ev"] == "value" and e["reason"] == "optimizer"]
    params = list(model.parameters())
    assert len(values) == len(params)
    for event, p in zip(values, params):
        if "values" in event:
            assert event["values"] == p.detach().reshape(-1).tolist()
        else:
            stats = event["stats"]
            assert stats["min"] == p.min().item() and stats["max"] == p.max().item()
            assert math.isclose(stats["norm"], torch.linalg.vector_norm(p.detach().double()).item(), rel_tol=1e-12)
            assert sum(stats["hist"]) == p.numel()
