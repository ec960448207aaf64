"""torch.compile: a compiled model and a compiled loss (AOT autograd, no C compiler needed).

Under recording the compiled code runs op by op (graphview says so): the graph shows the ops where
a plain run has CompiledFunctionBackward; values and gradients stay bit-identical."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
model.compile(backend="aot_eager")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 3)


@torch.compile(backend="aot_eager")
def loss_of(out):
    return out.pow(2).mean()


def step():
    return loss_of(model(x))
