"""The backward mechanism alone: the engine's own order, gradients, accumulation."""

import torch

from graphview.capture.hooks.backward import BackwardHooks
from graphview.core.run import Run


def _graph():
    torch.manual_seed(0)
    x = torch.tensor(2.0, requires_grad=True)
    w = torch.tensor(3.0, requires_grad=True)
    b = x * 2 + 1
    return x, w, b ** 2 + w * b


def test_backward_order_is_the_engines(alone):
    x, w, y = _graph()
    order = []
    stack = [y.grad_fn]
    seen = set()
    while stack:  # torch's own order: a pre-hook on every node, as plain code would
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        node.register_prehook(lambda g, n=node: order.append(n.name()))
        stack.extend(c for c, _ in node.next_functions)
    y.backward()
    plain_grads = (x.grad.item(), w.grad.item())

    x, w, y = _graph()
    with alone(BackwardHooks, "install_backward", __file__) as events:
        y.backward()
    names = {e["vid"]: e["name"] for e in events if e["ev"] == "node"}
    recorded = [names[e["vid"]] for e in events if e["ev"] == "bw_node"]
    assert recorded == order
    run = Run(events)  # an accumulate event may leave out what its bw_node already showed
    accumulated = {e["tid"]: run.accumulation(e)[1]["values"][0] for e in events if e["ev"] == "accumulate"}
    assert sorted(accumulated.values()) == sorted(plain_grads) == sorted([x.grad.item(), w.grad.item()])
    assert [e["ev"] for e in events if e["ev"].startswith("backward")] == ["backward_start", "backward_end"]


def test_a_scripts_own_node_hooks_keep_working_around_the_recorders(alone):
    """The recorder registers its node hooks its own way (see _NodeHooks): a hook the script put on
    a node before a recorded backward, and one it puts on the same node after it (a retained
    graph), run as torch runs them, and their handles remove them; the recorder's run once."""
    x, w, y = _graph()
    node = y.grad_fn.next_functions[0][0]
    seen = []
    before = node.register_hook(lambda grad_inputs, grad_outputs: seen.append("before"))
    with alone(BackwardHooks, "install_backward", __file__) as events:
        y.backward(retain_graph=True)
        after = node.register_prehook(lambda grad_outputs: seen.append("after"))
        y.backward(retain_graph=True)
    assert torch.autograd.function.Function._register_hook is torch.autograd.function._HookMixin._register_hook
    assert seen == ["before", "after", "before"]
    assert [e["ev"] for e in events].count("backward_end") == 2
    assert sum(e["ev"] == "bw_node" for e in events) == 2 * sum(e["ev"] == "node" for e in events)
    recorded = len(events)
    before.remove()
    after.remove()
    y.backward(retain_graph=True)  # no hook of the recorder's or the script's is left on the node
    assert seen == ["before", "after", "before"]
    assert len(events) == recorded
