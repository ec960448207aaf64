"""The fidelity check itself: it reports every kind of difference it claims to find."""

from __future__ import annotations

import copy
import subprocess
import sys

import torch

from graphview.capture.fidelity import collect, compare, reference_in_fresh_process, run_once, walk_graph
from graphview.core.options import RunOptions
from tests.conftest import lesson, model


def test_an_unchanged_recording_has_no_differences_and_one_ulp_is_one():
    recorded = run_once(model("mlp_optimizer"), RunOptions(steps=2), record=True)
    reference = run_once(model("mlp_optimizer"), RunOptions(steps=2), record=False)
    assert compare(reference, recorded) == []

    nudged = copy.deepcopy(reference)
    name = next(k for k in nudged["state"] if k.endswith(".grad"))
    t = nudged["state"][name].view(-1)
    t[0] = torch.nextafter(t[0], torch.tensor(float("inf")))
    problems = compare(nudged, recorded)
    assert len(problems) == 1 and problems[0].startswith(name)

    nudged = copy.deepcopy(reference)
    nudged["results"][1] = nudged["results"][1] + 1
    assert [p for p in compare(nudged, recorded) if p.startswith("step 2")]

    nudged = copy.deepcopy(reference)
    nudged["error"] = ["RuntimeError", "boom"]
    assert [p for p in compare(nudged, recorded) if p.startswith("error differs")]


def test_graph_and_saved_bytes_differences_are_reported():
    recorded = run_once(model("mlp_optimizer"), RunOptions(), record=True)
    reference = run_once(model("mlp_optimizer"), RunOptions(), record=False)
    nudged = copy.deepcopy(reference)
    graph = nudged["graphs"][0]
    graph["nodes"]["ReluBackward0"] += 1
    graph["saved_bytes"] += 4
    problems = compare(nudged, recorded)
    assert any("nodes differ" in p and "ReluBackward0" in p for p in problems)
    assert any("saved bytes" in p for p in problems)


def test_the_reference_runs_with_this_process_thread_count():
    """A LayerNorm's weight gradient sums in an order set by the CPU thread count: one thread
    plain against two recorded differs in the last bits with no fault of the recorder's, so the
    fresh reference process takes this process's count, and a mismatch is named as such."""
    options = RunOptions(steps=1)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        process = reference_in_fresh_process(model("transformer_block"), options)
        recorded = run_once(model("transformer_block"), options, record=True)
        reference = collect(process)
    finally:
        torch.set_num_threads(before)
    assert reference["threads"] == recorded["threads"] == 1
    assert compare(reference, recorded) == []
    other = dict(reference, threads=7)
    assert compare(other, recorded)[0].startswith("torch ran with 7 CPU threads plain, 1 recorded")


def test_walk_counts_each_storage_once():
    x = torch.randn(4, 5)
    w = torch.randn(5, 3, requires_grad=True)
    h = (x @ w).relu()
    loss = (h * h).sum()  # h saved twice by MulBackward0 (self and other): one storage
    walk = walk_graph([loss.grad_fn])
    assert walk["nodes"] == {"SumBackward0": 1, "MulBackward0": 1, "ReluBackward0": 1, "MmBackward0": 1,
                             "torch::autograd::AccumulateGrad": 1}
    # mm saves x (80 B: w needs its grad); relu saves its result, which mul saves twice (48 B)
    assert walk["saved_bytes"] == 4 * 5 * 4 + 4 * 3 * 4


def test_cli_fidelity_check_of_a_lesson_passes():
    result = subprocess.run([sys.executable, "-m", "graphview.app.cli", "check", "--fidelity", lesson("chain_rule")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "identical to the plain run" in result.stdout
