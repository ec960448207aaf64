"""requires_grad marks where graph building starts: (x*x).sum() gives x.grad = 2x = [2, 4, 6]."""
import torch

x = torch.tensor([1.0, 2.0, 3.0])
print(x.requires_grad)  # False
x.requires_grad_()
y = (x * x).sum()
y.backward()
print(x.grad)           # tensor([2., 4., 6.])
