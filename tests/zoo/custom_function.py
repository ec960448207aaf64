"""A custom autograd.Function (saves its input and a ctx attribute) inside a small model."""
import torch
from torch import nn

torch.manual_seed(0)


class ScaledCube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return k * x ** 3

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * 3 * ctx.k * x ** 2, None


model = nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(3, 4)


def step():
    h = ScaledCube.apply(model[0](x), 0.5)
    return model[1](h).square().mean()
