"""Step script: in-place ops. Writing into a slice turns h's grad_fn into CopySlices; relu_()
then replaces it with ReluBackward0. h keeps its identity; its version counts the writes."""
import torch

torch.manual_seed(0)
w = torch.randn(4, 4, requires_grad=True)
x = torch.randn(3, 4)


def step():
    h = x @ w + 1
    h[:, 0] = h[:, 0] * 2  # in-place write through a view: h's grad_fn becomes CopySlices
    h.relu_()              # in place again: ReluBackward0, which saves h as it is now
    return h.sum()


if __name__ == "__main__":
    loss = step()
    loss.backward()
    print(w.grad)
