"""Gradients accumulate: two backward passes without clearing give -8, then -16."""
import torch

w = torch.tensor(1.0, requires_grad=True)
for step in range(2):
    loss = (w * 2 - 4) ** 2
    loss.backward()
    print(step, w.grad.item())  # 0 -8.0, then 1 -16.0: the new -8 is added to the old one
