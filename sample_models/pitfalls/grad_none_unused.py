"""Pitfall: a parameter whose branch is not part of the loss gets no gradient."""
import torch

a = torch.tensor(1.0, requires_grad=True)
b = torch.tensor(2.0, requires_grad=True)
used = a * 3
unused = b * 5  # computed, but never added to the loss
loss = used ** 2
loss.backward()
print(a.grad, b.grad)  # tensor(18.) None
