"""Pitfall: a checkpointed block with BatchNorm updates its running statistics twice a step:
torch.utils.checkpoint runs the block's forward again in backward, BatchNorm with it."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
block = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
head = nn.Linear(8, 2)
images = torch.randn(4, 3, 8, 8)
features = checkpoint(block, images, use_reentrant=False)  # recomputed in backward, BatchNorm too
loss = head(features.mean((2, 3))).pow(2).mean()
loss.backward()
print(block[1].num_batches_tracked)  # tensor(2): one forward, counted twice
