"""The ops mechanism alone: every user-level call, its line and the node its output got."""

import torch

from graphview.capture.hooks.ops import OpHooks


def test_ops_lines_and_grad_fns(alone):
    with alone(OpHooks, "install_ops", __file__) as events:
        x = torch.ones(3, requires_grad=True)
        y = x * 2  # line A
        z = y.sin().sum()
        first_line = z.grad_fn is not None and y.grad_fn
    ops = [e for e in events if e["ev"] == "op"]
    assert [e["op"] for e in ops] == ["ones", "mul", "sin", "sum"]
    nodes = {e["vid"]: e["name"] for e in events if e["ev"] == "node"}
    assert [nodes.get(e["grad_fn"]) for e in ops] == [None, "MulBackward0", "SinBackward0", "SumBackward0"]
    mul_line = next(e["line"] for e in ops if e["op"] == "mul")
    with open(__file__) as f:
        assert "line A" in f.read().splitlines()[mul_line - 1]
    assert first_line is not None
    assert not any(isinstance(v, torch.Tensor) for e in events for v in e.values())
