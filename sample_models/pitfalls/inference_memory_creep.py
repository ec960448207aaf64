"""Pitfall: evaluation outputs that still carry a graph, kept in a list: memory creeps up."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(32, 32)
predictions = []
for _ in range(4):
    batch = torch.randn(16, 32)
    out = torch.tanh(model(batch))
    predictions.append(out)  # out.detach() (or no_grad) would let each graph go
