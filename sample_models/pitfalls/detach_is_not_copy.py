"""Pitfall: detach() shares memory: writing into the detached tensor changes the original."""
import torch

weights = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
scaled = weights * 2
snapshot = scaled.detach()
snapshot.zero_()  # also zeroes `scaled`: detach() is not a copy (use detach().clone())
print(scaled)
