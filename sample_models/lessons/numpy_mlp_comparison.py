"""A two-layer ReLU MLP: autograd's gradients next to the chain rule written out by hand."""
import numpy as np
import torch

x = torch.tensor([[1.0, 2.0]])
w1 = torch.tensor([[0.2, -0.1], [0.3, 0.4]], requires_grad=True)
w2 = torch.tensor([[0.5], [-0.2]], requires_grad=True)

hidden = torch.relu(x @ w1)
out = hidden @ w2
loss = (out - 1.0).pow(2).mean()
loss.backward()
print(w1.grad)
print(w2.grad)

# The same gradients by hand, as a NumPy MLP computes them
xn, w1n, w2n = x.numpy(), w1.detach().numpy(), w2.detach().numpy()
z1 = xn @ w1n
a1 = np.maximum(z1, 0)
z2 = a1 @ w2n
grad_z2 = 2 * (z2 - 1.0) / z2.size
grad_w2 = a1.T @ grad_z2
grad_a1 = grad_z2 @ w2n.T
grad_z1 = grad_a1 * (z1 > 0)
grad_w1 = xn.T @ grad_z1
print(np.allclose(grad_w1, w1.grad.numpy()), np.allclose(grad_w2, w2.grad.numpy()))  # True True
