"""Nodes torch keeps alive that no backward reaches: marked as such, checked against torch's walk."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from graphview.capture.fidelity import walk_graph
from graphview.capture.recorder import Recorder
from graphview.core.drawing import Drawing
from graphview.core.export import graph_data
from graphview.core.run import Run
from graphview.core.queries.names import node_title

ZOO = Path(__file__).resolve().parent.parent / "zoo"


def _record_until_backward(name: str):
    path = ZOO / name
    events: list[dict] = []
    scope = {"__name__": "graphview_step_script", "__file__": str(path)}
    with Recorder(events.append, str(path)) as recorder:
        exec(compile(path.read_text(), str(path), "exec"), scope)
        loss = scope["step"]()
        recorder.flush_names()
        torch_walk = walk_graph([loss.grad_fn])
        loss.backward()
    return Run(events), torch_walk


def test_slice_node_held_by_copyslices_is_marked_unreachable():
    run, torch_walk = _record_until_backward("inplace_on_views.py")
    call = run.backwards[min(run.backwards)]
    before = call.start - 1
    data = graph_data(run, at=before)
    ops = [n for n in data["nodes"] if n["kind"] == "op" and not n["dead"] and not n["freed"]]
    reachable = Counter(n["op"] for n in ops if n["reachable"])
    # exactly what torch's own walk from the loss finds (its names as graphview gives them, without the namespace)
    assert reachable == Counter({node_title(name): count for name, count in torch_walk["nodes"].items()})
    unreachable = [n for n in ops if n["reachable"] is False]
    assert sorted(n["op"] for n in unreachable) == ["DiagonalBackward0", "SliceBackward0"]
    for node in unreachable:
        assert node["unreachable_reason"].startswith("held by CopySlices")
        assert Drawing(run).op_state(node["vid"], before) == "unreachable"
    # once the backward ran, nothing is left to mark
    assert all(n.get("reachable") is None for n in graph_data(run)["nodes"] if n["kind"] == "op")


def test_another_live_graph_is_not_on_the_loss_path():
    run, torch_walk = _record_until_backward("distillation.py")
    call = run.backwards[min(run.backwards)]
    data = graph_data(run, at=call.start - 1)
    ops = [n for n in data["nodes"] if n["kind"] == "op" and not n["dead"] and not n["freed"]]
    assert sum(1 for n in ops if n["reachable"]) == sum(torch_walk["nodes"].values())
    teacher = [n for n in ops if n["reachable"] is False]
    assert {n["op"] for n in teacher} >= {"AddmmBackward0", "ReluBackward0"}
    assert all("something still references its graph" in n["unreachable_reason"] for n in teacher)
