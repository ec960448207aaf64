"""torch.autograd.grad returns the gradient without touching .grad: 3*x**2 + 2 = 14 at x = 2."""
import torch

x = torch.tensor(2.0, requires_grad=True)
y = x ** 3 + 2 * x
grad = torch.autograd.grad(y, x)
print(grad)    # (tensor(14.),)
print(x.grad)  # None: autograd.grad does not accumulate
