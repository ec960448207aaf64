"""Step script: a gradient penalty (as in WGAN-GP). The gradient of the critic's output with
respect to its input is taken with create_graph=True, so the penalty on that gradient can
itself be backpropagated: a double backward."""
import torch
from torch import nn

torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.Adam(critic.parameters(), lr=1e-3)
real = torch.randn(8, 4)


def step():
    points = real.clone().requires_grad_(True)
    score = critic(points).sum()
    (grad,) = torch.autograd.grad(score, points, create_graph=True)
    penalty = ((grad.norm(dim=1) - 1) ** 2).mean()
    return penalty - score / len(real)


if __name__ == "__main__":
    for i in range(3):
        optimizer.zero_grad()
        loss = step()
        loss.backward()
        optimizer.step()
        print(i, loss.item())
