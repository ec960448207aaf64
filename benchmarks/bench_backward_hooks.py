"""What a Python hook on every autograd node costs a backward call, by itself, in one run.

    python benchmarks/bench_backward_hooks.py [--reps 15] [--layers 256] [--width 64]

graphview learns the engine's order and every node's gradients from a pre-hook and a hook on
each node of the graph, registered for one backward call and removed after it. This measures that
mechanism alone, hooks that do nothing, on the 256-layer MLP of ``bench_capture.py`` (about 1,280
nodes), each as the time of the backward call against a plain one of the same round:

* ``pre+post``: a pre-hook and a hook on every node (graphview's mechanism), registering and
  removing them included;
* ``post only``: a hook on every node, no pre-hook (a node's incoming gradients are also what
  its hook receives: what one hook per node would cost);
* ``register only``: registering and removing both hooks, the backward call left out.

A node's pre-hook is what says which node was running when backward raised (the engine says
nothing of it), and what AccumulateGrad's ``.grad`` was before: dropping it is not free of truth.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from functools import partial

import torch
from torch import nn


def _graph_nodes(root) -> list:
    seen: dict[int, object] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend(child for child, _ in node.next_functions)
    return list(seen.values())


def _pre(vid, grad_outputs):
    return None


def _post(vid, grad_inputs, grad_outputs):
    return None


def _hooked(nodes: list, pre: bool) -> list:
    handles = []
    for vid, node in enumerate(nodes):
        if pre:
            handles.append(node.register_prehook(partial(_pre, vid)))
        handles.append(node.register_hook(partial(_post, vid)))
    return handles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--layers", type=int, default=256)
    parser.add_argument("--width", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [nn.Linear(args.width, args.width), nn.ReLU()]
    model = nn.Sequential(*layers)
    x, y = torch.randn(32, args.width), torch.randint(0, 10, (32,))

    def backward(kind: str) -> float:
        loss = nn.functional.cross_entropy(model(x), y)
        nodes = _graph_nodes(loss.grad_fn)
        start = time.perf_counter()
        handles = _hooked(nodes, pre=kind != "post only") if kind != "plain" else []
        if kind != "register only":
            loss.backward()
        for handle in handles:
            handle.remove()
        took = time.perf_counter() - start
        model.zero_grad()
        return took

    kinds = ("plain", "pre+post", "post only", "register only")
    gc.freeze()
    for kind in kinds * 2:
        backward(kind)
    times: dict[str, list] = {kind: [] for kind in kinds}
    for _ in range(args.reps):
        for kind in kinds:
            times[kind].append(backward(kind))
    nodes = len(_graph_nodes(nn.functional.cross_entropy(model(x), y).grad_fn))
    plain = times["plain"]
    print(f"torch {torch.__version__}, 1 thread, {nodes} nodes, median of {args.reps} interleaved rounds")
    for kind in kinds:
        ratio = statistics.median(t / p for t, p in zip(times[kind], plain))
        print(f"    {kind:14s} {statistics.median(times[kind]) * 1e3:8.2f} ms   {ratio:5.2f}x a plain backward")


if __name__ == "__main__":
    main()
