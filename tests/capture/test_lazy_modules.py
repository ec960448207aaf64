"""Lazy modules (``nn.LazyLinear``, ``nn.LazyConv2d``) record as torch runs them.

Their parameters have no shape until the module's first call materializes them, inside that
call; the recording names them and records them once they exist, and changes nothing torch does.
"""

from __future__ import annotations

import runpy

import torch

from graphview.capture.fidelity import compare, run_once
from graphview.core.options import RunOptions
from graphview.core.run import Run

LAZY_STEPS = '''
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.LazyConv2d(2, 3), nn.LazyBatchNorm2d(), nn.ReLU(), nn.Flatten(), nn.LazyLinear(3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
inputs = torch.randn(4, 1, 4, 4)
targets = torch.tensor([0, 2, 1, 2])


def step():
    return nn.functional.cross_entropy(model(inputs), targets)
'''

STEPS = 2


def plain_training(path: str) -> tuple[list[float], list[dict[str, torch.Tensor]], dict[str, list[int]]]:
    """The script trained in plain torch by graphview's step protocol: each step's loss and the
    parameters' ``.grad`` after its backward, and the parameters' shapes at the end."""
    scope = runpy.run_path(path)
    model, optimizer = scope["model"], scope["optimizer"]
    losses, grads = [], []
    for number in range(1, STEPS + 1):
        if number > 1:
            optimizer.zero_grad()
        loss = scope["step"]()
        loss.backward()
        losses.append(loss.item())
        grads.append({f"model.{name}": p.grad.clone() for name, p in model.named_parameters()})
        optimizer.step()
    shapes = {f"model.{name}": list(t.shape) for name, t in list(model.named_parameters()) + list(model.named_buffers())}
    return losses, grads, shapes


def test_a_lazy_model_trains_recorded_exactly_as_in_plain_python(tmp_path):
    path = tmp_path / "lazy_steps.py"
    path.write_text(LAZY_STEPS)
    losses, grads, shapes = plain_training(str(path))

    recorded = run_once(str(path), RunOptions(steps=STEPS), record=True)
    assert recorded["error"] is None and recorded["status"] == "ok"
    run = Run(recorded["events"])

    # each step's loss, as recorded, is torch's
    results = [e["result"]["values"][0] for e in run.events if e["ev"] == "step_end"]
    assert results == losses

    # every parameter and buffer is named, with the shape the first call gave it
    named = {info["name"]: (tid, info) for tid, info in run.tensors.items() if info.get("name")}
    assert set(shapes) <= set(named)
    for name, shape in shapes.items():
        tid, info = named[name]
        assert info["shape"] == shape, name
        assert info["kind"] == ("param" if name in grads[0] else "buffer"), name

    # each parameter's recorded .grad after each step's backward is torch's, value for value
    for name in grads[0]:
        tid, _ = named[name]
        recorded_grads = [entry.value["values"] for entry in run.grads[tid] if entry.value is not None]
        assert recorded_grads == [step_grads[name].flatten().tolist() for step_grads in grads], name

    # and recording changed nothing torch did: losses, final tensors and .grad bit for bit, graphs
    plain = run_once(str(path), RunOptions(steps=STEPS), record=False)
    assert compare(plain, recorded) == []
    assert len(recorded["graphs"]) == STEPS
