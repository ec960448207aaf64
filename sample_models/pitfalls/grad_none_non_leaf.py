"""Pitfall: reading .grad of an intermediate tensor (not a leaf): it is None."""
import torch

x = torch.tensor(3.0, requires_grad=True)
h = x * 2
loss = h ** 2
loss.backward()
print(x.grad)  # tensor(24.)
print(h.grad)  # None (and a warning): h is not a leaf; h.retain_grad() would keep it
