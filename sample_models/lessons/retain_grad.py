"""Leaf vs non-leaf: z = x*2 keeps its .grad only after z.retain_grad(). x.grad 24, z.grad 12."""
import torch

x = torch.tensor(3.0, requires_grad=True)  # leaf
z = x * 2                                  # non-leaf
z.retain_grad()                            # ask autograd to keep z's gradient
loss = z ** 2
loss.backward()

print(x.is_leaf, x.grad)  # True tensor(24.)
print(z.is_leaf, z.grad)  # False tensor(12.)
