"""Fidelity check: is what graphview recorded what torch did, on this script?

The script runs twice, by the same step protocol: once plainly, in a fresh process and without
the recorder (the reference), once under recording. Torch is the oracle:

* **no observer effect**: every step's result, and every tensor, parameter and ``.grad`` the
  script's globals hold at the end, are bit-identical; an exception, if any, has the same type
  and text;
* **the graph**: at every backward call, the multiset of nodes reachable from its roots and of
  their ``next`` edges, from a direct walk of ``next_functions`` in the reference, equals the
  recorded graph at that call;
* **saved bytes**: at every backward call, the bytes the reachable nodes' saved tensors hold
  (read from ``_raw_saved_*``, each storage counted once) equal what graphview counts for them.
  Bytes torch holds where no walk sees them (the inputs non-reentrant checkpoint keeps for its
  recompute, another graph still alive) are reported beside: graphview's total minus the walk.

The reference runs with the recording process's number of CPU threads: torch's CPU reductions
(a LayerNorm's weight gradient, an embedding's) add in an order set by the thread count, so runs
with different counts differ in the last bits whatever graphview does.

``python -m graphview.capture.fidelity SCRIPT`` (and ``graphview check --fidelity SCRIPT``)
prints the comparison and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from typing import Iterable

import torch

from graphview.capture.steps import watching_backward
from graphview.core.held import held_by_nodes
from graphview.core.isolated import graphview_command
from graphview.core.options import RunOptions
from graphview.core.run import Run
from graphview.core.text import visible, visible_lines


# ---------------------------------------------------------------------- walking torch's graph
def walk_graph(roots: Iterable) -> dict:
    """What a backward from ``roots`` would see, read from torch's own objects.

    ``nodes``: node name -> count; ``edges``: (name, next name, input_nr) -> count;
    ``saved_bytes``: bytes of the walked nodes' saved tensors, each storage counted once;
    ``hidden``: saved values managed by other saved-tensor hooks (no tensor to count).
    """
    seen: set[int] = set()
    keep = []  # the walk holds its nodes until it ends (id() stays unique meanwhile)
    nodes: Counter = Counter()
    edges: Counter = Counter()
    storages: dict[tuple, int] = {}
    hidden = 0
    stack = [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        keep.append(node)
        name = node.name()
        nodes[name] += 1
        for child, nr in node.next_functions:
            if child is not None:
                edges[(name, child.name(), nr)] += 1
                stack.append(child)
        hidden += _count_saved(node, storages)
    del keep
    return {"nodes": dict(nodes), "edges": {"|".join(map(str, k)): v for k, v in edges.items()},
            "saved_bytes": sum(storages.values()), "hidden": hidden}


def _count_saved(node, storages: dict) -> int:
    hidden = 0
    for attr in dir(node):
        if not attr.startswith("_raw_saved_"):
            continue
        try:
            raw = getattr(node, attr)
        except Exception:  # noqa: BLE001 - undefined optional saved values, freed custom-Function tensors
            continue
        for item in raw if isinstance(raw, (tuple, list)) else (raw,):
            data = getattr(item, "data", None) if item is not None else None
            # what save_on_cpu's pack hook made of a saved tensor: (its device, the copy it keeps)
            kept = [part for part in data if isinstance(part, torch.Tensor)] if isinstance(data, tuple) else [data]
            if kept and all(isinstance(t, torch.Tensor) for t in kept):
                for t in kept:
                    storage = t.untyped_storage()
                    storages[(str(t.device), storage.data_ptr())] = storage.nbytes()
            elif data is not None:
                hidden += 1
    return hidden


class GraphProbe:
    """In the reference run: walks the graph at the start of every backward call."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    @contextlib.contextmanager
    def installed(self):
        def before_backward(t_outputs, accumulate_grad: bool) -> None:
            walk = walk_graph([t.grad_fn if isinstance(t, torch.Tensor) else t.node for t in t_outputs])
            walk["api"] = "backward" if accumulate_grad else "grad"
            self.calls.append(walk)

        with watching_backward(before_backward):
            yield self


def recorded_graphs(run: Run) -> list[dict]:
    """The same figures as :func:`walk_graph`, from the recording, for every backward call."""
    # the run model's own ``next`` edges (what the exports and the canvas show), not the node
    # events' lists: an edge the model folded or lost is a difference
    next_edges: dict[str, list] = {}
    for edge in run.edges:
        if edge.kind == "next":
            next_edges.setdefault(edge.source, []).append(edge)
    by_id = {node.id: node for node in run.op_nodes.values()}
    result = []
    for bid in sorted(run.backwards):
        call = run.backwards[bid]
        vids = run.reachable(call.roots)
        nodes: Counter = Counter()
        edges: Counter = Counter()
        for vid in vids:
            node = run.op_nodes.get(vid)
            if node is None:
                continue
            nodes[node.name] += 1
            for edge in next_edges.get(node.id, ()):
                child = by_id.get(edge.target)
                if child is not None:
                    edges[(node.name, child.name, edge.attrs["input_nr"])] += 1
        result.append({
            "api": call.api, "nodes": dict(nodes), "edges": {"|".join(map(str, k)): v for k, v in edges.items()},
            "saved_bytes": held_by_nodes(run, vids, call.start).total,
            "total_saved_bytes": run.live_saved_bytes(call.start)["total"], "line": call.line,
        })
    return result


# ---------------------------------------------------------------------- running the script
def final_state(scope: dict) -> dict[str, torch.Tensor]:
    """Every tensor the script's globals hold at the end: tensors, module parameters and buffers, grads."""
    state: dict[str, torch.Tensor] = {}

    def put(name: str, t) -> None:
        # (a lazy module never called has parameters without values: nothing to compare)
        if isinstance(t, torch.Tensor) and not t.is_meta and not torch.nn.parameter.is_lazy(t):
            state[name] = t.detach().clone()
            if t.grad is not None if t.is_leaf else False:
                state[name + ".grad"] = t.grad.detach().clone()

    for name, value in scope.items():
        if name.startswith("__"):
            continue
        if isinstance(value, torch.Tensor):
            put(name, value)
        elif isinstance(value, torch.nn.Module):
            for qual, p in value.named_parameters():
                put(f"{name}.{qual}", p)
            for qual, b in value.named_buffers():
                put(f"{name}.{qual}", b)
    return state


def run_once(script: str, options: RunOptions, record: bool) -> dict:
    """Run ``script`` in this process, recorded or not: results, final state, error, graphs."""
    events: list[dict] = []
    results: list = []
    scope: dict = {}

    def keep_result(step: int, result) -> None:
        results.append(result.detach().clone() if isinstance(result, torch.Tensor) else repr(result))

    from graphview.capture.script import run_script

    probe = GraphProbe()
    with contextlib.nullcontext() if record else probe.installed():
        end = run_script(script, events.append, options, keep_globals=scope, record=record,
                         on_step_result=keep_result)
    errors = [e for e in events if e["ev"] == "error"]
    outcome = {
        "status": end["status"], "threads": torch.get_num_threads(),
        "error": [errors[-1]["type"], errors[-1]["message"]] if errors else None,
        "results": results, "state": final_state(scope),
        "stdout": "".join(e["text"] for e in events if e["ev"] == "stdout"),
    }
    scope.clear()
    if record:
        outcome["graphs"] = recorded_graphs(Run(events))
        outcome["events"] = events
    else:
        outcome["graphs"] = probe.calls
    return outcome




def reference_in_fresh_process(script: str, options: RunOptions, timeout: float = 600) -> subprocess.Popen:
    """Start the unrecorded reference run in a new interpreter; :func:`collect` reads its outcome."""
    fd, out = tempfile.mkstemp(suffix=".pt", prefix="graphview-reference-")
    os.close(fd)
    # the script sees the sys.path `python script.py` gives it: nothing from the folder graphview runs in
    command = graphview_command("graphview.capture.fidelity", "--reference", script, "--out", out,
                                "--options", json.dumps(options.to_dict()), "--threads", str(torch.get_num_threads()))
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    process.graphview_out = out  # type: ignore[attr-defined]
    process.graphview_timeout = timeout  # type: ignore[attr-defined]
    return process


def collect(process: subprocess.Popen) -> dict:
    out = process.graphview_out  # type: ignore[attr-defined]
    try:
        _, stderr = process.communicate(timeout=process.graphview_timeout)  # type: ignore[attr-defined]
        if process.returncode != 0:
            raise RuntimeError(f"the reference run failed (exit {process.returncode}): {stderr.decode()[-2000:]}")
        return torch.load(out, weights_only=False)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(out)


# ---------------------------------------------------------------------- comparing
def _bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point() or a.is_complex():
        return torch.equal(a.reshape(-1).contiguous().view(torch.uint8), b.reshape(-1).contiguous().view(torch.uint8))
    return torch.equal(a, b)


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")  # object addresses (<PowBackward0 object at 0x7f...>) differ by process


def compare(reference: dict, recorded: dict) -> list[str]:
    """Every difference between the reference and the recorded run, in words (empty: none)."""
    problems: list[str] = []
    if reference.get("threads") != recorded.get("threads"):
        problems.append(f"torch ran with {reference.get('threads')} CPU threads plain, {recorded.get('threads')} "
                        "recorded (sums add in another order: the last bits differ)")
    if reference["error"] != recorded["error"]:
        problems.append(f"error differs: plain {reference['error']} vs recorded {recorded['error']}")
    if len(reference["results"]) != len(recorded["results"]):
        problems.append(f"{len(reference['results'])} steps plain vs {len(recorded['results'])} recorded")
    for step, (a, b) in enumerate(zip(reference["results"], recorded["results"]), 1):
        same = _bits_equal(a, b) if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) else a == b
        if not same:
            problems.append(f"step {step}: step() returned {a} plain vs {b} recorded")
    ref_state, rec_state = reference["state"], recorded["state"]
    for name in sorted(set(ref_state) | set(rec_state)):
        if name not in ref_state or name not in rec_state:
            problems.append(f"{name}: only in the {'plain' if name in ref_state else 'recorded'} run")
        elif not _bits_equal(ref_state[name], rec_state[name]):
            diff = (ref_state[name].double() - rec_state[name].double()).abs().max().item() \
                if ref_state[name].shape == rec_state[name].shape else "shape"
            problems.append(f"{name}: differs after the run (max |diff| {diff})")
    if _ADDRESS.sub("0x...", reference["stdout"]) != _ADDRESS.sub("0x...", recorded["stdout"]):
        problems.append("the script printed different output")
    ref_graphs, rec_graphs = reference["graphs"], recorded["graphs"]
    if len(ref_graphs) != len(rec_graphs):
        problems.append(f"{len(ref_graphs)} backward calls plain vs {len(rec_graphs)} recorded")
    for number, (a, b) in enumerate(zip(ref_graphs, rec_graphs), 1):
        where = f"backward call {number} ({b['api']}, line {b['line']})"
        if a["api"] != b["api"]:
            problems.append(f"{where}: plain ran {a['api']}")
        if a["nodes"] != b["nodes"]:
            problems.append(f"{where}: nodes differ: {_counter_diff(a['nodes'], b['nodes'])}")
        if a["edges"] != b["edges"]:
            problems.append(f"{where}: edges differ: {_counter_diff(a['edges'], b['edges'])}")
        if a["saved_bytes"] != b["saved_bytes"]:
            problems.append(f"{where}: saved bytes of the reachable nodes: torch {a['saved_bytes']}, "
                            f"graphview {b['saved_bytes']}")
    return problems


def _counter_diff(a: dict, b: dict) -> str:
    keys = sorted(set(a) | set(b))
    parts = [f"{k}: {a.get(k, 0)} plain, {b.get(k, 0)} recorded" for k in keys if a.get(k, 0) != b.get(k, 0)]
    return "; ".join(parts[:6]) + (" ..." if len(parts) > 6 else "")


def held_outside_the_walk(reference: dict, recorded: dict) -> list[int]:
    """Per backward call: bytes graphview counts live that no walk from the roots sees."""
    return [b["total_saved_bytes"] - a["saved_bytes"] for a, b in zip(reference["graphs"], recorded["graphs"])]


def check(script: str, options: RunOptions | None = None) -> tuple[list[str], dict, dict]:
    """Reference in a fresh process, recorded run here; returns (problems, reference, recorded)."""
    options = options or RunOptions()
    process = reference_in_fresh_process(script, options)
    recorded = run_once(script, options, record=True)
    reference = collect(process)
    return compare(reference, recorded), reference, recorded


def _say(text: str) -> None:
    """A line of the report: names and error messages come from the script, so escaped
    (:func:`graphview.core.text.visible`)."""
    sys.stdout.write(visible_lines(text) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="graphview check --fidelity", description=__doc__.split("\n\n")[0])
    parser.add_argument("script")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--reference", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--options", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    options = RunOptions.from_dict(json.loads(args.options)) if args.options else RunOptions(steps=args.steps)
    if args.reference:
        if args.threads:
            torch.set_num_threads(args.threads)
        torch.save(run_once(args.script, options, record=False), args.out)
        return 0
    problems, reference, recorded = check(args.script, options)
    steps = len(recorded["results"]) or "no"
    calls = len(recorded["graphs"])
    _say(f"graphview fidelity check of {args.script}: {steps} step{'' if steps == 1 else 's'}, "
         f"{calls} backward call{'' if calls == 1 else 's'}, "
         f"{len(recorded['state'])} tensors compared, run {recorded['status']}"
         + (f" ({visible(recorded['error'][0])}: {visible(recorded['error'][1][:200])})" if recorded["error"] else ""))
    for number, (graph, extra) in enumerate(zip(recorded["graphs"], held_outside_the_walk(reference, recorded)), 1):
        note = f"; {extra} B held outside the walk" if extra else ""
        where = f"line {graph['line']}" if graph["line"] else "graphview's backward on step()'s result"
        _say(f"  backward call {number} ({graph['api']}, {where}): {sum(graph['nodes'].values())} nodes, "
             f"{graph['saved_bytes']} B saved{note}")
    for problem in problems:
        _say(f"  DIFFERENT: {problem}")
    _say("identical to the plain run" if not problems else f"{len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
