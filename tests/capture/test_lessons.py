"""The articles' numbers, read back from recorded events (torch computes them; we record them)."""

from __future__ import annotations

import pytest
import torch

from graphview.core.events import summary_scalar
from tests.conftest import lesson


def grad_history(run, name):
    tid = run.tensor_by_name(name)
    assert tid is not None, f"no tensor named {name!r}; names: {[i.get('name') for i in run.tensors.values()]}"
    return [summary_scalar(v) if v is not None else None for v in run.grad_values(tid)]


def test_chain_rule_x_grad_is_20(record):
    run = record(lesson("chain_rule"))
    assert run.status == "ok"
    assert grad_history(run, "x") == [20.0]
    # the graph autograd built: PowBackward0 -> AddBackward0 -> MulBackward0 -> AccumulateGrad
    names = [n.name for n in sorted(run.op_nodes.values(), key=lambda n: n.born)]
    assert names == ["torch::autograd::AccumulateGrad", "MulBackward0", "AddBackward0", "PowBackward0"]
    order = [run.op_nodes[v].name for v in run.backwards[1].order]
    assert order == ["PowBackward0", "AddBackward0", "MulBackward0", "torch::autograd::AccumulateGrad"]


def test_requires_grad_then_sum(record):
    run = record(lesson("requires_grad_sum"))
    tid = run.tensor_by_name("x")
    assert run.grad_values(tid)[-1]["values"] == [2.0, 4.0, 6.0]


def test_prediction_w_minus_18_b_minus_6(record):
    run = record(lesson("prediction"))
    assert grad_history(run, "w") == [-18.0]
    assert grad_history(run, "b") == [-6.0]


def test_retain_grad_24_and_12(record):
    run = record(lesson("retain_grad"))
    assert grad_history(run, "x") == [24.0]
    assert grad_history(run, "z") == [12.0]
    assert any(e["ev"] == "retain_grad" for e in run.events)


def test_nonscalar_backward_with_seed(record):
    run = record(lesson("nonscalar_seed"))
    tid = run.tensor_by_name("x")
    assert run.grad_values(tid)[-1]["values"] == [2.0, 4.0]
    call = run.backwards[1]
    assert call.seeds[0]["values"] == [1.0, 1.0]


def test_accumulation_without_clearing_minus_8_then_minus_16(record):
    run = record(lesson("accumulate_without_clearing"))
    assert grad_history(run, "w") == [-8.0, -16.0]
    increments = [summary_scalar(e.increment) for e in run.grads[run.tensor_by_name("w")]]
    assert increments == [-8.0, -8.0]


def test_accumulation_with_clearing_minus_8_twice(record):
    run = record(lesson("accumulate_with_clearing"))
    # -8, reset to None, -8, reset to None
    assert grad_history(run, "w") == [-8.0, None, -8.0, None]
    hows = [e.how for e in run.grads[run.tensor_by_name("w")]]
    assert hows == ["accumulate", "assign_none", "accumulate", "assign_none"]


def test_retain_graph_twice_gives_8(record):
    run = record(lesson("retain_graph_twice"))
    assert grad_history(run, "x") == [4.0, 8.0]
    assert [c.retain_graph for c in run.backwards.values()] == [True, False]


def test_create_graph_27_and_18(record):
    run = record(lesson("create_graph"))
    first, second = run.backwards[1], run.backwards[2]
    assert first.api == "grad" and first.create_graph
    assert [summary_scalar(v) for v in first.results.values()] == [27.0]
    assert [summary_scalar(v) for v in second.results.values()] == [18.0]


def test_autograd_grad_14_and_no_accumulation(record):
    run = record(lesson("autograd_grad"))
    call = run.backwards[1]
    assert [summary_scalar(v) for v in call.results.values()] == [14.0]
    assert run.grad_values(run.tensor_by_name("x")) == []
    reads = [e for e in run.events if e["ev"] == "grad_read"]
    assert reads and reads[-1]["none"] is True


def test_numpy_mlp_grads_match_torch(record):
    keep: dict = {}
    run = record(lesson("numpy_mlp_comparison"), keep=keep)
    for name in ("w1", "w2"):
        recorded = run.grad_values(run.tensor_by_name(name))[-1]["values"]
        assert recorded == pytest.approx(keep[name].grad.reshape(-1).tolist())
    out = "".join(e["text"] for e in run.events if e["ev"] == "stdout")
    assert out.strip().endswith("True True")


def test_detach_cuts_the_graph(record):
    run = record(lesson("detach"))
    detach = [e for e in run.events if e["ev"] == "detach"]
    assert len(detach) == 1
    z = run.tensors[detach[0]["dst"]]
    assert z["name"] == "z" and z["requires_grad"] is False and z["grad_fn"] is None
    loss = run.tensors[run.tensor_by_name("loss")]
    assert loss["requires_grad"] is False


def test_manual_training_loop_updates_and_clears(record):
    run = record(lesson("manual_training_loop"))
    w = run.tensor_by_name("w")
    hows = [e.how for e in run.grads[w]]
    assert hows == ["accumulate", "assign_none"] * 3
    # the updates ran under no_grad: recorded as ops in no_grad mode, no new autograd node
    updates = [op for _, op in run.ops if op["op"] in ("__isub__", "sub_")]
    assert len(updates) == 6 and all(op["mode"] == "no_grad" and op["grad_fn"] is None for op in updates)


def test_no_grad_and_inference_mode_save_nothing(record):
    run = record(lesson("no_grad_inference"))
    assert run.status == "ok"
    assert run.saved == {}
    modes = [e["mode"] for e in run.events if e["ev"] == "mode"]
    assert "no_grad" in modes and "inference_mode" in modes


def _torch_error(fn) -> str:
    with pytest.raises(RuntimeError) as info:
        fn()
    return str(info.value)


def test_error_backward_twice_message_and_node(record):
    run = record(lesson("error_backward_twice"))
    assert run.status == "error"
    _, err = run.errors[-1]

    def plain():
        x = torch.tensor(2.0, requires_grad=True)
        loss = x * x + 1
        loss.backward()
        loss.backward()

    assert err["message"] == _torch_error(plain)
    assert err["line"] == 8 and err["type"] == "RuntimeError"
    # the node whose saved tensors were already freed, and the backward call that tripped
    assert run.op_nodes[err["vid"]].name == "MulBackward0"
    assert err["bid"] == 2


def test_error_nonscalar_message(record):
    run = record(lesson("error_nonscalar"))
    _, err = run.errors[-1]
    assert err["message"] == "grad can be implicitly created only for scalar outputs"
    assert err["line"] == 6


def test_error_no_grad_fn_message(record):
    run = record(lesson("error_no_grad_fn"))
    _, err = run.errors[-1]
    assert err["message"] == "element 0 of tensors does not require grad and does not have a grad_fn"
    assert err["line"] == 7


def test_gradients_flowing_through_backward_nodes(record):
    """grads in and out of every node, in the engine's order (x = 2: 1 -> 10 -> 10 -> 20)."""
    run = record(lesson("chain_rule"))
    call = run.backwards[1]
    flow = [(run.op_nodes[v].name, [summary_scalar(g) for g in call.grads_in[v]]) for v in call.order]
    assert flow == [("PowBackward0", [1.0]), ("AddBackward0", [10.0]), ("MulBackward0", [10.0]),
                    ("torch::autograd::AccumulateGrad", [20.0])]
    outs = {run.op_nodes[v].name: [summary_scalar(g) for g in call.grads_out[v]] for v in call.order}
    assert outs["PowBackward0"] == [10.0] and outs["MulBackward0"] == [20.0, None]
