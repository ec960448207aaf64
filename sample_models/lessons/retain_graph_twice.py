"""backward(retain_graph=True) keeps the saved tensors so a second backward works: 4 + 4 = 8."""
import torch

x = torch.tensor(2.0, requires_grad=True)
y = x * x
loss = y + 1
loss.backward(retain_graph=True)
loss.backward()
print(x.grad)  # tensor(8.): each pass adds 2x = 4
