"""Step script: an LSTM cell unrolled for a data-dependent number of time steps.

Each training step draws a sequence of a different length, so the autograd graph has a
different number of nodes every step: define-by-run at work.
"""
import torch
from torch import nn

torch.manual_seed(0)
cell = nn.LSTMCell(4, 8)
readout = nn.Linear(8, 1)
optimizer = torch.optim.SGD(list(cell.parameters()) + list(readout.parameters()), lr=0.05)
lengths = iter([3, 5, 2, 4, 6, 3, 5, 2])


def step():
    length = next(lengths)
    sequence = torch.randn(length, 1, 4)
    h = torch.zeros(1, 8)
    c = torch.zeros(1, 8)
    for t in range(length):
        h, c = cell(sequence[t], (h, c))
    prediction = readout(h)
    return (prediction - 1.0).pow(2).mean()


if __name__ == "__main__":
    for i in range(3):
        optimizer.zero_grad()
        loss = step()
        loss.backward()
        optimizer.step()
        print(i, loss.item())
