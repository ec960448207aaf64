"""An op given one tensor in several arguments has one ``next_functions`` entry per argument in
torch, and as many ``next`` edges in graphview: in the run model, in every export, in the drawing
(one arrow marked "×n") and in what the fidelity check compares.

Torch is the oracle: the expected edges are read from ``grad_fn.next_functions`` in the test.
"""

from __future__ import annotations

import json
import re

import networkx as nx
import pytest

from graphview.capture.fidelity import compare, recorded_graphs, run_once, walk_graph
from graphview.capture.recorder import VID_KEY
from graphview.core.drawing import Drawing
from graphview.core.export import export_graph
from graphview.core.options import RunOptions
from graphview.core.run import Run

# name -> (the tensor given several times: a leaf or made from one, the op)
CASES = {
    "sdpa": ("w.exp()", "F.scaled_dot_product_attention(x, x, x)"),  # 4-D: torch's own CPU kernel
    "addmm": ("w", "torch.addmm(x, x, x)"),
    "mul": ("w", "x * x"),
    "stack": ("w.exp()", "torch.stack([x, x, x])"),
}
SHAPES = {"sdpa": "1, 2, 4, 8", "addmm": "3, 3", "mul": "3", "stack": "2, 3"}

SCRIPT = """
import torch
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn({shape}, requires_grad=True)
x = {given}
out = {op}
loss = out.sum()
loss.backward()
"""


def write_script(tmp_path, case: str) -> str:
    given, op = CASES[case]
    path = tmp_path / f"{case}.py"
    path.write_text(SCRIPT.format(shape=SHAPES[case], given=given, op=op))
    return str(path)


def torch_next_edges(out) -> tuple[str, list[tuple[str, int, int]]]:
    """The op node of ``out`` and its entries of ``next_functions`` as (target node, input_nr, position)."""
    fn = out.grad_fn
    entries = [(f"op{child.metadata[VID_KEY]}", nr, position)
               for position, (child, nr) in enumerate(fn.next_functions) if child is not None]
    return f"op{fn.metadata[VID_KEY]}", entries


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_next_functions_entry_is_an_edge_everywhere(case, record, tmp_path):
    keep: dict = {}
    run = record(write_script(tmp_path, case), keep=keep)
    assert run.end["status"] == "ok"
    source, expected = torch_next_edges(keep["out"])
    # the example is what it claims to be: torch gives one node several entries for the one tensor
    assert len(expected) >= 2 and len({target for target, _, _ in expected}) == 1
    target = expected[0][0]

    # the run model
    edges = sorted((e.target, e.attrs["input_nr"], e.attrs["position"]) for e in run.edges
                   if e.kind == "next" and e.source == source)
    assert edges == sorted(expected)

    # JSON: one entry of "edges" per entry of next_functions
    export_graph(run, tmp_path / "graph.json")
    data = json.loads((tmp_path / "graph.json").read_text())
    exported = sorted((e["target"], e["input_nr"], e["position"]) for e in data["edges"]
                      if e["kind"] == "next" and e["source"] == source)
    assert exported == sorted(expected)

    # DOT: one arrow per entry
    export_graph(run, tmp_path / "graph.dot")
    dot = (tmp_path / "graph.dot").read_text()
    assert len(re.findall(rf'^  "{source}" -> "{target}"', dot, flags=re.M)) == len(expected)

    # GraphML: parallel edges, each its own element
    export_graph(run, tmp_path / "graph.graphml")
    graph = nx.read_graphml(tmp_path / "graph.graphml")
    assert graph.is_multigraph()
    between = [attrs for u, v, attrs in graph.edges(data=True) if u == source and v == target and attrs["kind"] == "next"]
    assert sorted(attrs["position"] for attrs in between) == sorted(position for _, _, position in expected)

    # the drawing: one arrow from the tensor (or AccumulateGrad) into the op, marked with the count
    drawing = Drawing(run)
    drawing.update()
    into = [e for e in drawing.edges if e.target == source and e.kind == "flow"]
    assert [e.label for e in into] == [f"×{len(expected)}"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_fidelity_check_counts_each_parallel_edge(case, tmp_path):
    path = write_script(tmp_path, case)
    recorded = run_once(path, RunOptions(), record=True)
    plain = run_once(path, RunOptions(), record=False)
    assert compare(plain, recorded) == []
    # the edge multiset torch's walk gives holds the parallel edges, and the recording's matches it
    counts = plain["graphs"][0]["edges"]
    assert max(counts.values()) >= 2
    assert recorded["graphs"][0]["edges"] == counts

    # a run model that folded the parallel edges into one is reported as a difference
    run = Run(recorded["events"])
    parallel = {}
    for edge in run.edges:
        if edge.kind == "next":
            parallel.setdefault((edge.source, edge.target, edge.attrs["input_nr"]), []).append(edge)
    folded = [edge for group in parallel.values() if len(group) > 1 for edge in group[1:]]
    assert folded
    run.edges = [edge for edge in run.edges if not any(edge is f for f in folded)]
    problems = compare(plain, dict(recorded, graphs=recorded_graphs(run)))
    assert len(problems) == 1 and "edges differ" in problems[0]


def test_the_walk_of_torch_counts_parallel_entries():
    import torch

    w = torch.randn(3, requires_grad=True)
    walk = walk_graph([(w * w).grad_fn])
    assert walk["edges"] == {"MulBackward0|torch::autograd::AccumulateGrad|0": 2}
