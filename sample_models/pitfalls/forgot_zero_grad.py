"""Pitfall: stepping the optimizer every iteration without zero_grad: gradients pile up."""
import torch

w = torch.tensor([1.0], requires_grad=True)
optimizer = torch.optim.SGD([w], lr=0.01)
for step in range(3):
    loss = ((w * 2 - 4) ** 2).sum()
    loss.backward()  # adds to w.grad: -8, then about -16, ...
    optimizer.step()
    print(step, w.grad.item())
