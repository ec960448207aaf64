"""Step script: distillation. The teacher's output is detached, so no gradient reaches the
teacher's weights; only the student learns."""
import torch
from torch import nn

torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 5))
student = nn.Sequential(nn.Linear(10, 8), nn.ReLU(), nn.Linear(8, 5))
optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
x = torch.randn(16, 10)


def step():
    target = teacher(x).detach()   # a fixed target: the graph is cut here
    prediction = student(x)
    return nn.functional.mse_loss(prediction, target)


if __name__ == "__main__":
    for i in range(3):
        optimizer.zero_grad()
        loss = step()
        loss.backward()
        optimizer.step()
        print(i, loss.item(), teacher[0].weight.grad)  # teacher grad stays None
