"""Graph diff: which autograd nodes one graph has that another has not.

Graphs from two steps of a run (a dynamic model's control flow changing) or from two runs of
one script (what a toggle removed) are compared by node *signature*: the grad_fn class, the
source line and the module path; ids differ between runs, signatures do not.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from graphview.core import timeline
from graphview.core.run import ACCUMULATE_GRAD, Run


@dataclass
class GraphDiff:
    added: Counter  # signature -> how many more in the second graph
    removed: Counter  # signature -> how many fewer
    same: int

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


def signature(run: Run, vid: int) -> tuple:
    op = run.op_nodes[vid]
    if op.name == ACCUMULATE_GRAD:
        return ("AccumulateGrad", run.tensor_name(op.leaf), None)
    return (op.name, op.line, op.module)


def graph_at(run: Run, index: int) -> Counter:
    """Signatures of the autograd nodes that exist after event ``index``."""
    return Counter(signature(run, vid) for vid, op in run.op_nodes.items()
                   if op.born <= index and (op.dead is None or op.dead > index))


def step_index(run: Run, step: int) -> int:
    """The moment step ``step``'s graph is complete: its last backward start (else its end)."""
    for s in run.steps:
        if s["step"] == step:
            end = s["end"] if s["end"] is not None else len(run.events) - 1
            starts = [c.start for c in run.backwards.values() if s["start"] <= c.start <= end]
            return max(starts) if starts else end
    raise ValueError(f"the run has no step {step} (it has {len(run.steps)})")


def diff(run_a: Run, index_a: int | None, run_b: Run, index_b: int | None) -> GraphDiff:
    a = graph_at(run_a, timeline.overview(run_a) if index_a is None else index_a)
    b = graph_at(run_b, timeline.overview(run_b) if index_b is None else index_b)
    return GraphDiff(added=b - a, removed=a - b, same=sum((a & b).values()))


def describe(sig: tuple) -> str:
    name, line, module = sig
    if name == "AccumulateGrad":
        return f"AccumulateGrad({line})"
    parts = [name]
    if line is not None:
        parts.append(f"line {line}")
    if module:
        parts.append(f"in {module}")
    return " ".join(parts[:1]) + (f" ({', '.join(parts[1:])})" if len(parts) > 1 else "")
