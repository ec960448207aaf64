"""Step script: one Linear layer used twice. Its weight gets one AccumulateGrad node, and the
gradients of both uses are summed into the same .grad."""
import torch
from torch import nn

torch.manual_seed(0)
shared = nn.Linear(6, 6)
head = nn.Linear(6, 1)
optimizer = torch.optim.SGD(list(shared.parameters()) + list(head.parameters()), lr=0.1)
x = torch.randn(5, 6)


def step():
    h = torch.tanh(shared(x))
    h = torch.tanh(shared(h))  # the same weights again
    return head(h).pow(2).mean()


if __name__ == "__main__":
    for i in range(3):
        optimizer.zero_grad()
        loss = step()
        loss.backward()
        optimizer.step()
        print(i, loss.item())
