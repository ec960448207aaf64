"""An LSTM cell unrolled a different number of times each step (the graph's depth changes per step)."""
import torch
from torch import nn

torch.manual_seed(0)
cell = nn.LSTMCell(4, 8)
head = nn.Linear(8, 1)
optimizer = torch.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.1)
sequence = torch.randn(6, 2, 4)
lengths = iter([3, 6, 2])


def step():
    h = c = torch.zeros(2, 8)
    for t in range(next(lengths)):
        h, c = cell(sequence[t], (h, c))
    return head(h).pow(2).mean()
