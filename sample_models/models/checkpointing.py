"""Step script: activation checkpointing. The checkpointed block saves only its input; its
activations are recomputed during backward (time traded for memory)."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
block = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32))
head = nn.Linear(32, 1)
optimizer = torch.optim.SGD(list(block.parameters()) + list(head.parameters()), lr=0.01)
x = torch.randn(16, 32, requires_grad=True)


def step():
    h = checkpoint(block, x, use_reentrant=False)
    return head(h).pow(2).mean()


if __name__ == "__main__":
    for i in range(2):
        optimizer.zero_grad()
        loss = step()
        loss.backward()
        optimizer.step()
        print(i, loss.item())
