"""torch.func.grad: a functional gradient, which refuses the saved-tensor hooks recording needs.

graphview cannot record it and says so in one line; a plain run works."""
import torch
from torch import nn
from torch.func import functional_call, grad

torch.manual_seed(0)
model = nn.Linear(3, 1)
x = torch.randn(4, 3)


def loss_of(params):
    return functional_call(model, params, (x,)).pow(2).mean()


def step():
    grads = grad(loss_of)(dict(model.named_parameters()))
    return sum(g.sum() for g in grads.values())
