"""Pitfall: total_loss = total_loss + loss keeps every iteration's graph alive."""
import torch
from torch import nn

torch.manual_seed(0)
fc1 = nn.Linear(8, 8)
total_loss = 0.0
for step in range(4):
    loss = fc1(torch.randn(4, 8)).pow(2).mean()
    loss.backward()
    total_loss = total_loss + loss  # total_loss += loss.item() would keep a number
print(float(total_loss))
