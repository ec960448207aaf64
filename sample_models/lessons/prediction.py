"""prediction = w*3 + b with w = 2, b = 1; loss = (prediction - 10)**2.

prediction = 7, error -3, dloss/dprediction = -6, so w.grad = -18 and b.grad = -6.
"""
import torch

w = torch.tensor(2.0, requires_grad=True)
b = torch.tensor(1.0, requires_grad=True)
prediction = w * 3 + b
loss = (prediction - 10) ** 2
loss.backward()

print(w.grad)  # tensor(-18.)
print(b.grad)  # tensor(-6.)
