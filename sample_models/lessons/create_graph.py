"""create_graph=True records the gradient itself as a graph: dy/dx = 3x^2 = 27, d2y/dx2 = 6x = 18."""
import torch

x = torch.tensor(3.0, requires_grad=True)
y = x ** 3
grad_x = torch.autograd.grad(y, x, create_graph=True)[0]
second = torch.autograd.grad(grad_x, x)[0]
print(grad_x, second)  # tensor(27., grad_fn=...) tensor(18.)
