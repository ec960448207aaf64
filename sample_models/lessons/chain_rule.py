"""Chain rule: x = 2, a = x*2, b = a+1, y = b**2, so dy/dx = 2*b*2 = 20."""
import torch

x = torch.tensor(2.0, requires_grad=True)
a = x * 2
b = a + 1
y = b ** 2

print(x.requires_grad)  # True
print(a.requires_grad)  # True
print(y.grad_fn)        # <PowBackward0 ...>: y has a backward node

y.backward()
print(x.grad)           # tensor(20.): b = 5, dy/dx = 2*b*2 = 20
