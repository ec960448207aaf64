"""Pitfall: a second backward through a graph the first backward already freed."""
import torch

x = torch.tensor(2.0, requires_grad=True)
y = x * x
first = y + 1
second = y * 3
first.backward()
second.backward()  # RuntimeError: Trying to backward through the graph a second time
