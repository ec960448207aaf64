"""Pitfall: retain_graph=True "just in case": the graph's saved tensors stay, for nothing."""
import torch

w = torch.randn(64, 64, requires_grad=True)
x = torch.randn(32, 64)
loss = torch.tanh(x @ w).sum()
loss.backward(retain_graph=True)  # nothing backpropagates through this graph again
print(w.grad.shape)
