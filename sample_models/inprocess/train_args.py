"""A training script as people write them: argparse options, its own loop, and graphview.record()
around the part to look at.

    python sample_models/inprocess/train_args.py --epochs 4 --lr 0.05 --trace run.gvtrace --start-step 2
    graphview run.gvtrace

Without --trace it trains without graphview; with it, the steps from --start-step on (--record-steps
of them) are recorded. Losses and gradients are the same bit for bit either way.
"""

import argparse
import contextlib

import torch
from torch import nn

import graphview

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--hidden", type=int, default=16)
parser.add_argument("--trace", help="record into this trace file")
parser.add_argument("--start-step", type=int, default=1, help="the first step recorded")
parser.add_argument("--record-steps", type=int, default=None, help="how many steps to record (default: to the end)")
args = parser.parse_args()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
inputs = torch.randn(32, 8)
targets = torch.randint(0, 3, (32,))
print(f"training {args.epochs} epochs at lr {args.lr}")

recording = (graphview.record(args.trace, start_step=args.start_step, steps=args.record_steps)
             if args.trace else contextlib.nullcontext())
losses = []
with recording:
    for epoch in range(args.epochs):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}")
