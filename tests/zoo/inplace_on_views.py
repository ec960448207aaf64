"""In-place ops on views: a slice of an activation scaled in place (CopySlices on its base)."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(5, 6)


def step():
    g = model[0](x)
    g[:, :4].mul_(2.0)          # the slice's node is kept alive inside CopySlices, off every path
    h = model[1](g) * 1.0       # tanh saves its result: scale a copy, not the result itself
    h.diagonal().add_(1.0)     # another view, modified in place
    return model[2](h).pow(2).mean()
