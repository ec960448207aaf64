"""Pitfall: gradient accumulation over micro-batches without dividing the loss."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(8, 4)
optimizer.zero_grad()
for micro_batch in data.split(2):  # 4 micro-batches
    loss = model(micro_batch).pow(2).mean()
    loss.backward()  # should be (loss / 4).backward()
optimizer.step()
