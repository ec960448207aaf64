"""Activation checkpointing, non-reentrant: the block's saved tensors are recomputed on unpack."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 8)
y = torch.randint(0, 2, (16,))


def block(h):
    return model[3](model[2](h))


def step():
    h = model[1](model[0](x))
    h = checkpoint(block, h, use_reentrant=False)
    return nn.functional.cross_entropy(model[4](h), y)
