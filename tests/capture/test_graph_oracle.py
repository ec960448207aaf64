"""For every sample: the recorded graph is the graph torch built, and saved bytes are exact.

The oracle is torch itself: a direct walk of ``grad_fn.next_functions`` from the script's live
tensors, and an independent count of the bytes held by the walked nodes' saved tensors.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from graphview.capture.recorder import VID_KEY, Recorder
from graphview.core.run import Run
from tests.conftest import LESSONS, MODELS

PLAIN_SAMPLES = sorted(p.name for p in LESSONS.glob("*.py"))
STEP_SAMPLES = sorted(p.name for p in MODELS.glob("*.py"))


def walk(roots) -> dict:
    """vid -> (name, [(child vid | None, input_nr)], node) for every node reachable from roots."""
    found = {}
    stack = [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        vid = node.metadata.get(VID_KEY)
        assert vid is not None, f"{node.name()} was never recorded"
        if vid in found:
            continue
        edges = [(c.metadata.get(VID_KEY) if c is not None else None, nr) for c, nr in node.next_functions]
        found[vid] = (node.name(), edges, node)
        stack.extend(c for c, _ in node.next_functions if c is not None)
    return found


def independent_saved_bytes(nodes) -> int:
    """Bytes held by the nodes' saved tensors, each storage counted once, read through torch.

    Saved values managed by a script's own saved-tensor hooks (activation checkpointing keeps a
    placeholder and recomputes the tensor on unpack) hold no tensor and are skipped: reading
    them would run the recomputation.
    """
    storages = {}
    for node in nodes:
        for attr in dir(node):
            if not attr.startswith("_raw_saved_"):
                continue
            try:
                raw = getattr(node, attr)
            except RuntimeError:  # a custom Function's saved tensors, already freed
                continue
            raws = raw if isinstance(raw, (tuple, list)) else (raw,)
            if any(r is not None and r.data is not None and type(r.data).__name__ not in ("Tensor", "Parameter", "_Packed")
                   for r in raws):
                continue
            try:
                public = attr.replace("_raw_saved_", "_saved_")
                # custom autograd.Function nodes expose ctx.saved_tensors instead
                value = getattr(node, public) if hasattr(type(node), public) else node.saved_tensors
            except RuntimeError:  # already freed by a backward
                continue
            values = value if isinstance(value, (tuple, list)) else (value,)
            for t in values:
                if isinstance(t, torch.Tensor):
                    storage = t.untyped_storage()
                    storages[(str(t.device), storage.data_ptr())] = storage.nbytes()
    return sum(storages.values())


def assert_graph_matches(run: Run, found: dict) -> None:
    for vid, (name, edges, node) in found.items():
        recorded = run.op_nodes.get(vid)
        assert recorded is not None, f"node {name} (vid {vid}) missing from the recording"
        assert recorded.name == name
        assert [tuple(e) for e in recorded.next] == edges, f"edges of {name} differ"
        if name == "torch::autograd::AccumulateGrad":
            leaf = run.tensors[recorded.leaf]
            assert leaf["shape"] == list(node.variable.shape)
            assert leaf["is_leaf"] and leaf["requires_grad"]


def graph_tensors(scope: dict):
    for value in scope.values():
        candidates = [value] if isinstance(value, torch.Tensor) else []
        if isinstance(value, torch.nn.Module):
            candidates = list(value.parameters())
        for t in candidates:
            yield t
            if t.is_leaf and t.grad is not None:
                yield t.grad


@pytest.mark.parametrize("sample", PLAIN_SAMPLES)
def test_plain_sample_graph_equals_next_functions_walk(sample, record):
    keep: dict = {}
    run = record(LESSONS / sample, keep=keep)
    roots = [t.grad_fn for t in graph_tensors(keep) if t.grad_fn is not None]
    found = walk(roots)
    assert_graph_matches(run, found)
    live = run.live_saved_bytes()["total"]
    assert live == independent_saved_bytes(node for _, _, node in found.values())


def orphan_saved_bytes(run: Run, found: dict, sample: str) -> int:
    """Live saved bytes that no node reachable from the loss holds.

    Only activation checkpointing has such saved tensors here: it saves the checkpointed
    block's inputs itself (a SavedTensor kept by its recompute frame, owned by no node).
    """
    total = 0
    for saved in run.saved.values():
        if saved.released is None and saved.owner not in found:
            assert saved.owner is None, f"saved tensor held by unreachable {run.op_nodes[saved.owner].name}"
            assert sample == "checkpointing.py", "only checkpointing keeps saved tensors outside the graph"
            total += saved.bytes
    return total


def _step_module(path: Path) -> dict:
    return {"__name__": "graphview_step_script", "__file__": str(path)}


@pytest.mark.parametrize("sample", STEP_SAMPLES)
def test_step_sample_graph_and_saved_bytes_before_and_after_backward(sample):
    path = MODELS / sample
    events: list[dict] = []
    scope = _step_module(path)
    with Recorder(events.append, str(path)) as recorder:
        exec(compile(path.read_text(), str(path), "exec"), scope)
        loss = scope["step"]()
        recorder.flush_names()
        before = Run(list(events))
        found = walk([loss.grad_fn])
        assert_graph_matches(before, found)
        nodes = [node for _, _, node in found.values()]
        unreachable = orphan_saved_bytes(before, found, sample)
        assert before.live_saved_bytes()["total"] == independent_saved_bytes(nodes) + unreachable
        assert before.live_saved_bytes()["total"] > 0
        loss.backward()
        after = Run(list(events))
        assert after.live_saved_bytes()["total"] == independent_saved_bytes(nodes) + orphan_saved_bytes(after, found, sample)
        # every node that needed a gradient ran, in one backward call
        call = after.backwards[max(after.backwards)]
        executed = set(call.order)
        needed = {vid for vid, (name, edges, node) in found.items()}
        assert executed <= needed and len(executed) > 0
        del loss, nodes, found
