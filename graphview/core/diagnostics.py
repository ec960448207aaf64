"""Autograd pitfalls, found in a run's events and explained.

``diagnose(run)`` returns :class:`Finding` objects: what autograd did, where (source line and
graph node), and the fix. Pure functions of the recorded events: the GUI's Diagnostics panel and
``graphview check`` show the same findings.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Iterator

from graphview.core.cuts import Cut, find_cut, severed
from graphview.core.events import summary_scalar
from graphview.core.held import held_at, human
from graphview.core.options import NO_GRAPH_MODES, RunOptions
from graphview.core.run import ACCUMULATE_GRAD, Run


@dataclass
class Finding:
    code: str  # a stable identifier, e.g. "no-grad-fn"
    title: str
    line: int | None
    explanation: str
    fix: str
    index: int  # the event where it shows
    node: str | None = None  # graph id (``op5``, ``t3``) of the node involved
    related_lines: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"code": self.code, "title": self.title, "line": self.line, "explanation": self.explanation,
                "fix": self.fix, "index": self.index, "node": self.node, "related_lines": self.related_lines}


def diagnose(run: Run) -> list[Finding]:
    """Every finding about ``run``, in the order of the events where they show."""
    findings = [finding for finding in diagnosing(run) if finding is not None]
    findings.sort(key=lambda f: f.index)
    return findings


def diagnosing(run: Run) -> Iterator[Finding | None]:
    """The findings of :func:`diagnose` as the checks make them (not sorted), with a None
    between checks and every :data:`PAUSE_EVERY` ops inside the longer ones: a point where
    the caller may stop and come back (the window diagnoses a big run a few ms at a time)."""
    for check in CHECKS:
        yield from check(run)
        yield None


#: ops a check goes through between two points where its caller may pause (~10 ms)
PAUSE_EVERY = 4096


def _the_loss(run: Run, tid: int | None) -> str:
    """"the loss", or "the loss `total`" when the script named it something else."""
    name = run.tensor_name(tid) if tid is not None else None
    return "the loss" if name in (None, "loss") else f"the loss {name}"


def _name(run: Run, tid: int | None) -> str:
    """The script's name for a tensor, else what made it ("the result of mul at line 7")."""
    if tid is None:
        return "the tensor"
    name = run.tensor_name(tid)
    if name:
        return name
    op = _producer(run, tid)
    if op is not None:
        return f"the result of {op['op']} at line {op.get('line')}"
    return "an unnamed tensor"


def _producer(run: Run, tid: int) -> dict | None:
    """The last op that output tensor ``tid``."""
    return run.producers.get(tid)


def _errors(run: Run, text: str):
    for index, err in run.errors:
        if text in (err.get("message") or ""):
            yield index, err


# ---------------------------------------------------------------------- 1. backward without grad_fn
def _no_grad_fn(run: Run):
    for index, err in _errors(run, "does not require grad and does not have a grad_fn"):
        call = run.backwards.get(err.get("bid")) if err.get("bid") else None
        if call is None and run.backwards:
            call = run.backwards[max(run.backwards)]
        root = call.roots_tensors[0] if call and call.roots_tensors else None
        cut_line, how = _what_cut(run, root)
        findings_line = err.get("line")
        explanation = (f"backward() was called on {_name(run, root)}, which has no grad_fn: autograd recorded "
                       f"nothing that leads to it. {how}")
        yield Finding("no-grad-fn", "backward() on a tensor with no grad_fn", findings_line, explanation,
                      "Compute the loss with grad enabled and from tensors that require grad: remove the no_grad/"
                      "inference_mode block, the detach(), or the .item()/.numpy() round trip on the path to the loss.",
                      index, f"t{root}" if root else None, [cut_line] if cut_line else [])


def _what_cut(run: Run, tid: int | None) -> tuple[int | None, str]:
    """Walk back from ``tid`` through the ops that made it to the one that cut the graph."""
    cut = find_cut(run, tid)
    if cut is not None:
        return cut.line, _cut_words(run, cut) + "."
    seen = set()
    frontier = [tid] if tid is not None else []
    while frontier:
        current = frontier.pop()
        if current in seen:
            continue
        seen.add(current)
        op = _producer(run, current)
        if op is None:
            continue
        if op.get("mode") in NO_GRAPH_MODES:
            return op.get("line"), (f"It was computed at line {op.get('line')} inside a {op['mode']} region, "
                                    "where autograd records no graph.")
        if op.get("op") in ("detach", "detach_", "data"):
            return op.get("line"), f"Line {op.get('line')} detached it from the graph ({op['op']})."
        for tid_in, _ in op.get("inputs") or ():
            frontier.append(tid_in)
    for _, op in run.ops:
        if op.get("op") in ("item", "tolist", "numpy") and op.get("inputs"):
            return op.get("line"), (f"Line {op.get('line')} turned a tensor into a Python number ({op['op']}()), "
                                    "which carries no graph.")
    return None, "None of the tensors it was computed from requires grad."


# ---------------------------------------------------------------------- 2. .grad is None when read
def _grad_none(run: Run):
    reported = set()
    for index, ev in run.events.where({"grad_read"}):
        if not ev.get("none") or ev["tid"] in reported:
            continue
        tid = ev["tid"]
        info = run.tensors.get(tid, {})
        name = _name(run, tid)
        backward_before = any(call.start < index and call.api == "backward" for call in run.backwards.values())
        if not backward_before:
            continue  # before any backward (autograd.grad does not fill .grad) None is what to expect
        reported.add(tid)
        if info.get("grad_fn") is not None:
            yield Finding("grad-none-non-leaf", f"{name}.grad is None: {name} is not a leaf", ev.get("line"),
                          f"{name} was computed by an op (its grad_fn is {run.op_nodes[info['grad_fn']].name if info['grad_fn'] in run.op_nodes else 'set'}), "
                          "so autograd passes its gradient on instead of storing it.",
                          f"Call {name}.retain_grad() before backward to keep it, or read the gradient of a leaf.",
                          index, f"t{tid}")
        elif not info.get("requires_grad"):
            if info.get("kind") == "param":
                continue  # an nn.Parameter without requires_grad was frozen on purpose (layers[0].requires_grad_(False))
            yield Finding("grad-none-no-requires-grad", f"{name}.grad is None: {name} does not require grad",
                          ev.get("line"), f"{name} was created with requires_grad=False, so backward never computes a "
                                          "gradient for it.",
                          f"Create it with requires_grad=True or call {name}.requires_grad_() before the forward.",
                          index, f"t{tid}")
        elif not run.grads.get(tid) and (cut := _cut_below(run, tid, index)) is not None:
            yield Finding("grad-none-detached", f"{name}.grad is None: the path from {name} to the loss is cut",
                          cut[0], f"{name} was used, but line {cut[0]} {cut[1]}, so no gradient flows back to it.",
                          "Remove the detach() / no_grad on the path from it to the loss (or use .detach() only on "
                          "values that must not learn).", index, f"t{tid}", [ev.get("line")])
        elif not run.grads.get(tid):
            yield Finding("grad-none-unused", f"{name}.grad is None: {name} was not used in the loss",
                          ev.get("line"), f"No backward reached {name}: the output it contributes to is not part of "
                                          "the loss that was backpropagated.",
                          f"Check that {name}'s branch feeds the loss (or drop the parameter).", index, f"t{tid}")


def _cut_below(run: Run, tid: int, before: int) -> tuple[int | None, str] | None:
    """Follow ``tid`` forward through the ops that used it: was the path to the loss cut (detach,
    no_grad)? A detach or a no-grad use counts only if what it made goes on into a loss that was
    backpropagated: BERT initialises its weights in place under no_grad (``normal_``), and
    ``.data`` is a detach, but neither is on the way to the loss; a weight whose branch is not in
    the loss was then said to be cut by its initialisation."""
    roots = {t for call in run.backwards.values() if call.start < before for t in call.roots_tensors}
    reached = {tid}
    for index, ev in run.events.where({"detach", "op"}, stop=before + 1):
        if ev.get("ev") == "detach" and ev["src"] in reached:
            if _feeds(run, {ev["dst"]}, index, before, roots):
                return ev.get("line"), "detached it (detach() makes a tensor without grad_fn)"
            continue
        if ev.get("ev") == "op" and any(t in reached for t, _ in ev.get("inputs") or ()):
            outputs = {t for t, _ in ev.get("outputs") or ()}
            if ev.get("op") in ("item", "tolist", "numpy"):  # (a Python number: where it goes is not recorded)
                return ev.get("line"), f"turned it into a Python value ({ev['op']}())"
            if ev.get("mode") in NO_GRAPH_MODES:
                if not ev.get("inplace") and _feeds(run, outputs, index, before, roots):
                    return ev.get("line"), f"used it inside a {ev['mode']} region"
                continue
            reached.update(outputs)
    return None


def _feeds(run: Run, tids: set, start: int, stop: int, roots: set) -> bool:
    """Whether tensors ``tids`` (made at ``start``) go on, through later ops, into a loss in ``roots``."""
    if not roots:
        return True  # no backward to compare with: any use counts
    made = set(tids)
    if made & roots:
        return True
    for _, ev in run.events.where({"op"}, start=start + 1, stop=stop + 1):
        if any(t in made for t, _ in ev.get("inputs") or ()):
            made.update(t for t, _ in ev.get("outputs") or ())
            if made & roots:
                return True
    return False


# ---------------------------------------------------------------------- 3. accumulation across optimizer steps
def _forgot_zero_grad(run: Run):
    steps = [index for index, _ in run.optimizer_steps]
    if len(steps) < 2:
        return
    stepped = {tid for _, ev in run.optimizer_steps for tid in ev.get("tids") or ()}
    for tid, entries in run.grads.items():
        if tid not in stepped:
            continue  # a tensor the optimizer does not update may accumulate on purpose
        grew = 0
        # an op that wrote into the gradient (clip_grad_norm_ scales it) does not clear it
        kept = [e for e in entries if e.how != "in_place"]
        for a, b in zip(kept, kept[1:]):
            if a.how == "accumulate" and b.how == "accumulate" and any(a.index < s < b.index for s in steps):
                grew += 1
                first = b
        if grew:
            name = _name(run, tid)
            op_line = next((ev.get("line") for i, ev in run.optimizer_steps if i > first.index), None)
            yield Finding("no-zero-grad", f"{name}.grad keeps growing across optimizer steps", op_line,
                          f"{name}.grad was added to {grew + 1} times with an optimizer step in between and no "
                          "zero_grad: each step uses the sum of all earlier gradients.",
                          "Call optimizer.zero_grad() (or set .grad = None) once per optimizer step, before backward.",
                          first.index, f"t{tid}")
            return  # one finding is enough: the others say the same


# ---------------------------------------------------------------------- 4. backward through a freed graph
def _backward_twice(run: Run):
    for index, err in _errors(run, "Trying to backward through the graph a second time"):
        vid = err.get("vid")
        op = run.op_nodes.get(vid)
        earlier = None
        if op is not None:
            for bid, _ in op.executed:
                call = run.backwards.get(bid)
                if call is not None and bid != err.get("bid") and not call.retain_graph:
                    earlier = call
        explanation = (f"The first backward (line {earlier.line}) freed the tensors "
                       f"{op.name if op else 'the node'} saved for backward; the second (line {err.get('line')}) "
                       "needed them again." if earlier else
                       "A backward freed the saved tensors this backward needs.")
        yield Finding("backward-twice", "second backward through a freed graph", err.get("line"), explanation,
                      "Compute the forward again before the second backward, combine the losses into one backward, "
                      "or pass retain_graph=True to the first backward if you really need both.",
                      index, f"op{vid}" if vid else None, [earlier.line] if earlier else [])


# ---------------------------------------------------------------------- 5. retain_graph / create_graph for nothing
def _retain_for_nothing(run: Run):
    calls = sorted(run.backwards.values(), key=lambda c: c.start)
    for i, call in enumerate(calls):
        later = calls[i + 1:]
        if call.retain_graph and "retain_graph" not in call.forced and not call.create_graph and call.ok:
            reused = any(set(call.order) & set(other.order) for other in later)
            if not reused:
                yield Finding("retain-graph-unused", "retain_graph=True, but nothing backpropagates through the graph again",
                              call.line, "The saved tensors of this graph are kept after backward, and no later backward "
                                         "runs any of its nodes: the memory is held for nothing.",
                              "Drop retain_graph=True.", call.end or call.start)
        if call.create_graph and "create_graph" not in call.forced and call.ok:
            end = call.end or call.start
            created = {vid for vid, op in run.op_nodes.items() if call.start <= op.born <= end}
            used = any(created & set(other.order) for other in later)
            # (the graph of the gradient itself is not always recorded node by node: with no later
            # backward at all, nothing can have used it)
            if (created or not later) and not used:
                yield Finding("create-graph-unused", "create_graph=True, but no higher-order gradient is taken",
                              call.line, "This backward recorded a graph of its own gradient computation, and nothing "
                                         "differentiates through it.",
                              "Drop create_graph=True unless you need second derivatives.", end)


# ---------------------------------------------------------------------- 6. graphs kept across steps
def _kept_across_steps(run: Run):
    """Each step's graph should die with the step; here the graphs of earlier steps stay alive.

    Steps are ``step()`` calls, or in a plain script the stretches between backward calls."""
    steps = [step for step in run.steps if step["end"] is not None]
    if not steps:
        calls = sorted((c for c in run.backwards.values() if c.api == "backward" and c.end is not None),
                       key=lambda c: c.start)
        steps = [{"start": c.start, "end": c.end} for c in calls]
    if len(steps) < 3:
        return
    # nodes alive at the end of each step: born by then, less those dead by then (a node dies after
    # it is born): two sorted lists, not a pass over every node per step
    nodes = [op for op in run.op_nodes.values() if op.name != ACCUMULATE_GRAD]
    births = sorted(op.born for op in nodes)
    deaths = sorted(op.dead for op in nodes if op.dead is not None)
    alive = [bisect_right(births, step["end"]) - bisect_right(deaths, step["end"]) for step in steps]
    if not all(b > a for a, b in zip(alive, alive[1:])):
        return
    kept = []
    for call in sorted(run.backwards.values(), key=lambda c: c.start):
        for tid in call.roots_tensors:
            op = run.op_nodes.get(run.tensors.get(tid, {}).get("grad_fn"))
            if op is not None and op.dead is None and call.start < steps[-1]["start"]:
                kept.append((tid, op))
    if not kept:
        return
    tid, op = kept[0]
    users = [o.get("line") for _, o in run.ops if any(t == tid for t, _ in o.get("inputs") or ()) and o.get("grad_fn")]
    line = users[-1] if users else op.line
    saved = [run.live_saved_bytes(step["end"])["activation"] for step in steps]  # (the weights are held anyway)
    grows = " and the activations they save" if all(b > a for a, b in zip(saved, saved[1:])) else ""
    yield Finding("graph-kept", "every step's graph stays alive", line,
                  f"The autograd nodes alive at the end of each step grow ({', '.join(map(str, alive))}){grows}: "
                  f"{_the_loss(run, tid)} (line {op.line}) is still referenced after its step, e.g. by a list of "
                  "losses or total_loss += loss, and with it the whole graph that produced it.",
                  "Keep numbers, not tensors: losses.append(loss.item()), total_loss += loss.item(), "
                  "or loss.detach().", steps[-1]["end"], f"op{op.vid}")


# ---------------------------------------------------------------------- 10. non-scalar backward
def _nonscalar(run: Run):
    for index, err in _errors(run, "grad can be implicitly created only for scalar outputs"):
        yield Finding("non-scalar-backward", "backward() on a non-scalar tensor without a gradient", err.get("line"),
                      "backward() needs a single number to start from; for a tensor of several values autograd does "
                      "not know how to weigh them.",
                      "Reduce it first (loss.sum() or loss.mean()), or pass a gradient of the same shape: "
                      "y.backward(torch.ones_like(y)).", index)


# ---------------------------------------------------------------------- 11. manual update recorded in the graph
def _update_in_graph(run: Run):
    for index, err in _errors(run, "a leaf Variable that requires grad is being used in an in-place operation"):
        yield Finding("update-outside-no-grad", "parameter updated in place outside torch.no_grad()", err.get("line"),
                      "Autograd refuses to change a leaf that requires grad in place while recording.",
                      "Wrap the update in `with torch.no_grad():` (or use an optimizer).", index)
    grads = set()
    tensors = run.tensors
    for number, tid in enumerate(list(tensors)):  # (a big run has hundreds of thousands: with pauses)
        if number % PAUSE_EVERY == PAUSE_EVERY - 1:
            yield None
        if tensors[tid].get("kind") == "grad":
            grads.add(tid)
    yield None
    for number, (index, op) in enumerate(run.ops):
        if number % PAUSE_EVERY == PAUSE_EVERY - 1:
            yield None
        inputs = [t for t, _ in op.get("inputs") or ()]
        if any(t in grads for t in inputs) and not op.get("inplace"):  # values computed from a .grad
            grads.update(t for t, _ in op.get("outputs") or ())
        if op.get("mode") == "grad" and op.get("grad_fn") is not None and any(t in grads for t in inputs):
            leaf = next((t for t in inputs if run.tensors.get(t, {}).get("is_leaf") and run.tensors[t].get("requires_grad")), None)
            if leaf is not None:
                yield Finding("update-outside-no-grad", "parameter update recorded into the graph", op.get("line"),
                              f"{_name(run, leaf)} is updated from its .grad with grad enabled: the update becomes part "
                              "of the next forward's graph, so the parameter stops being a leaf.",
                              "Do the update inside `with torch.no_grad():`.", index)
                return


# ---------------------------------------------------------------------- 12. NaN / Inf in gradients
def _nan_grad(run: Run):
    for call in run.backwards.values():
        if not call.non_finite:  # (noted as the run's events came: no gradient is read back here)
            continue
        vid = next((v for v in call.order if v in call.non_finite), None)
        if vid is None:
            continue
        op = run.op_nodes.get(vid)
        name = op.name if op else f"node {vid}"
        # the moment the bad gradient leaves the node (its bw_node_done in this call)
        index = call.non_finite[vid]
        # an earlier gradient's statistics were of a sample: it may hide a NaN
        sampled_before = call.first_sampled is not None and call.first_sampled < index
        yield Finding("nan-grad", f"NaN or Inf in a gradient, first produced by {name}",
                      op.line if op else call.line,
                      f"{name} (created at line {op.line if op else '?'}) is the first node in this backward "
                      "whose outgoing gradient holds NaN or Inf; every gradient computed from it inherits it."
                      + (" Earlier large gradients were summarized from a sample of their values, which "
                         "could miss a single NaN: look at the nodes just before it too." if sampled_before else ""),
                      "Look at that op's inputs: division by zero, log or sqrt of 0 or negatives, overflow "
                      "in exp; clamp or add an epsilon.", index, f"op{vid}")
        return


# ---------------------------------------------------------------------- 13. in-place on a saved tensor
def _inplace_saved(run: Run):
    for index, err in _errors(run, "modified by an inplace operation"):
        vid = err.get("vid")
        op = run.op_nodes.get(vid)
        start = run.backwards[err["bid"]].start if err.get("bid") in run.backwards else index
        inplace = [(i, o) for i, o in run.ops if i < start and o.get("inplace")]
        culprit = inplace[-1][1] if inplace else None
        yield Finding("inplace-saved", "an in-place op changed a tensor saved for backward",
                      culprit.get("line") if culprit else err.get("line"),
                      f"{op.name if op else 'A node'} (line {op.line if op else '?'}) saved a tensor for backward; "
                      f"{'line ' + str(culprit.get('line')) + ' (' + culprit['op'] + ') ' if culprit else 'an in-place op '}"
                      "modified it afterwards, so the gradient would be wrong and torch refuses.",
                      "Use the out-of-place op (x = x.relu() instead of x.relu_()), or clone() before changing it.",
                      index, f"op{vid}" if vid else None, [op.line] if op and op.line else [])


# ---------------------------------------------------------------------- 8. detach is not a copy
#: in-place ops that change a tensor's flags, not its values (``nn.Buffer`` calls
#: ``data.detach().requires_grad_(False)``: no write into anything)
_WRITE_NO_VALUES = frozenset({"requires_grad_", "share_memory_", "detach_", "rename_"})


def _detach_write(run: Run):
    detached = {}
    for number, (index, ev) in enumerate(run.events.where({"detach"})):
        if number % 128 == 127:  # (read back from the run's event log: a few ms)
            yield None
        detached[ev["dst"]] = ev
    if not detached:
        return
    for number, (index, op) in enumerate(run.ops):
        if number % PAUSE_EVERY == PAUSE_EVERY - 1:
            yield None
        if op.get("inplace") and op["op"] not in _WRITE_NO_VALUES and op.get("inputs") and op["inputs"][0][0] in detached:
            src = detached[op["inputs"][0][0]]["src"]
            if not run.tensor_name(src) and not _used_after(run, src, index):
                continue  # an unnamed original nothing reads again (nn.Buffer's throwaway in a constructor)
            yield Finding("detach-is-not-copy", "writing into a detached tensor changes the original", op.get("line"),
                          f"{_name(run, op['inputs'][0][0])} came from {_name(run, src)}.detach(), which shares its "
                          f"memory: {op['op']} changes {_name(run, src)} too.",
                          "Use .detach().clone() when you need an independent copy.", index)
            return


def _used_after(run: Run, tid: int, index: int) -> bool:
    """Whether an op after event ``index`` reads tensor ``tid``."""
    return any(any(t == tid for t, _ in ev.get("inputs") or ()) for _, ev in run.events.where({"op"}, start=index + 1))


# ---------------------------------------------------------------------- 7 and 9. eval() and graphs kept by inference
def _eval_is_not_no_grad(run: Run):
    modes = list(run.events.where({"module_mode"}))
    evals = [(n, i, ev) for n, (i, ev) in enumerate(modes) if not ev.get("training")]
    if not evals:
        return
    number, index, ev = evals[0]
    # until the script switches back to train(); not a checkpoint's recompute inside backward
    until = next((i for i, later in modes[number + 1:] if later.get("training")), len(run.events))
    graphs = [(i, op) for i, op in run.ops if index < i < until and op.get("grad_fn") is not None
              and op.get("mode") == "grad" and op.get("recompute") is None]
    if not graphs:
        return
    never = [op for _, op in graphs if not run.op_nodes.get(op["grad_fn"]) or not run.op_nodes[op["grad_fn"]].executed]
    if never:
        first = never[0]
        yield Finding("eval-is-not-no-grad", "model.eval() does not turn off autograd", first.get("line"),
                      f"After {ev.get('type')}.eval() (line {ev.get('line')}) the forward still recorded a graph "
                      f"({len(never)} ops with a grad_fn) that no backward uses: eval() only switches Dropout and "
                      "BatchNorm to inference behaviour.",
                      "Wrap evaluation in `with torch.no_grad():` or `torch.inference_mode()` as well as calling eval().",
                      graphs[0][0], f"op{first['grad_fn']}", [ev.get("line")])


def _inference_graphs_kept(run: Run):
    """Outputs of forward passes never backpropagated, still alive, piling up."""
    kept = [op for op in run.op_nodes.values() if op.dead is None and not op.executed and op.name != ACCUMULATE_GRAD]
    if len(kept) < 3:  # (a finished run has few such nodes, if any: the nodes they feed are looked for only then)
        return
    yield None
    consumers = {child for op in run.op_nodes.values() for child, _ in op.next if child is not None}
    kept = [op for op in kept if op.vid not in consumers]
    if len(kept) < 3:
        return
    held = held_at(run).activations  # (the weights they save the model holds anyway)
    lines = sorted({op.line for op in kept if op.line})
    yield Finding("inference-graphs-kept", f"{len(kept)} graphs that nothing backpropagates are kept alive",
                  lines[-1] if lines else None,
                  f"Forward results that still carry a graph (and {human(held)} of activations saved for them) stay referenced, one "
                  "more each time: memory creeps up although no backward ever needs them.",
                  "Run evaluation under torch.no_grad() / inference_mode(), and store loss.item() or output.detach().",
                  max(op.born for op in kept), f"op{kept[-1].vid}", lines[:5])


# ---------------------------------------------------------------------- 8b. .cpu() does not detach
def _cpu_does_not_detach(run: Run):
    for index, err in _errors(run, "Can't call numpy() on Tensor that requires grad"):
        cpu = [op for i, op in run.ops if i < index and op.get("op") in ("cpu", "to")]
        yield Finding("cpu-is-not-detach", ".cpu() does not detach", err.get("line"),
                      "The tensor still requires grad: moving it to the CPU "
                      f"{'(line ' + str(cpu[-1].get('line')) + ') ' if cpu else ''}keeps it in the graph, and NumPy "
                      "arrays cannot carry a graph.",
                      "Write tensor.detach().cpu().numpy(): stop the gradient first, then move the data.", index)


# ---------------------------------------------------------------------- 8c. an inference tensor in a graph
def _inference_tensor_saved(run: Run):
    for index, err in _errors(run, "Inference tensors cannot be saved for backward"):
        entered = [ev.get("line") for i, ev in run.events.where({"mode"}, 0, index)
                   if ev.get("mode") == "inference_mode" and ev.get("line")]
        yield Finding("inference-tensor-in-graph", "a tensor made under inference_mode() is used where autograd "
                      "must save it", err.get("line"),
                      "Tensors made inside torch.inference_mode() carry no version counter, so autograd cannot "
                      "save them for backward: using one in an op that needs grad fails"
                      + (f" (one was made under inference mode at line {entered[-1]})." if entered else "."),
                      "Make it under torch.no_grad() instead, or use a copy made outside inference mode "
                      "(t.clone()) in the computation that needs grad.", index, None, entered[-1:])


# ---------------------------------------------------------------------- 14. micro-batches without loss scaling
_SCALING_OPS = {"div", "__truediv__", "true_divide", "__itruediv__", "mul", "__mul__", "__rmul__", "__imul__",
                "__div__", "divide"}


def _share_a_forward(run: Run, calls: list) -> bool:
    """Whether two of the backward calls ran a node of the same graph: two losses of one forward
    (``lm.backward(retain_graph=True)``, then ``aux.backward()``), whose gradients add up as they
    should, not micro-batches."""
    seen: set[int] = set()
    for call in calls:
        ran = {vid for vid in call.order if vid in run.op_nodes and run.op_nodes[vid].name != ACCUMULATE_GRAD}
        if ran & seen:
            return True
        seen |= ran
    return False


def _unscaled_accumulation(run: Run):
    marks = sorted([i for i, _ in run.optimizer_steps])
    if not marks:
        return
    calls = sorted((c for c in run.backwards.values() if c.api == "backward" and c.ok), key=lambda c: c.start)
    previous = -1
    for mark in marks:
        window = [c for c in calls if previous < c.start < mark]
        previous = mark
        if len(window) < 2 or _share_a_forward(run, window):
            continue
        unscaled = []
        for call in window:
            for tid in call.roots_tensors:
                op = _producer(run, tid)
                if op is not None and op.get("op") not in _SCALING_OPS:
                    unscaled.append((call, op))
        if len(unscaled) == len(window):
            call, op = unscaled[0]
            yield Finding("unscaled-accumulation",
                          f"{len(window)} micro-batch gradients summed without scaling the loss", op.get("line"),
                          f"{len(window)} backward calls added into the same .grad before one optimizer step, and "
                          "each loss was used as is: the update is the sum, "
                          f"{len(window)} times larger than the gradient of the mean over the whole batch.",
                          f"Divide each micro-batch loss by the number of micro-batches ({len(window)}) before "
                          "backward.", call.start)
            return


# ---------------------------------------------------------------------- 16. DDP: a parameter without gradient on a rank
def _distributed(run: Run) -> bool:
    world = (run.start or {}).get("world_size")
    return (isinstance(world, int) and world > 1) or "DistributedDataParallel" in run.module_types.values()


def _ddp_unused_parameters(run: Run):
    """A parameter that gets no gradient in a backward on this rank while others do: the trap
    ``find_unused_parameters`` is about. One finding per module, at the first such backward."""
    if not _distributed(run):
        return
    rank = (run.start or {}).get("rank")
    where = f"on rank {rank}" if rank is not None else "in this process"
    params = {tid: run.tensor_name(tid) for tid, info in run.tensors.items()
              if info.get("kind") == "param" and info.get("requires_grad") and run.tensor_name(tid)}
    reached: dict[int, set] = {}
    for tid, entries in run.grads.items():
        for entry in entries:
            if entry.how == "accumulate" and entry.bid is not None:
                reached.setdefault(entry.bid, set()).add(tid)
    reported: set[str] = set()
    for bid in sorted(run.backwards):
        call, got = run.backwards[bid], reached.get(bid, set())
        if call.api != "backward" or not got:
            continue
        missing: dict[str, list[tuple[int, str]]] = {}
        for tid, name in params.items():
            if tid not in got:
                missing.setdefault(name.rpartition(".")[0] or name, []).append((tid, name))
        for module, tensors in missing.items():
            if module in reported:
                continue
            reported.add(module)
            names = ", ".join(name for _, name in tensors)
            kind = run.module_types.get(module)
            yield Finding(
                "ddp-unused-parameter", f"{module} gets no gradient {where}", call.line,
                f"The backward at line {call.line} reached {len(got)} parameters {where} but not {names}: "
                f"this rank's forward never used {module}{f' ({kind})' if kind else ''}. "
                "DistributedDataParallel waits for every parameter's gradient before it averages them across "
                "ranks; without find_unused_parameters=True this rank never finishes the reduction (the next "
                "forward raises 'Expected to have finished reduction in the prior iteration') and the other "
                "ranks wait in backward. With it, DDP walks the graph after every forward to find such "
                "parameters, which costs time.",
                f"Use {module} on every rank and every step (or freeze it: requires_grad_(False)); if the model "
                "really skips it on some inputs, pass find_unused_parameters=True to DistributedDataParallel.",
                call.start, f"t{tensors[0][0]}")
# ---------------------------------------------------------------------- 15. a cut that leaves no parameter a gradient
def cut_finding(run: Run) -> Finding | None:
    """The graph was cut (a detach, no_grad, the "detach at" option) so that no leaf that requires
    grad got a gradient: where, and what it did to the run. None if nothing was cut off so (a
    backward() that raised for want of a grad_fn is the no-grad-fn finding instead)."""
    found = severed(run)
    if found is None or any(True for _ in _errors(run, "does not require grad and does not have a grad_fn")):
        return None
    cut, index, loss = found
    loss_info = run.tensors.get(loss, {})
    if not run.backwards:
        made = (f"so {_the_loss(run, loss)} has no grad_fn: graphview ran no backward and no parameter got a "
                "gradient")
        title = f"the loss has no grad_fn: the graph is cut at line {cut.line}" if loss_info.get("grad_fn") is None \
            else f"no backward ran: the graph is cut at line {cut.line}"
    else:
        calls = len(run.backwards)
        made = (f"so {'the backward call' if calls == 1 else f'the {calls} backward calls'} reached no parameter: "
                "none got a gradient")
        title = f"no parameter gets a gradient: the graph is cut at line {cut.line}"
    if cut.module or cut.module_type:
        title += f" ({'module ' + cut.module if cut.module else cut.module_type})"
    results = [summary_scalar(ev.get("result")) for _, ev in _step_ends(run)]
    if len(results) > 1 and results[0] is not None and all(r == results[0] for r in results):
        made += f", the optimizer changed nothing and the loss is {results[0]:.6g} in every step"
    return Finding("graph-cut", title, cut.line, f"{_cut_words(run, cut)}, {made}.", _cut_fix(run, cut), cut.index,
                   f"t{cut.tid}", [line for line in (loss_info.get("line"),) if line and line != cut.line])


def _step_ends(run: Run):
    return run.events.where({"step_end"})


def _options(run: Run) -> RunOptions:
    return RunOptions.from_dict((run.start or {}).get("options") or {})


def _cut_words(run: Run, cut: Cut) -> str:
    """What cut the graph, and where: "The run option 'detach at 2' cut the graph at line 14, ..."."""
    if cut.how == "detach at":
        specs = ", ".join(_options(run).detach_at) or "?"
        return f"The run option 'detach at {specs}' cut the graph at {cut.where}"
    if cut.how == "detach":
        call = {"detach_": ".detach_()", "data": ".data"}.get(cut.op or "", ".detach()")
        return f"The script's {call} cut the graph at {cut.where}"
    option = " (the grad mode run option)" if _options(run).grad_mode == cut.how else ""
    return f"{cut.op or 'An op'} ran inside a {cut.how} region{option} at {cut.where}, where autograd records no graph"


def _cut_fix(run: Run, cut: Cut) -> str:
    if cut.how == "detach at":
        return ("Clear 'detach at' in the run options (or detach where the parameters' gradients need not pass) and "
                "run again.")
    if cut.how == "detach":
        return ("Remove that .detach() from the path between the parameters and the loss; detach only values that must "
                "not learn (a target, a teacher's output).")
    if _options(run).grad_mode == cut.how:
        return "Set grad mode back to grad in the run options and run again."
    return f"Run the forward with grad enabled: move it out of the {cut.how} block."


def _graph_cut(run: Run):
    finding = cut_finding(run)
    if finding is not None:
        yield finding


# ---------------------------------------------------------------------- 17. a checkpoint recomputes BatchNorm
#: the buffers a norm layer updates on every forward in training mode
_RUNNING_STATISTICS = ("num_batches_tracked", "running_mean", "running_var")


def _recompute_updates_buffers(run: Run):
    """A checkpoint's recompute that writes into a buffer (BatchNorm's ``num_batches_tracked``:
    its running statistics move with it) updates it a second time for one forward."""
    for number, (index, op) in enumerate(run.ops):
        if number % PAUSE_EVERY == PAUSE_EVERY - 1:
            yield None
        if op.get("recompute") is None or not op.get("inplace") or not op.get("inputs"):
            continue
        tid = op["inputs"][0][0]
        info = run.tensors.get(tid) or {}
        name = info.get("name") or ""
        if info.get("kind") != "buffer" or not name.endswith(_RUNNING_STATISTICS):
            continue
        module = name.rpartition(".")[0] or "a module"
        forward = next((o for _, o in run.ops if o.get("recompute") is None and o.get("module") == module), None)
        line = forward.get("line") if forward is not None else op.get("line")
        yield Finding("checkpoint-recomputes-batchnorm",
                      f"a checkpoint recomputes {module}: its running statistics are updated twice", line,
                      f"torch.utils.checkpoint runs the forward again in backward, {module} with it: in training "
                      f"mode it updates {name} (and its running mean and variance) on every forward, so the "
                      "recompute updates them a second time for the same batch: the count goes up by 2 a step and "
                      "the running statistics move twice.",
                      f"Leave {module} out of the checkpointed part (checkpoint the layers around it), or use a "
                      "norm without running statistics (LayerNorm, GroupNorm).", index)
        return


CHECKS = [_no_grad_fn, _grad_none, _forgot_zero_grad, _backward_twice, _retain_for_nothing, _kept_across_steps,
          _nonscalar, _update_in_graph, _nan_grad, _inplace_saved, _detach_write, _eval_is_not_no_grad,
          _inference_graphs_kept, _cpu_does_not_detach, _inference_tensor_saved, _unscaled_accumulation,
          _ddp_unused_parameters,
          _graph_cut, _recompute_updates_buffers]
