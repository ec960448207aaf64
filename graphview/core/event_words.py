"""Each event of a run in words: what the timeline bar, the captions of exports and the web page
say happened at an event (``describe``).

One entry of :data:`WORDS` per event kind: a function of the run's names (:class:`Names`) and the
event. An event kind without one is said by its name, its underscores as spaces.
"""

from __future__ import annotations

from typing import Callable

from graphview.core.events import summary_text
from graphview.core.run import ACCUMULATE_GRAD, Run
from graphview.core.queries.names import node_title
from graphview.core.timeline import program_name


def describe(run: Run, index: int) -> str:
    """One line telling a user what happened at event ``index``."""
    if not 0 <= index < len(run.events):
        return ""
    ev = run.events[index]
    kind = ev.get("ev")
    words = WORDS.get(kind) if isinstance(kind, str) else None
    text = words(Names(run), ev) if words is not None else (kind or "").replace("_", " ")
    return text.removeprefix("line None: ")  # an event without a script line (the step loop's own)


class Names:
    """What the words call the run's autograd nodes and tensors."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def node(self, vid) -> str:
        op = self.run.op_nodes.get(vid)
        if op is None:
            return f"node {vid}"
        if op.name == ACCUMULATE_GRAD:
            return f"AccumulateGrad({self.run.tensor_name(op.leaf) or 'leaf'})"
        return node_title(op.name)

    def tensor(self, tid) -> str:
        return self.run.tensor_name(tid) or f"tensor {tid}"

    def a_tensor(self, tid) -> str:
        """"tensor x" or "tensor 12", never "tensor tensor 12"."""
        name = self.run.tensor_name(tid)
        return f"tensor {name}" if name else f"tensor {tid}"


def _op(n: Names, ev: dict) -> str:
    outs = ", ".join(n.tensor(t) for t, _ in ev.get("outputs") or ())
    made = f" → {n.node(ev['grad_fn'])}" if ev.get("grad_fn") is not None else " (no graph)"
    where = f"line {ev['line']}: " if ev.get("line") is not None else ""
    text = f"{where}{ev['op']}{' → ' + outs if outs else ''}{made}"
    if ev.get("recompute") is not None:
        return f"checkpoint recomputes, inside backward #{ev['recompute']}: {text}"
    return text


def _backward_start(n: Names, ev: dict) -> str:
    flags = [f for f in ("retain_graph", "create_graph") if ev.get(f)]
    what = f"{ev.get('api')}() #{ev.get('bid')} starts" + (f" ({', '.join(flags)})" if flags else "")
    if ev.get("line") is None:
        return f"{what}: graphview calls it on the loss step() returned"
    return f"line {ev['line']}: {what}"


def _accumulate(n: Names, ev: dict) -> str:
    increment, grad = n.run.accumulation(ev)
    # (a one-line header: a few values of each, then how many more)
    return f"{n.tensor(ev['tid'])}.grad += {summary_text(increment, 4)} → {summary_text(grad, 4)}"


def _backward_end(n: Names, ev: dict) -> str:
    return "backward finished" + (" (graph freed)" if ev.get("freed") else " (graph kept)" if ev.get("ok")
                                  else " with an error")


def _release(n: Names, ev: dict) -> str:
    saved = n.run.saved.get(ev["sid"])
    return f"saved tensor released ({saved.bytes} bytes)" if saved else "saved tensor released"


def _saved(n: Names, ev: dict) -> str:
    if ev.get("recompute") is not None:
        return f"the checkpoint recompute saves a tensor for backward #{ev['recompute']} ({ev['bytes']} bytes)"
    return f"autograd saves a tensor for backward ({ev['bytes']} bytes)"


def _grad_reset(n: Names, ev: dict) -> str:
    names = ", ".join(n.tensor(t) for t in ev.get("tids") or ()) or "no grads"
    if ev.get("how") == "in_place":  # (clip_grad_norm_'s _foreach_mul_)
        return f"line {ev.get('line')}: {ev.get('source') or 'an op'} writes into the .grad of {names}"
    return f"line {ev.get('line')}: {ev.get('how', '').replace('_', ' ')} → {names}"


def _step_end(n: Names, ev: dict) -> str:
    result = f": step() returned {summary_text(ev['result'])}" if ev.get("result") else ""
    return f"step {ev['step']} ends{result}"


def _value(n: Names, ev: dict) -> str:
    why = {"optimizer": " by the optimizer"}.get(ev.get("reason"), "")
    return f"{n.tensor(ev['tid'])} changes value{why}"


#: the words of each event kind
WORDS: dict[str, Callable[[Names, dict], str]] = {
    "op": _op,
    "backward_start": _backward_start,
    "bw_node": lambda n, ev: f"backward #{ev['bid']} runs {n.node(ev['vid'])}",
    "bw_node_done": lambda n, ev: f"backward #{ev['bid']}: {n.node(ev['vid'])} sends its gradients on",
    "module_enter": lambda n, ev: f"enters module {ev.get('path') or '(root)'} ({ev.get('type')})",
    "module_exit": lambda n, ev: f"leaves module {ev.get('path') or '(root)'}",
    "accumulate": _accumulate,
    "backward_end": _backward_end,
    "release": _release,
    "saved": _saved,
    "grad_reset": _grad_reset,
    "optimizer_step": lambda n, ev: (f"line {ev.get('line')}: {ev.get('optimizer')}.step() updates "
                                     f"{len(ev.get('tids') or ())} parameters"),
    "error": lambda n, ev: f"line {ev.get('line')}: {ev.get('type')}: {ev.get('message')}",
    "run_end": lambda n, ev: f"run {ev.get('status')}" + (f": {ev['message']}" if ev.get("message") else ""),
    "step_start": lambda n, ev: f"step {ev['step']} begins",
    "step_end": _step_end,
    "detach": lambda n, ev: (f"line {ev.get('line')}: {n.tensor(ev['src'])} detached → {n.tensor(ev['dst'])}"
                             + (" (toggle)" if ev.get("forced") else "")),
    "mode": lambda n, ev: f"line {ev.get('line')}: grad mode is now {ev['mode']}",
    "stdout": lambda n, ev: f"stdout: {ev['text'][:80]!r}",
    "stderr": lambda n, ev: f"stderr: {ev['text'][:80]!r}",
    "tensor": lambda n, ev: f"{n.a_tensor(ev['tid'])} {ev.get('shape')}",
    "node": lambda n, ev: f"autograd node {n.node(ev['vid'])} created",
    "node_dead": lambda n, ev: f"autograd node {n.node(ev['vid'])} destroyed (nothing refers to it any more)",
    "tensor_dead": lambda n, ev: f"{n.a_tensor(ev['tid'])} freed (nothing refers to it any more)",
    "name": lambda n, ev: f"the script names a tensor {n.tensor(ev['tid'])}",
    "value": _value,
    "own": lambda n, ev: f"{n.node(ev.get('owner'))} keeps a tensor for backward",
    "run_start": lambda n, ev: f"the run starts: {program_name(ev)} with torch {ev.get('torch', '?')}",
    "module_mode": lambda n, ev: (f"line {ev.get('line')}: {ev.get('type')}."
                                  f"{'train()' if ev.get('training') else 'eval()'}"),
    "retain_grad": lambda n, ev: f"{n.tensor(ev.get('tid'))}.retain_grad()",
    "grad_read": lambda n, ev: f"the script reads {n.tensor(ev.get('tid'))}.grad",
    "tensor_grad": lambda n, ev: f"{n.tensor(ev.get('tid'))}.grad (kept by retain_grad) = {summary_text(ev.get('grad'))}",
    "grad_result": lambda n, ev: (f"autograd.grad returns the gradient for {n.tensor(ev.get('tid'))}: "
                                  f"{summary_text(ev.get('grad'))}"),
    "alloc": lambda n, ev: f"CUDA allocator: {ev.get('bytes')} bytes allocated on {ev.get('device')}",
    "output_capped": lambda n, ev: f"further {ev.get('stream')} output not kept",
}
