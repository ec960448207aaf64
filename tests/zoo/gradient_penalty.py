"""WGAN-GP critic step: a gradient penalty through torch.autograd.grad(create_graph=True) (double backward)."""
import torch
from torch import nn

torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.Adam(critic.parameters(), lr=1e-3)
real = torch.randn(8, 4)
fake = torch.randn(8, 4)


def step():
    alpha = torch.rand(8, 1)
    x_hat = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    grad_x, = torch.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
    penalty = ((grad_x.norm(2, dim=1) - 1) ** 2).mean()
    return critic(fake).mean() - critic(real).mean() + 10 * penalty
