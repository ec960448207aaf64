"""Clearing .grad between steps: each backward gives -8 again."""
import torch

w = torch.tensor(1.0, requires_grad=True)
for step in range(2):
    loss = (w * 2 - 4) ** 2
    loss.backward()
    print(step, w.grad.item())  # 0 -8.0, then 1 -8.0
    w.grad = None               # what optimizer.zero_grad(set_to_none=True) does
