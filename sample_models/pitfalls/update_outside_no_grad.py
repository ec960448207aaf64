"""Pitfall: a manual parameter update with grad enabled becomes part of the graph."""
import torch

w = torch.tensor(1.0, requires_grad=True)
loss = (w * 2 - 4) ** 2
loss.backward()
w = w - 0.1 * w.grad  # recorded: w is now the output of SubBackward0, not a leaf any more
loss = (w * 2 - 4) ** 2
loss.backward()
print(w.is_leaf, w.grad)  # False None
