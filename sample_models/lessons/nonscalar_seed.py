"""Non-scalar backward needs a gradient seed of the output's shape: x.grad = 2x = [2, 4]."""
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x ** 2
y.backward(torch.ones_like(y))  # the same as y.sum().backward()
print(x.grad)                   # tensor([2., 4.])
