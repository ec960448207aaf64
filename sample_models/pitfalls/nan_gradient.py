"""Pitfall: a NaN in the gradient. It shows up in x.grad, but sqrt at 0 produced it."""
import torch

x = torch.tensor([0.0, 4.0], requires_grad=True)
scaled = x * 1.0
root = torch.sqrt(scaled)  # d sqrt(u)/du = 1 / (2 sqrt(u)) is inf at u = 0
loss = (root * 0.0).sum()  # 0 * inf = nan
loss.backward()
print(x.grad)  # tensor([nan, 0.])
