"""Pitfall: backward(create_graph=True) records a graph of the gradient itself, kept alive with
the .grad it made; without a second derivative, that memory is held for nothing."""
import torch

w = torch.randn(64, 64, requires_grad=True)
x = torch.randn(32, 64)
loss = torch.tanh(x @ w).sum()
loss.backward(create_graph=True)  # nothing differentiates w.grad afterwards
print(w.grad.requires_grad)  # True: w.grad carries a graph
