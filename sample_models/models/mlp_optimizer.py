"""Step script: a small MLP trained with SGD. graphview calls step() once per training step,
runs backward on the loss it returns, steps `optimizer` and zeroes the grads before the next step."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
inputs = torch.randn(32, 8)
targets = torch.randint(0, 3, (32,))


def step():
    logits = model(inputs)
    loss = nn.functional.cross_entropy(logits, targets)
    return loss


if __name__ == "__main__":
    for i in range(5):
        optimizer.zero_grad()
        loss = step()
        loss.backward()
        optimizer.step()
        print(i, loss.item())
