"""The classic mistake: a second backward through a graph whose saved tensors the first one freed."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.Sigmoid(), nn.Linear(4, 1))
x = torch.randn(2, 3)


def step():
    loss = model(x).pow(2).sum()
    loss.backward()
    loss.backward()             # RuntimeError: Trying to backward through the graph a second time
    return loss
