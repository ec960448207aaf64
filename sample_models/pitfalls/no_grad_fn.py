"""Pitfall: the loss was computed under no_grad, so backward() finds no graph."""
import torch

w = torch.tensor(2.0, requires_grad=True)
with torch.no_grad():
    prediction = w * 3
loss = (prediction - 1) ** 2
loss.backward()  # RuntimeError: element 0 of tensors does not require grad ...
