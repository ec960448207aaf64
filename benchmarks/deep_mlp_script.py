"""The step script both scale benches record: ``layers`` x ``Linear(16, 16) + ReLU`` (about
2 ops and 5 autograd nodes a layer a step). Its ``__main__`` block runs one step, for ``python SCRIPT``;
graphview runs ``step()`` itself. No torch import here: the GUI bench uses it too."""

STEP_SCRIPT = '''\
import torch
from torch import nn

torch.manual_seed(0)
blocks = []
for _ in range({layers}):
    blocks += [nn.Linear(16, 16), nn.ReLU()]
model = nn.Sequential(*blocks)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
inputs = torch.randn(8, 16)


def step():
    return model(inputs).pow(2).mean()


if __name__ == "__main__":
    loss = step()
    loss.backward()
    optimizer.step()
'''
