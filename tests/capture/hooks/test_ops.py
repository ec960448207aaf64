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


def test_a_tensor_detached_in_place_out_of_sight_is_told_as_the_leaf_it_became():
    """``detach_()`` leaves a tensor's version as it was: the next op that reads it, after it was
    detached and made to require grad again where the recorder did not look (a paused recording,
    another thread), says it is a leaf now, as torch does, not the node it had."""
    from contextlib import ExitStack

    events: list[dict] = []
    recorder = type("OneMechanism", (OpHooks,), {})(events.append, __file__)
    with ExitStack() as stack:
        recorder.install_ops(stack)
        recorder._active = True
        stack.callback(setattr, recorder, "_active", False)
        a = torch.randn(3, requires_grad=True)
        h = a * 2
        h + 1
        with recorder.quiet():  # out of sight
            h.detach_()
            h.requires_grad_()
        out = h * 3
    assert out.grad_fn.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"  # torch: h is a leaf
    tensors = [e for e in events if e["ev"] == "tensor"]
    last_of_h = [e for e in tensors if e["tid"] == tensors[1]["tid"]][-1]  # (tids: a, then h)
    assert last_of_h["is_leaf"] and last_of_h["grad_fn"] is None
