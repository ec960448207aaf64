"""Pitfall: model.eval() switches Dropout/BatchNorm, it does not stop autograd recording."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.1), nn.Linear(16, 2))
batch = torch.randn(4, 8)
model.eval()
scores = model(batch)  # still records a graph: wrap in torch.no_grad() too
print(scores.requires_grad)  # True
