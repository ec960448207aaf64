"""Error: a second backward through a graph whose saved tensors were freed by the first."""
import torch

x = torch.tensor(2.0, requires_grad=True)
y = x * x
loss = y + 1
loss.backward()
loss.backward()  # RuntimeError: Trying to backward through the graph a second time ...
