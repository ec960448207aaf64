"""Pitfall: backward() on a vector without a gradient seed."""
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x * 2
y.backward()  # RuntimeError: grad can be implicitly created only for scalar outputs
