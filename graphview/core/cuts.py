"""Where a run's graph was cut: the detach or no_grad that separates the loss from the parameters.

A cut is an event where a tensor that requires grad became one without a graph: the script's
own ``.detach()`` (or ``.data``), the "detach at" run option (a ``detach`` event marked
``forced``), or an op run inside a ``no_grad`` / ``inference_mode`` region on a tensor that
requires grad. :func:`find_cut` walks back from a tensor (the loss) through the ops that made
it to the nearest such cut; :func:`severed` says whether the cut left no parameter a gradient.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from graphview.core.options import NO_GRAPH_MODES
from graphview.core.run import Run

_DETACH_OPS = frozenset({"detach", "detach_", "data"})


@dataclass(frozen=True)
class Cut:
    """One place where the graph was cut.

    ``how`` is ``"detach"`` (the script's ``.detach()``), ``"detach at"`` (the run option),
    ``"no_grad"`` or ``"inference_mode"``; ``tid`` is the tensor that lost its graph there,
    ``module`` the module whose output it was (or whose op ran without grad), ``op`` the op
    that made it.
    """

    index: int
    how: str
    line: int | None
    tid: int
    module: str | None
    module_type: str | None
    op: str | None

    @property
    def where(self) -> str:
        """"line 14, the output of module 2 (Linear)", "line 8", ..."""
        text = f"line {self.line}" if self.line is not None else "a line graphview did not see"
        if self.module:
            kind = f" ({self.module_type})" if self.module_type else ""
            what = "the output of" if self.how in ("detach", "detach at") else "inside"
            text += f", {what} module {self.module}{kind}"
        elif self.module_type:
            text += f", {'the output of' if self.how in ('detach', 'detach at') else 'inside'} a {self.module_type}"
        return text


def _requires_grad(run: Run, tid: int) -> bool:
    return bool(run.tensors.get(tid, {}).get("requires_grad"))


def find_cut(run: Run, tid: int | None) -> Cut | None:
    """The cut nearest to tensor ``tid`` on the ops that made it, or None if its history has none."""
    if tid is None:
        return None
    detached = {ev["dst"]: (index, ev) for index, ev in run.events.where({"detach"})}
    op_index = {id(op): index for index, op in run.ops}
    seen: set[int] = set()
    queue = deque([tid])
    while queue:
        current = queue.popleft()
        if current in seen:
            continue
        seen.add(current)
        if current in detached:
            index, ev = detached[current]
            if _requires_grad(run, ev["src"]):
                return _cut(run, index, "detach at" if ev.get("forced") else "detach", ev.get("line"), ev["src"])
            queue.append(ev["src"])
            continue
        op = run.producers.get(current)
        if op is None:
            continue
        inputs = [t for t, _ in op.get("inputs") or ()]
        graph_inputs = [t for t in inputs if _requires_grad(run, t)]
        if op.get("op") in _DETACH_OPS and graph_inputs:
            return _cut(run, op_index.get(id(op), 0), "detach", op.get("line"), graph_inputs[0])
        if op.get("mode") in NO_GRAPH_MODES and graph_inputs:
            return Cut(op_index.get(id(op), 0), op["mode"], op.get("line"), current, op.get("module"),
                       op.get("module_type"), op.get("op"))
        queue.extend(inputs)
    return None


def _cut(run: Run, index: int, how: str, line: int | None, source: int) -> Cut:
    """A detach of tensor ``source``: named after the op (and module) that made it."""
    made = run.producers.get(source) or {}
    return Cut(index, how, line, source, made.get("module"), made.get("module_type"), made.get("op"))


def _trainable(info: dict | None) -> bool:
    return bool(info and info.get("is_leaf") and info.get("requires_grad") and info.get("kind") in ("param", "input"))


def trainable_leaves(run: Run) -> set[int]:
    """Tids of the leaves that require grad (parameters, inputs made with requires_grad=True)."""
    return {tid for tid, info in run.tensors.items() if _trainable(info)}


def any_leaf_got_a_gradient(run: Run) -> bool:
    """Whether a backward or autograd.grad delivered a gradient to any leaf that requires grad.

    Asked of the tensors that got a gradient, not of every tensor of the run (a big trace has
    10^5 of them; its end was held ~130 ms for this)."""
    tensors = run.tensors
    if any(_trainable(tensors.get(tid)) for tid, entries in run.grads.items()
           if any(entry.how == "accumulate" for entry in entries)):
        return True
    return any(_trainable(tensors.get(tid)) for call in run.backwards.values() for tid in call.results)


def losses(run: Run) -> list[tuple[int, int]]:
    """(index, tid) of what the run differentiated, or meant to: the roots of its backward calls,
    and the tensors step() returned in steps that ran no backward."""
    found = [(call.start, tid) for call in run.backwards.values() for tid in call.roots_tensors]
    ran = {step["step"] for step in run.steps
           if any(step["start"] <= call.start <= (step["end"] or call.start) for call in run.backwards.values())}
    for index, ev in run.events.where({"step_end"}):
        if ev.get("tid") is not None and ev.get("step") not in ran:
            found.append((index, ev["tid"]))
    return sorted(found)


def severed(run: Run) -> tuple[Cut, int, int] | None:
    """The cut that left every leaf that requires grad without a gradient: (cut, index, loss tid)
    for the first loss whose history holds it, or None (some leaf got one, no leaf requires grad,
    or nothing cut the loss off)."""
    if any_leaf_got_a_gradient(run) or not trainable_leaves(run):  # the quick answer first
        return None
    for index, tid in losses(run):
        cut = find_cut(run, tid)
        if cut is not None:
            return cut, index, tid
    return None
