"""A manual training loop: forward, backward, update under no_grad, clear the grads."""
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.tensor([[1.0], [2.0], [3.0]], device=device)
target = 2 * x + 1
w = torch.tensor([[0.0]], device=device, requires_grad=True)
b = torch.tensor([0.0], device=device, requires_grad=True)

for step in range(3):
    prediction = x @ w + b
    loss = (prediction - target).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        b -= 0.1 * b.grad
    w.grad = None
    b.grad = None
    print(step, loss.item())
