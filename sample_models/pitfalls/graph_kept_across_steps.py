"""Pitfall (step script): keeping the loss tensor across steps keeps every step's graph alive.

Run it with several steps (graphview record graph_kept_across_steps.py --steps 4): the autograd
nodes alive at the end of each step grow, because `losses` holds each loss with its graph.
"""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(8, 16)
losses = []


def step():
    loss = model(data).pow(2).mean()
    losses.append(loss)  # keeps the graph; losses.append(loss.item()) would keep a number
    return loss


if __name__ == "__main__":
    for _ in range(4):
        optimizer.zero_grad()
        step().backward()
        optimizer.step()
