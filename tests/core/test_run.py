"""The run model (core/run.py) on real recorded runs: the state at any index is a filter over the
events, and what it reports equals what torch computed in the recorded script."""

from __future__ import annotations

import torch

from graphview.core.run import ACCUMULATE_GRAD, Run
from tests.conftest import lesson, model


def scalar(summary: dict | None) -> float | None:
    return None if summary is None else summary["values"][0]


def test_grad_at_follows_the_ledger_through_the_timeline(record):
    keep: dict = {}
    run = record(lesson("accumulate_without_clearing"), keep=keep)
    w = run.tensor_by_name("w")
    first, second = run.grads[w]
    assert run.grad_at(w, first.index - 1) is None  # no .grad before the first backward wrote it
    assert scalar(run.grad_at(w, first.index).value) == -8.0
    assert scalar(run.grad_at(w, second.index - 1).value) == -8.0
    assert scalar(run.grad_at(w).value) == keep["w"].grad.item() == -16.0
    assert second.how == "accumulate" and scalar(second.increment) == -8.0


def test_grad_fn_nodes_equal_a_walk_of_next_functions(record):
    keep: dict = {}
    run = record(lesson("chain_rule"), keep=keep)
    seen, stack = set(), [keep["y"].grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(child for child, _ in node.next_functions)
    names = sorted("AccumulateGrad" if n.name == ACCUMULATE_GRAD else n.name for n in run.op_nodes.values())
    assert names == sorted(type(n).__name__ for n in seen)
    loss = run.tensor_by_name("y")
    root = next(n.grad_fn for n in run.tensor_nodes.values() if n.tid == loss)
    assert run.reachable([root]) == set(run.op_nodes)


def test_backward_frees_what_it_ran_unless_retain_graph(record):
    plain = record(lesson("chain_rule"))
    call = plain.backwards[1]
    ran = [plain.op_nodes[vid] for vid in call.order if plain.op_nodes[vid].name != ACCUMULATE_GRAD]
    assert ran and all(node.freed is not None and call.start < node.freed <= call.end for node in ran)
    assert plain.live_saved_bytes()["total"] == 0
    retained = record(lesson("chain_rule"), retain_graph=True)
    assert all(node.freed is None for node in retained.op_nodes.values())
    assert retained.live_saved_bytes()["total"] > 0


def saved_storage_bytes(build) -> int:
    """Bytes of the distinct storages autograd saves while ``build()`` makes its graph (torch's own count)."""
    storages: dict[int, int] = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        build()
    return sum(storages.values())


def test_saved_bytes_before_backward_equal_what_torch_saves(record, write_script):
    script = write_script(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "x = torch.randn(64, 32)\n"
        "w = torch.randn(32, 16, requires_grad=True)\n"
        "h = (x @ w).relu()\n"
        "loss = (h * h).sum()\n"
        "loss.backward()\n")
    run = record(script)
    x, w = torch.randn(64, 32), torch.randn(32, 16, requires_grad=True)

    def build():
        h = (x @ w).relu()
        return (h * h).sum()

    expected = saved_storage_bytes(build)
    before = run.backwards[1].start
    assert expected > 0
    assert run.live_saved_bytes(before)["total"] == expected == max(run.peak_saved_bytes().values())
    assert run.live_saved_bytes(len(run.events) - 1)["total"] == 0  # backward released them all


def test_memory_series_is_the_same_grown_live_or_read_whole(record):
    whole = record(model("mlp_optimizer"), steps=2)
    live = Run()
    for start in range(0, len(whole.events), 37):  # a runner's batches, asked for after each
        live.extend(whole.events[start:start + 37])
        assert len(live.memory_series("cpu")["total"]) == len(live.events)
    assert live.memory_series("cpu") == whole.memory_series("cpu")
    series = whole.memory_series("cpu")
    for index in (0, len(whole.events) // 3, len(whole.events) - 1):
        at = whole.live_saved_bytes(index, "cpu")
        assert [series[k][index] for k in ("activation", "param", "input", "total")] == \
            [at["activation"], at["param"], at["input"], at["total"]]


def test_steps_and_peaks_per_step(record):
    run = record(model("mlp_optimizer"), steps=3)
    assert [s["step"] for s in run.steps] == [1, 2, 3]
    assert all(s["start"] < s["end"] for s in run.steps)
    peaks = [p["peak"]["cpu"] for p in run.peak_per_step()]
    assert peaks == [max(run.peak_saved_bytes().values())] * 3  # each step's graph is freed by its backward


def test_an_in_place_op_gives_the_tensor_a_new_state(record, write_script):
    script = write_script(
        "import torch\n"
        "w = torch.ones(3, requires_grad=True)\n"
        "y = w * 2\n"
        "y.add_(1)\n"
        "y.sum().backward()\n")
    keep: dict = {}
    run = record(script, keep=keep)
    states = sorted(n.version for n in run.tensor_nodes.values() if n.tid == run.tensor_by_name("y"))
    assert states == [0, 1]
    w = run.tensor_by_name("w")
    assert run.grad_at(w).value["values"] == keep["w"].grad.tolist() == [2.0, 2.0, 2.0]


def test_a_failed_run_keeps_its_error_and_line(record):
    run = record(lesson("error_backward_twice"))
    assert run.failed and run.status == "error"
    index, error = run.errors[0]
    assert error["line"] == 8 and "second time" in error["message"]
    assert run.info()["errors"] == [{"index": index, "type": error["type"], "message": error["message"], "line": 8}]


def test_an_unfinished_run_is_incomplete_not_failed(record):
    whole = record(lesson("chain_rule"))
    partial = Run(whole.events[:len(whole.events) // 2])
    assert partial.status == "incomplete" and not partial.failed and partial.end is None
    assert whole.status == "ok" and whole.info()["backward_calls"] == 1
