"""Recording overhead: a recorded training step vs a plain one, measured in the same run.

    python benchmarks/bench_capture.py [--reps 15]

For each model, steps alternate plain / recorded (interleaved, so machine noise hits both) and
the script prints the median of each and their ratio. A recorded step does everything the
runner does: the recorder's hooks, value summaries, and every event serialized to JSON and
written to a pipe that another process drains (in the runner's writes: see EventPipe).
Targets: at most 1.15x for the transformer, 3x for the 256-layer MLP.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from graphview.capture.recorder import Recorder  # noqa: E402
from graphview.app.runner_client import _FULL_READ, READ_PACE_S  # noqa: E402
from graphview.capture.runner import EventPipe  # noqa: E402


#: recorded / plain step, at most (issue 14): the transformer, the 256-layer MLP
TARGETS = (1.15, 3.0)


def transformer():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, dropout=0.1, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    head = nn.Linear(256, 10)
    params = list(model.parameters()) + list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-4)
    x = torch.randn(32, 64, 256)
    y = torch.randint(0, 10, (32,))

    def step():
        optimizer.zero_grad()
        h = model(x)
        logits = head(h.mean(dim=1))
        loss = nn.functional.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
        return loss

    return step


def deep_mlp(layers: int = 256, width: int = 64):
    torch.manual_seed(0)
    blocks = []
    for _ in range(layers):
        blocks += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*blocks, nn.Linear(width, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(32, width)
    y = torch.randint(0, 10, (32,))

    def step():
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step


def measure(name: str, make_step, reps: int) -> dict:
    # the parent's side reads as graphview's does (runner_client: a short read, then a pause)
    drain = f"import os, time\nwhile chunk := os.read(0, 1 << 16):\n    len(chunk) < {_FULL_READ} and time.sleep({READ_PACE_S})"
    sink = subprocess.Popen([sys.executable, "-c", drain], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    pipe = EventPipe(os.dup(sink.stdin.fileno()))
    counted = {"events": 0}

    def emit(event: dict) -> None:
        counted["events"] += 1
        pipe(event)

    emit.handover = pipe.handover  # as the runner's pipe: written where control goes back to the script

    step = make_step()
    recorder = Recorder(emit, __file__)
    for _ in range(2):  # warm up both paths
        step()
        with recorder:
            step()
    plain_times, recorded_times = [], []
    counted["events"] = 0
    for _ in range(reps):
        start = time.perf_counter()
        step()
        plain_times.append(time.perf_counter() - start)
        with recorder:
            start = time.perf_counter()
            step()
            recorded_times.append(time.perf_counter() - start)
    pipe.close()
    sink.stdin.close()
    sink.wait()
    plain, recorded = statistics.median(plain_times), statistics.median(recorded_times)
    return {"model": name, "plain_ms": plain * 1e3, "recorded_ms": recorded * 1e3, "ratio": recorded / plain,
            "events_per_step": counted["events"] / reps}


def main() -> None:
    gc.freeze()  # as the runner process does after importing torch (see graphview/capture/runner.py)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, median of {args.reps} interleaved steps")
    rows = [
        measure("transformer encoder (d_model 256, 4 heads, 2 layers, seq 64, batch 32)", transformer, args.reps),
        measure("MLP, 256 Linear+ReLU layers (width 64, batch 32)", deep_mlp, args.reps),
    ]
    for row in rows:
        print(f"{row['model']}\n    plain {row['plain_ms']:8.2f} ms   recorded {row['recorded_ms']:8.2f} ms   "
              f"ratio {row['ratio']:.2f}x   ({row['events_per_step']:.0f} events per step)")
    for row, target in zip(rows, TARGETS):
        print(f"target for the {row['model'].split(' (')[0]}: at most {target:.2f}x -> "
              f"{'met' if row['ratio'] <= target else 'NOT met'}")


if __name__ == "__main__":
    main()
