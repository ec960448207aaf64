"""Distillation with a mistake: the teacher runs with grad, and its output is kept in a global
(another live graph whose saved tensors a walk from the loss does not see)."""
import torch
from torch import nn

torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
student = nn.Sequential(nn.Linear(6, 4))
optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
x = torch.randn(10, 6)
kept = []


def step():
    soft = teacher(x)               # no torch.no_grad(): the teacher's graph is built and kept
    kept[:] = [soft]
    return nn.functional.mse_loss(student(x), soft.detach())
