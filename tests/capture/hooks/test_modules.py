"""The modules mechanism alone: module paths, parameter names, optimizer steps, zero_grad."""

import torch
from torch import nn

from graphview.capture.hooks.modules import ModuleHooks


def test_module_paths_optimizer_steps_and_zero_grad(alone):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with alone(ModuleHooks, "install_modules", __file__) as events:
        model(torch.ones(4, 2)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    entered = [e["path"] for e in events if e["ev"] == "module_enter"]
    assert entered == ["", "0", "1", "1.0", "1.1"]
    names = {e["name"] for e in events if e["ev"] == "tensor" and e["kind"] == "param"}
    assert names == {qual for qual, _ in model.named_parameters()}
    step = next(e for e in events if e["ev"] == "optimizer_step")
    assert step["optimizer"] == "SGD" and len(step["tids"]) == 4
    reset = next(e for e in events if e["ev"] == "grad_reset")
    assert reset["how"] == "set_to_none" and len(reset["tids"]) == 4
