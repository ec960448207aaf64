"""Pitfall: a layer whose output is detached on the way to the loss gets no gradient."""
import torch
from torch import nn

torch.manual_seed(0)
fc1 = nn.Linear(4, 4)
fc2 = nn.Linear(4, 1)
x = torch.randn(2, 4)
hidden = fc1(x).detach()  # cuts fc1 off the graph
loss = fc2(hidden).pow(2).mean()
loss.backward()
print(fc1.weight.grad)  # None
