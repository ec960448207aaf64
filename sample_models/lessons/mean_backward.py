"""y = x*2 + 1, z = y.mean(): dz/dx = 2/2 = 1 for each element. A second z.backward() works only
if the first kept the graph: retain_graph=True goes on the first call. On the second it comes too
late: the first call freed the graph (lessons/error_backward_twice.py shows that error)."""
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2 + 1
z = y.mean()
z.backward(retain_graph=True)  # keep the graph so it can be walked again
print(x.grad)                  # tensor([1., 1.])
z.backward()                   # allowed only because the first call retained the graph
print(x.grad)                  # tensor([2., 2.]): gradients accumulate
