"""Step script: a custom autograd.Function (cube with a hand-written backward)."""
import torch


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x ** 2


x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)


def step():
    y = Cube.apply(x)
    return y.sum()


if __name__ == "__main__":
    loss = step()
    loss.backward()
    print(x.grad)  # tensor([ 3., 12., 27.])
