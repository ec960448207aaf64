"""Recording overhead: a recorded training step vs a plain one, measured in the same run.

    python benchmarks/bench_capture.py [--reps 15] [--profiler] [--unwritten] [--clock cpu] [--threads 1]
                                       [--models encoder,mlp,encoder64,gpt2tiny,gpt2small] [--kinds]

For each model, steps alternate (interleaved, so machine noise hits every kind alike): a plain
step; the floor, a step under a ``TorchFunctionMode`` and ``saved_tensors_hooks`` that only log
(what intercepting every call and saved tensor costs by itself, with no bookkeeping); the floor
with backward, the same and a pre-hook and a hook on every node of each backward call, which
only log too (what any recorder that sees the engine's order and every node's gradients pays,
as graphview does, before it builds, summarizes or writes anything); a step
recorded by graphview (of a model of its own, built alike, which only recorded steps train, as
in a script graphview records); and with ``--profiler`` a step under ``torch.profiler.profile(
record_shapes=True, profile_memory=True, with_stack=True)`` (its exit, which builds its results,
included); with ``--unwritten`` a step recorded into nowhere (the recorder's own work, no batch
and no pipe). Each ratio is formed per repetition (a recorded step over the plain step next to it)
and the median is printed; beside graphview's, the ratio of the means (a cost that comes only every
few steps, as a full collection of the heap does, moves it and not the median). A recorded step does everything the runner does: the recorder's
hooks, value summaries, and its events written in batches to a pipe (in the runner's writes: see
EventPipe and graphview/core/channel.py), which another process reads as `graphview record` does:
it checks each event and writes a trace. Also printed: events per op (``op`` events), the
pipe's writes, and the records (lines of the trace, each carrying one event or several:
graphview/core/records.py) and bytes of the trace per step.
Targets, printed with met / not met: the transformer (d_model 256) at most 1.15x a plain step; for
recording at the profiler's cost, graphview at most torch.profiler on every workload, the 256-layer
MLP at most 5x a plain step and 6 records an op, the small encoder (d_model 64) at most 1.5x.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

from graphview.capture.recorder import Recorder  # noqa: E402
from graphview.app.runner_client import _FULL_READ, READ_PACE_S  # noqa: E402
from graphview.capture.runner import EventPipe, freeze_the_setup, import_the_compiler_if_used  # noqa: E402


_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the event the bench sends (through the same pipe) where the timed steps begin
_TIMED = "bench_timed_steps_begin"
#: the parent's side of the pipe: reads batches as runner_client does, checks and writes them as
#: `graphview record` does, and prints the records and bytes of the trace it wrote for the timed
#: steps (those before are written too, uncounted: the events after them refer to theirs), and
#: the timed steps' events by kind (counted here, not in the timed steps: a call and a count
#: for each event there would add their cost to the recorded step's)
_PARENT = f"""
import collections, json, os, sys, tempfile, time
from graphview.core.channel import BatchReader
from graphview.core.events import EventChecker
from graphview.core.trace import TraceWriter
reader, checker = BatchReader(), EventChecker()
folder = tempfile.mkdtemp()
writer = TraceWriter(os.path.join(folder, "bench.gvtrace"))
before = (0, 0)
kinds = collections.Counter()
while chunk := os.read(0, 1 << 16):
    for batch in reader.feed(chunk):
        for event in batch:
            if event.get("ev") == "{_TIMED}":
                writer.flush()
                before = (writer.records, os.fstat(writer.fileno()).st_size)
                kinds.clear()
                continue
            kinds[event["ev"]] += 1
            checker.check(event)
            writer.write(event)
    writer.tick()
    len(chunk) < {_FULL_READ} and time.sleep({READ_PACE_S})
writer.close()
print(json.dumps([writer.records - before[0], os.path.getsize(writer.path) - before[1], kinds]))
os.remove(writer.path)
os.rmdir(folder)
"""
#: recorded / plain step, at most, for the transformer (d_model 256); the 256-layer MLP's bar is
#: _issue_targets' 5x, which replaced an older 3x (two bars for one figure read as a contradiction)
TARGETS = {"encoder": 1.15}


def _training_step(model, optimizer, x, y, loss_of=None):
    def step():
        optimizer.zero_grad()
        out = model(x)
        loss = loss_of(out) if loss_of else nn.functional.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
        return loss

    return step


def transformer(d_model: int = 256, ff: int = 1024, seq: int = 64):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model, 4, dim_feedforward=ff, dropout=0.1, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    head = nn.Linear(d_model, 10)
    params = list(model.parameters()) + list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-4)
    x = torch.randn(32, seq, d_model)
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


def encoder64():
    return transformer(64, 256, 32)


def deep_mlp(layers: int = 256, width: int = 64):
    torch.manual_seed(0)
    blocks = []
    for _ in range(layers):
        blocks += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*blocks, nn.Linear(width, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(32, width)
    y = torch.randint(0, 10, (32,))
    return _training_step(model, optimizer, x, y)


def gpt2(n_embd: int = 64, n_layer: int = 2, n_head: int = 2, seq: int = 32, batch: int = 4, vocab: int = 1000):
    """Hugging Face GPT-2 from a random config (tiny by default; ``gpt2small`` is GPT-2 small)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
                                       n_positions=max(seq, 32)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, vocab, (batch, seq))

    def step():
        optimizer.zero_grad()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        return loss

    return step


def gpt2small():
    return gpt2(768, 12, 12, 128, 1, 50257)


MODELS = {
    "encoder": ("transformer encoder (d_model 256, 4 heads, 2 layers, seq 64, batch 32)", transformer),
    "mlp": ("MLP, 256 Linear+ReLU layers (width 64, batch 32)", deep_mlp),
    "encoder64": ("transformer encoder (d_model 64, 4 heads, 2 layers, seq 32, batch 32)", encoder64),
    "gpt2tiny": ("GPT-2 tiny (Hugging Face, n_embd 64, 2 layers, seq 32, batch 4)", gpt2),
    "gpt2small": ("GPT-2 small (Hugging Face, seq 128, batch 1)", gpt2small),
}


class _LoggingMode(TorchFunctionMode):
    """The floor: sees every torch call and only logs it."""

    def __init__(self, log: list) -> None:
        super().__init__()
        self.log = log

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.log.append((func, len(args)))
        return func(*args, **(kwargs or {}))


class Floor:
    """A ``TorchFunctionMode`` and ``saved_tensors_hooks`` that only log (a tuple per call)."""

    def __init__(self) -> None:
        self.log: list = []

    def _pack(self, t):
        self.log.append(("pack", id(t)))
        return t

    def _unpack(self, t):
        self.log.append(("unpack", id(t)))
        return t

    def __enter__(self):
        self.log.clear()
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        self._mode = _LoggingMode(self.log)
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        self._mode.__exit__(*exc)
        self._hooks.__exit__(*exc)


class FloorWithBackward(Floor):
    """The floor, and a pre-hook and a hook on every node of each backward call that only log
    (registered and removed around the call, as graphview's backward mechanism does)."""

    def _started(self, vid, grad_outputs):
        self.log.append(("started", vid, len(grad_outputs)))

    def _ended(self, vid, grad_inputs, grad_outputs):
        self.log.append(("ended", vid, len(grad_inputs)))

    def _run_backward(self, t_outputs, *args, **kwargs):
        nodes: dict = {}
        stack = [t.grad_fn if isinstance(t, torch.Tensor) else t.node for t in t_outputs]
        while stack:
            node = stack.pop()
            if node is None or node in nodes:
                continue
            nodes[node] = len(nodes)
            stack.extend(child for child, _ in node.next_functions)
        handles = []
        for node, vid in nodes.items():
            handles.append(node.register_prehook(partial(self._started, vid)))
            handles.append(node.register_hook(partial(self._ended, vid)))
        try:
            return self._original(t_outputs, *args, **kwargs)
        finally:
            for handle in handles:
                handle.remove()

    def __enter__(self):
        self._original = torch.autograd.graph._engine_run_backward
        torch.autograd.graph._engine_run_backward = torch.autograd._engine_run_backward = self._run_backward
        return super().__enter__()

    def __exit__(self, *exc):
        super().__exit__(*exc)
        torch.autograd.graph._engine_run_backward = torch.autograd._engine_run_backward = self._original


def _profiled(step):
    from torch.profiler import ProfilerActivity, profile

    def run():
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True, with_stack=True):
            step()

    return run


#: what a repetition's time is: wall-clock time (the default), or this thread's CPU time
#: (``--clock cpu``: on a machine other processes load, the time the step waited for a core is left out)
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}
_clock = CLOCKS["wall"]


def _timed(fn) -> float:
    start = _clock()
    fn()
    return _clock() - start


def _median_ratio(times: list, plain: list) -> float:
    """The median of the ratios of each repetition (a step over the plain step of the same round)."""
    return statistics.median(t / p for t, p in zip(times, plain))


def _interleaved(variants: dict, reps: int, before_timing=None) -> dict[str, list]:
    """Each variant's times: after two warm-up runs of each, ``reps`` rounds of one run of each."""
    for _ in range(2):
        for fn in variants.values():
            fn()
    if before_timing is not None:
        before_timing()
    times: dict[str, list] = {key: [] for key in variants}
    for _ in range(reps):
        for key, fn in variants.items():
            times[key].append(_timed(fn))
    return times


def _nowhere(event) -> None:
    """An emitter that drops every event, compact ones as they come (not made dicts first)."""


_nowhere.takes_compact = True


def measure(name: str, make_step, reps: int, profiler: bool = False, unwritten: bool = False) -> dict:
    # the parent's side reads as graphview's does (runner_client: a short read, then a pause) and
    # does what `graphview record` does with what it reads, on the other core: each batch's events
    # checked against the schema and written to a trace (records, JSON: graphview/core/trace.py);
    # at the end it says how many records and bytes the trace holds
    sink = subprocess.Popen([sys.executable, "-c", _PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": _ROOT})
    # the recorder emits into the pipe itself, as the runner's does (written where control goes
    # back to the script: EventPipe.handover)
    pipe = EventPipe(os.dup(sink.stdin.fileno()))
    batches_before = [0]

    def timing_starts() -> None:  # after the warm-up steps (the first recorded one introduces every
        # parameter and module, a one-off the figures of a step leave out)
        pipe({"ev": _TIMED})
        pipe.handover()
        batches_before[0] = pipe.counts[1]

    step = make_step()
    # a recorded step trains a model of its own (built alike: the same seed): in a script graphview
    # records, only recorded steps change the parameters, so a step finds them as the last one left
    # them; stepped by the plain step in between, every parameter would be new to the recorder at
    # each step (a tensor event with its exact statistics and histogram, 514 of them on the MLP)
    recorded_step = make_step()
    recorder = Recorder(pipe, __file__)
    floor, floor_with_backward = Floor(), FloorWithBackward()

    def recorded():
        with recorder:
            recorded_step()

    def floored():
        with floor:
            step()

    def floored_with_backward():
        with floor_with_backward:
            step()

    variants = {"plain": step, "floor": floored, "floor_backward": floored_with_backward, "recorded": recorded}
    if unwritten:  # the recorder's own work alone: its events go nowhere (no JSON, no pipe)
        silent, silent_step = Recorder(_nowhere, __file__), make_step()

        def unwritten_step():
            with silent:
                silent_step()

        variants["unwritten"] = unwritten_step
    freeze_the_setup()  # the models made, as the runner does before a step script's first step
    times = _interleaved(variants, reps, before_timing=timing_starts)
    ratio = {key: _median_ratio(times[key], times["plain"]) for key in variants}
    if profiler:
        # a pass of its own, after the others: once torch.profiler has run, a TorchFunctionMode
        # alone (the floor) took twice as long for the rest of the process
        profiled = _interleaved({"plain": step, "profiler": _profiled(step)}, reps)
        ratio["profiler"] = _median_ratio(profiled["profiler"], profiled["plain"])
    pipe.close()
    batches = pipe.counts[1] - batches_before[0]
    sink.stdin.close()
    records, total_bytes, kinds = json.loads(sink.stdout.read() or b'[0, 0, {}]')
    sink.wait()
    kinds = collections.Counter(kinds)
    recorded_steps = reps
    events = sum(kinds.values()) / reps
    return {"model": name, "plain_ms": statistics.median(times["plain"]) * 1e3,
            "recorded_ms": statistics.median(times["recorded"]) * 1e3,
            "floor_backward_ms": statistics.median(times["floor_backward"]) * 1e3, "ratio": ratio["recorded"],
            # (a cost that comes every few steps, a full collection, moves the mean and not the median)
            "mean_ratio": statistics.mean(times["recorded"]) / statistics.mean(times["plain"]),
            "floor_ratio": ratio["floor"], "floor_backward_ratio": ratio["floor_backward"], "profiler_ratio": ratio.get("profiler"),
            "unwritten_ratio": ratio.get("unwritten"),
            "events_per_step": events, "ops_per_step": kinds["op"] / reps,
            "bytes_per_step": total_bytes / recorded_steps, "records_per_step": records / recorded_steps,
            "batches_per_step": batches / recorded_steps, "kinds": {k: v / reps for k, v in kinds.most_common()}}


def report(row: dict, kinds: bool = False) -> str:
    text = (f"{row['model']}\n    plain {row['plain_ms']:8.2f} ms   recorded {row['recorded_ms']:8.2f} ms   "
            f"graphview/plain {row['ratio']:.2f}x (of the means {row['mean_ratio']:.2f}x)   floor/plain {row['floor_ratio']:.2f}x   "
            f"floor with backward/plain {row['floor_backward_ratio']:.2f}x\n    above the floor with backward "
            f"(graphview's own work: bookkeeping, statistics, records, JSON, the pipe) "
            f"{row['recorded_ms'] - row['floor_backward_ms']:.1f} ms a step")
    if row["unwritten_ratio"] is not None:
        text += f"   nothing written/plain {row['unwritten_ratio']:.2f}x"
    if row["profiler_ratio"] is not None:
        text += (f"   torch.profiler/plain {row['profiler_ratio']:.2f}x   graphview/profiler "
                 f"{row['ratio'] / row['profiler_ratio']:.2f}x")
    ops = max(row["ops_per_step"], 1)
    text += (f"\n    {row['events_per_step']:.0f} events per step in {row['batches_per_step']:.0f} writes to the pipe, "
             f"{row['records_per_step']:.0f} records in the trace the parent writes (lines), {row['ops_per_step']:.0f} ops: "
             f"{row['events_per_step'] / ops:.1f} events and {row['records_per_step'] / ops:.1f} records per op; "
             f"{row['bytes_per_step'] / 1e3:.0f} kB of trace per step ({row['bytes_per_step'] / ops:.0f} B per op)")
    if kinds:
        text += "\n    " + ", ".join(f"{k} {v:.0f}" for k, v in row["kinds"].items())
    return text


def main() -> None:
    # as the runner process does after importing torch, with torch's compiler for a script that
    # builds an optimizer (see import_the_compiler_if_used in graphview/capture/runner.py)
    import_the_compiler_if_used(__file__)
    gc.freeze()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--models", default="encoder,mlp", help=f"of {', '.join(MODELS)}")
    parser.add_argument("--profiler", action="store_true", help="also torch.profiler (shapes, memory, stack)")
    parser.add_argument("--kinds", action="store_true", help="events per step by kind")
    parser.add_argument("--unwritten", action="store_true", help="also a recorded step whose events go nowhere")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall-clock time, or the recording thread's CPU time (a loaded machine)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch's intra-op threads (1, as the issue's figures; 0: torch's default)")
    args = parser.parse_args()
    if args.threads > 0:  # with a shared machine's cores, more threads make the plain step swing widely
        torch.set_num_threads(args.threads)
    global _clock
    _clock = CLOCKS[args.clock]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, median of {args.reps} interleaved "
          f"repetitions (each ratio formed per repetition), {args.clock} clock; load {os.getloadavg()[0]:.1f}")
    rows = []
    for key in args.models.split(","):
        name, make = MODELS[key]
        rows.append((key, measure(name, make, args.reps, args.profiler, args.unwritten)))
        print(report(rows[-1][1], args.kinds), flush=True)
    for key, row in rows:
        if key in TARGETS:
            print(f"target for the {row['model'].split(' (')[0]}: at most {TARGETS[key]:.2f}x -> "
                  f"{'met' if row['ratio'] <= TARGETS[key] else 'NOT met'}")
    for key, row in rows:
        for what, value, bound in _issue_targets(key, row):
            print(f"target: {what} at most {bound:g} -> {value:.2f} {'met' if value <= bound else 'NOT met'}")


def _issue_targets(key: str, row: dict) -> list[tuple[str, float, float]]:
    """(what, measured, at most) for the recording-cost targets: ahead of torch.profiler on every
    workload, the 256-layer MLP within 5x a plain step and 6 events an op, the small encoder 1.5x."""
    found = []
    short = row["model"].split(" (")[0]
    if row["profiler_ratio"] is not None:
        found.append((f"{short} ({key}): graphview / torch.profiler", row["ratio"] / row["profiler_ratio"], 1.0))
    if key == "mlp":
        found.append(("256-layer MLP: recorded / plain", row["ratio"], 5.0))
        found.append(("256-layer MLP: records (events as a trace holds them) per op",
                      row["records_per_step"] / max(row["ops_per_step"], 1), 6.0))
    if key == "encoder64":
        found.append(("encoder d_model 64: recorded / plain", row["ratio"], 1.5))
    return found


if __name__ == "__main__":
    main()
