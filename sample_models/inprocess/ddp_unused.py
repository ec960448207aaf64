"""DistributedDataParallel on CPU with a branch one rank never takes: the classic DDP trap.

    torchrun --nproc-per-node 2 sample_models/inprocess/ddp_unused.py --trace run.gvtrace
    graphview check run.rank1.gvtrace     # module.aux gets no gradient on rank 1
    graphview run.rank0.gvtrace           # the app: switch ranks in the status bar

Rank 0 adds an auxiliary head; rank 1 does not, so module.aux.* get no gradient there. That needs
find_unused_parameters=True (set here): without it rank 1 raises 'Expected to have finished
reduction' at its next forward and rank 0 waits in backward. Started without torchrun it runs as a
job of one process.
"""

import argparse
import contextlib
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import graphview

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=2)
parser.add_argument("--trace", help="record into this trace file (one per rank: NAME.rank<N>.gvtrace)")
args = parser.parse_args()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.head = nn.Linear(8, 2)
        self.aux = nn.Linear(8, 2)

    def forward(self, x, use_aux):
        h = torch.relu(self.body(x))
        out = self.head(h)
        if use_aux:
            out = out + self.aux(h)
        return out


if "RANK" in os.environ:
    dist.init_process_group("gloo")
else:  # not started by torchrun: a job of one
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
rank = dist.get_rank()
torch.manual_seed(0)  # the same initial weights on every rank
model = DistributedDataParallel(Net(), find_unused_parameters=True)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(1 + rank)  # each rank its own data
inputs = torch.randn(8, 4)
targets = torch.randint(0, 2, (8,))

losses = []
with graphview.record(args.trace) if args.trace else contextlib.nullcontext():
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs, use_aux=rank == 0), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
print(f"rank {rank}: loss {losses[-1].item():.6f}")
dist.destroy_process_group()
