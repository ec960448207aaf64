"""Graph exports from recorded runs: JSON schema, DOT, GraphML, and the graph at one event."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import networkx as nx
import pytest

from graphview.core.export import ExportError, export_graph, graph_data
from tests.conftest import lesson


def test_json_graph_of_the_chain_rule(record, tmp_path):
    run = record(lesson("chain_rule"))
    path = tmp_path / "graph.json"
    export_graph(run, path)
    data = json.loads(path.read_text())
    assert data["schema"] == "graphview-graph"
    ops = {n["id"]: n for n in data["nodes"] if n["kind"] == "op"}
    assert sorted(n["op"] for n in ops.values()) == ["AccumulateGrad", "AddBackward0", "MulBackward0", "PowBackward0"]
    # op-to-op edges mirror next_functions: Pow -> Add -> Mul -> AccumulateGrad
    chain = {(ops[e["source"]]["op"], ops[e["target"]]["op"]) for e in data["edges"] if e["kind"] == "next"}
    assert chain == {("PowBackward0", "AddBackward0"), ("AddBackward0", "MulBackward0"), ("MulBackward0", "AccumulateGrad")}
    x = next(n for n in data["nodes"] if n.get("name") == "x")
    assert x["kind"] == "leaf" and x["shape"] == [] and x["grad"]["values"] == [20.0]
    a = next(n for n in data["nodes"] if n.get("name") == "a")
    assert a["kind"] == "intermediate" and a["grad"] is None
    # PowBackward0 saved b (4 bytes); MulBackward0 saved the Python number 2 as an int64 tensor.
    # The backward released both: marked released, not dropped
    saved = {(ops[n["owner"]]["op"], n["attr"]): n for n in data["nodes"] if n["kind"] == "saved"}
    assert set(saved) == {("PowBackward0", "self"), ("MulBackward0", "other")}
    assert saved["PowBackward0", "self"]["bytes"] == 4 and saved["PowBackward0", "self"]["saved_kind"] == "activation"
    assert saved["MulBackward0", "other"]["bytes"] == 8 and saved["MulBackward0", "other"]["saved_kind"] == "input"
    assert all(n["released"] for n in saved.values())
    assert all(ops[i]["freed"] for i in ops if ops[i]["op"] != "AccumulateGrad")


def test_graph_at_an_event_before_backward(record):
    run = record(lesson("chain_rule"))
    start = next(i for i, e in enumerate(run.events) if e["ev"] == "backward_start")
    data = graph_data(run, at=start)
    x = next(n for n in data["nodes"] if n.get("name") == "x")
    assert x["grad"] is None  # not yet
    saved = [n for n in data["nodes"] if n["kind"] == "saved"]
    assert len(saved) == 2 and not any(n["released"] for n in saved)
    assert not any(n.get("freed") for n in data["nodes"])
    # after backward, the released saved tensor is gone from the state at that event
    end = next(i for i, e in enumerate(run.events) if e["ev"] == "backward_end")
    assert [n for n in graph_data(run, at=end)["nodes"] if n["kind"] == "saved"] == []


def test_at_outside_the_run(record):
    run = record(lesson("chain_rule"))
    with pytest.raises(ExportError, match="outside the run"):
        graph_data(run, at=len(run.events) + 5)


def test_dot_and_graphml_parse(record, tmp_path):
    run = record(lesson("prediction"))
    export_graph(run, tmp_path / "g.dot")
    dot = (tmp_path / "g.dot").read_text()
    assert dot.startswith("digraph autograd {") and "MulBackward0" in dot and dot.rstrip().endswith("}")
    export_graph(run, tmp_path / "g.graphml")
    ET.parse(tmp_path / "g.graphml")
    graph = nx.read_graphml(tmp_path / "g.graphml")
    data = graph_data(run)
    assert graph.number_of_nodes() == len(data["nodes"])
    assert graph.number_of_edges() == len(data["edges"])


def test_unknown_suffix_and_unwritable_path(record, tmp_path):
    run = record(lesson("chain_rule"))
    with pytest.raises(ExportError, match="format"):
        export_graph(run, tmp_path / "g.xyz")
    with pytest.raises(ExportError, match="cannot write"):
        export_graph(run, tmp_path / "missing-folder" / "g.json")


def test_json_says_which_tensors_torch_freed(record, write_script):
    """Weight tying replaces a Parameter the constructor made: the export listed it as a parameter
    like the others (summing the parameters gave more than torch's count). Torch freed it: the
    node says so, as it says of the last iteration's batch."""
    import torch

    run = record(write_script(
        "import torch\n"
        "class Tied(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.embed = torch.nn.Embedding(10, 4)\n"
        "        self.head = torch.nn.Linear(4, 10, bias=False)\n"
        "        self.head.weight.data.normal_(0.0, 0.02)  # initialised as transformers does\n"
        "        self.head.weight = self.embed.weight  # then dropped\n"
        "    def forward(self, ids):\n"
        "        return self.head(self.embed(ids))\n"
        "model = Tied()\n"
        "for i in range(2):\n"
        "    ids = torch.randint(0, 10, (3,))\n"
        "    model(ids).sum().backward()\n"))
    data = graph_data(run)
    params = [n for n in data["nodes"] if n["kind"] == "leaf" and n["tensor_kind"] == "param"]
    live = [n for n in params if not n["dead"]]
    model = torch.nn.Embedding(10, 4)
    assert sum(n["shape"][0] * n["shape"][1] for n in live) == sum(p.numel() for p in model.parameters())
    assert any(n["dead"] for n in params)  # the Linear's own weight, made and replaced in the constructor
    batches = [n for n in data["nodes"] if n.get("name") == "ids"]
    assert [n["dead"] for n in batches] == [True, False]
