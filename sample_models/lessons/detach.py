"""detach() cuts the graph: z shares y's data but has no grad_fn, so loss does not require grad."""
import torch

x = torch.tensor(2.0, requires_grad=True)
y = x * 3
z = y.detach()
print(z.requires_grad, z.grad_fn)  # False None

loss = z ** 2
print(loss.requires_grad)          # False
