"""Pitfall: a custom autograd.Function with a wrong backward. Graphs and shapes look fine; only a
gradient check shows it (graphview gradcheck wrong_custom_backward.py --tensor x)."""
import torch


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x  # should be 3 * x ** 2


x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
loss = Cube.apply(x).sum()
loss.backward()
print(x.grad)  # tensor([3., 6., 9.]), but d/dx x^3 = [3, 12, 27]
