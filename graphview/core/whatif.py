"""What a what-if option changed: two runs of one script compared step by step.

For each step both runs have: the peak of live saved bytes (per device, :meth:`Run.peak_per_step`),
the activations held for each module when the step's first backward starts (the forward is done:
everything it saved for backward is held; its weights apart, which no checkpoint frees), and the
ops a checkpoint recomputed inside backward (the extra compute, counted from the recorded
``recompute`` ops).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Iterator

from graphview.core.checkpoint_kept import RECOMPUTE_MODULE, credited, kept_in_forward
from graphview.core.held import (Held, Peak, activation_peaks, gather_activation_peaks, held_by_nodes, highest_peak,
                                 human)
from graphview.core.run import Run

TOP_MODULES = 3
#: the module a ``torch.compile``'d model wraps (its parameters are ``_orig_mod.*``)
COMPILED = "_orig_mod"


@dataclass
class ModuleChange:
    path: str
    before: int  # activations held for it when backward starts (:func:`module_bytes`), in the earlier run
    after: int  # the same in this run

    @property
    def change(self) -> int:
        return self.after - self.before


@dataclass
class StepComparison:
    step: int
    peak_before: dict[str, int]  # device -> peak live saved bytes in the step
    peak_after: dict[str, int]
    recomputed_before: int  # ops recomputed inside backward in the step
    recomputed_after: int
    activations_before: dict[str, int] = field(default_factory=dict)  # device -> peak of activations held in the step
    activations_after: dict[str, int] = field(default_factory=dict)
    modules: list[ModuleChange] = field(default_factory=list)  # the biggest changes first
    #: what the peaks of all saved hold besides activations, in either run: ("weights", "inputs"),
    #: either, or none (a lesson's leaves are plain tensors: inputs, no weight)
    anyway: tuple[str, ...] = ("weights", "inputs")

    @property
    def anyway_words(self) -> str:
        """``"weights and inputs"``, ``"inputs"``, ...; empty where the peaks hold activations alone."""
        return " and ".join(self.anyway)


def held_anyway(run: Run, start: int, end: int) -> set[str]:
    """What the peak of all saved bytes between events ``start`` and ``end`` holds besides
    activations, on any device (``"weights"``, ``"inputs"``): what the saved bytes were when the
    total was highest, the first time it was."""
    peaks: dict[str, tuple[int, int, int]] = {}  # device -> (total, weights, inputs)
    for index, device, a, p, i in run.memory_points:
        if index > end:
            break
        if index < start or a + p + i > peaks.get(device, (-1,))[0]:
            peaks[device] = (a + p + i, p, i)  # (before the span: what the span starts with)
    kinds = set()
    for _, weights, inputs in peaks.values():
        kinds |= {kind for kind, held in (("weights", weights), ("inputs", inputs)) if held}
    return kinds


def step_spans(run: Run) -> list[tuple[int, int, int]]:
    """(step number, first event, last event) of each step; a plain script is one step, 1."""
    if not run.steps:
        return [(1, 0, len(run.events) - 1)]
    return [(s["step"], s["start"], s["end"] if s["end"] is not None else len(run.events) - 1) for s in run.steps]


def peaks_by_step(run: Run) -> dict[int, dict[str, int]]:
    if not run.steps:
        return {1: run.peak_saved_bytes()}
    return {entry["step"]: entry["peak"] for entry in run.peak_per_step()}


def recomputed_ops(run: Run, start: int, end: int) -> int:
    """Ops a checkpoint recomputed inside backward between events ``start`` and ``end``."""
    return sum(1 for index, op in run.ops if start <= index <= end and op.get("recompute") is not None)


def backward_start_in(run: Run, start: int, end: int) -> int:
    """The event the step's forward ends at: its first backward's start (no backward: its end)."""
    found = run.events.find({"backward_start"}, start) if start < len(run.events) else None
    return found if found is not None and found <= end else end


def module_bytes(run: Run, start: int, end: int) -> dict[str, int]:
    """Module path -> the activations held for it when the step's first backward starts: what its
    autograd nodes (nested modules' included, a checkpoint's recompute not) save, and what a
    checkpoint of it keeps for its recompute (its input), each storage once. Not the weights and
    inputs they save, which the process holds checkpointed or not (torch frees none of them)."""
    at = backward_start_in(run, start, end)
    storages = credited(kept_in_forward(run, start, at, end))
    for path, vids in nodes_by_module(run, start, at).items():
        held = storages.setdefault(path, {})
        for vid in vids:
            for saved in run.saved_by_owner.get(vid, ()):
                if saved.kind not in ("param", "input") and saved.held_at(at):
                    held[(saved.device, saved.storage)] = saved.bytes
    return {path: sum(held.values()) for path, held in storages.items()}


def nodes_by_module(run: Run, start: int, end: int) -> dict[str, set[int]]:
    """Module path -> the vids of the autograd nodes made inside its calls (its modules' included)
    between events ``start`` and ``end``, a checkpoint's recompute left out."""
    vids_of: dict[str, set[int]] = {}
    for node in run.op_nodes.values():
        if node.module is None or node.module.startswith(RECOMPUTE_MODULE) or not (start <= node.born <= end):
            continue
        path = node.module
        while path:
            vids_of.setdefault(path, set()).add(node.vid)
            path = path.rpartition(".")[0]
    return vids_of


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def biggest_changes(before: dict[str, int], after: dict[str, int], top: int = TOP_MODULES) -> list[ModuleChange]:
    """The modules whose bytes changed most; a module inside (or around) one already named is left
    out, the deeper of two with the same change named."""
    changes = [ModuleChange(path, before.get(path, 0), after.get(path, 0)) for path in set(before) | set(after)]
    changes = [c for c in changes if c.change]
    changes.sort(key=lambda c: (-abs(c.change), -c.path.count("."), c.path))
    chosen: list[ModuleChange] = []
    for change in changes:
        if not any(_related(change.path, other.path) for other in chosen):
            chosen.append(change)
        if len(chosen) == top:
            break
    return chosen


def compare_runs(before: Run, after: Run) -> list[StepComparison]:
    """Step by step, the steps both runs have (by number)."""
    peaks_b, peaks_a = peaks_by_step(before), peaks_by_step(after)
    spans_b = {number: (start, end) for number, start, end in step_spans(before)}
    result = []
    for number, start, end in step_spans(after):
        if number not in spans_b:
            continue
        b_start, b_end = spans_b[number]
        result.append(StepComparison(
            step=number, peak_before=peaks_b.get(number, {}), peak_after=peaks_a.get(number, {}),
            activations_before=_activation_peaks(before, b_start, b_end),
            activations_after=_activation_peaks(after, start, end),
            recomputed_before=recomputed_ops(before, b_start, b_end), recomputed_after=recomputed_ops(after, start, end),
            modules=biggest_changes(module_bytes(before, b_start, b_end), module_bytes(after, start, end)),
            anyway=tuple(kind for kind in ("weights", "inputs")
                         if kind in held_anyway(before, b_start, b_end) | held_anyway(after, start, end))))
    return result


def _activation_peaks(run: Run, start: int, end: int | None = None) -> dict[str, int]:
    return {device: peak.held.activations for device, peak in activation_peaks(run, start, end).items()}


def module_bytes_in_both(before: Run, after: Run, step: int) -> dict[str, tuple[int, int]]:
    """Module path -> (activations held for it in the earlier run, in this one) when step ``step``'s
    backward starts (:func:`module_bytes`)."""
    spans_b = {number: (start, end) for number, start, end in step_spans(before)}
    spans_a = {number: (start, end) for number, start, end in step_spans(after)}
    if step not in spans_b or step not in spans_a:
        return {}
    b, a = module_bytes(before, *spans_b[step]), module_bytes(after, *spans_a[step])
    return {path: (b.get(path, 0), a.get(path, 0)) for path in set(a) | set(b)}


def _peak_text(before: dict[str, int], after: dict[str, int]) -> str:
    parts = []
    for device in sorted(set(before) | set(after)):
        b, a = before.get(device, 0), after.get(device, 0)
        ratio = f" ({(a - b) / b:+.0%})" if b else ""
        parts.append(f"{device} {human(b)} -> {human(a)}{ratio}")
    return ", ".join(parts) or "no saved tensors"


def comparison_lines(comparisons: list[StepComparison], before_label: str, after_label: str) -> list[str]:
    """The comparison in words, a line per fact (what ``graphview check --compare`` and the memory
    panel's summary say)."""
    lines = [f"{before_label} -> {after_label}"]
    for c in comparisons:
        if c.activations_before or c.activations_after:
            lines.append(f"step {c.step}: peak of activations held for backward "
                         f"{_peak_text(c.activations_before, c.activations_after)}")
            if c.anyway:  # (else all saved is the activations)
                lines.append(f"  with the {c.anyway_words} held anyway, peak saved {_peak_text(c.peak_before, c.peak_after)}")
        else:
            lines.append(f"step {c.step}: peak saved {_peak_text(c.peak_before, c.peak_after)}")
        extra = c.recomputed_after - c.recomputed_before
        if c.recomputed_after or c.recomputed_before:
            lines.append(f"  recomputed in backward: {c.recomputed_before} -> {c.recomputed_after} ops ({extra:+d})")
        for m in c.modules:
            lines.append(f"  {m.path}: {human(m.before)} -> {human(m.after)} of activations held at backward "
                         f"({m.change:+,} B)")
    return lines


#: a suggestion must cut at least this share of the activations the forward holds at its peak
#: (less is not worth a recompute)
WORTH_A_RECOMPUTE = 0.02


@dataclass
class Suggestion:
    """Checkpointing ``pattern`` (a module path, or ``parent.*`` for every numbered layer) drops
    the activations its nodes made from the forward (``freed`` of the ``peak`` bytes of
    activations held on ``device`` at event ``at``; ``held`` is all its nodes hold then, its
    share of the weights too), and holds them again in backward, where the checkpoint recomputes
    them: the peak of activations falls by about ``saving`` (see :func:`checkpoint_suggestions`).
    Weights are held whatever is checkpointed: they are not part of any figure here."""

    pattern: str
    held: Held
    peak: Held  # everything held for backward at the peak of activations
    device: str
    at: int
    types: str | None = None  # the module's class name (``TransformerEncoderLayer``)
    saving: int = 0
    calls: int = 1  # the module's calls (each checkpointed, and recomputed, on its own)
    freed: int = 0  # what the forward no longer holds at its end
    recomputed: int = 0  # the forward's ops inside the module(s), run again in backward
    forward_ops: int = 0  # all the forward's ops, to say what the recompute costs

    def title(self) -> str:
        """What to checkpoint and what it saves, in a line (a list's row; :meth:`text` in full)."""
        what = f" ({self.types})" if self.types else ""
        activations = self.peak.activations
        share = f" ({self.saving / activations:.0%})" if activations else ""
        return f"checkpoint {self.pattern}{what}: peak of activations −{human(self.saving)}{share}"

    def text(self) -> str:
        what = f" ({self.types})" if self.types else ""
        again = "one layer at a time" if self.pattern.endswith(".*") else (
            "one call at a time" if self.calls > 1 else "all at once")
        activations = self.peak.activations
        share = f" ({self.saving / activations:.0%})" if activations else ""
        cost = ""
        if self.recomputed:
            cost = f"; it costs {self.recomputed} ops run again"
            if self.forward_ops:
                cost += f" ({self.recomputed / self.forward_ops:.0%} of the forward's)"
        return (f"checkpoint {self.pattern}{what}: at the peak (event {self.at}) backward holds "
                f"{human(activations)} of activations, {human(self.held.activations)} of them in these "
                f"modules; recomputed in backward, {again}, the peak of activations falls by about "
                f"{human(self.saving)}{share}{cost}")


#: nodes, saved tensors or events a step of the estimate goes through between two points where
#: its caller may pause (a few ms)
PAUSE_EVERY = 4096


def checkpoint_suggestions(run: Run, top: int = TOP_MODULES) -> list[Suggestion]:
    """The modules whose checkpointing would cut the peak of activations most, from what each
    module's nodes made and hold at that peak (:meth:`Run.checkpoint_would_free`), biggest first.
    Numbered layers side by side (``encoder.layers.0``, ``encoder.layers.1``) are offered together
    as ``encoder.layers.*``. Left out: modules the run already checkpoints, a module inside (or
    around) one already offered, a model called as a whole (``--checkpoint`` wraps the modules
    inside a called model, not its own call), and anything cutting less than
    :data:`WORTH_A_RECOMPUTE` of the peak."""
    return [suggestion for suggestion in suggesting(run, top) if suggestion is not None]


def suggesting(run: Run, top: int = TOP_MODULES) -> Iterator[Suggestion | None]:
    """The suggestions of :func:`checkpoint_suggestions` as they are chosen, with a None between
    the steps of the estimate and between the modules it weighs: a point where the caller may stop
    and come back (the window weighs a big run's modules a few ms at a time)."""
    peaks: dict[str, Peak] = {}
    yield from gather_activation_peaks(run, peaks)
    peak = highest_peak(peaks)
    if peak is None:
        return
    yield None
    from graphview.core.options import module_matches

    at = peak.at
    vids_of: dict[str, set[int]] = {}
    yield from _nodes_by_pattern(run, at, vids_of)
    step_start = next((start for _, start, end in step_spans(run) if start <= at <= end), 0)
    ops_in, forward_ops = _forward_ops_by_module(run, step_start, at)
    yield None
    candidates: list[tuple[int, str, int, int, set[int]]] = []
    yield from _candidates(run, peak, vids_of, candidates)
    chosen: list[Suggestion] = []
    for saving, pattern, units, freed, vids in candidates:
        stem = pattern.removesuffix(".*")
        if any(_related(stem, s.pattern.removesuffix(".*")) for s in chosen):
            continue
        first = next((p for p in sorted(run.module_types) if module_matches(pattern, p)), pattern)
        recomputed = sum(n for path, n in ops_in.items() if module_matches(pattern, path))
        chosen.append(Suggestion(pattern, held_by_nodes(run, vids, at), peak.held, peak.device, at,
                                 run.module_types.get(first), saving, units, freed, recomputed, forward_ops))
        yield chosen[-1]
        if len(chosen) == top:
            break


def _pauses(items, every: int = PAUSE_EVERY):
    """``items`` with their count; a caller that is a generator yields None when the count says so
    (every ``every`` items), a point where its own caller may pause."""
    return ((count % every == every - 1, item) for count, item in enumerate(items))


def _nodes_by_pattern(run: Run, at: int, vids_of: dict[str, set[int]]) -> Iterator[None]:
    """Put in ``vids_of`` each module path, and each pattern of numbered layers
    (``encoder.layers.*``), with the autograd nodes made inside it by event ``at`` (a
    checkpoint's recompute apart)."""
    around: dict[str, list[set[int]]] = {}  # a module's path -> the sets of the modules and patterns around it
    for pause, node in _pauses(run.op_nodes.values()):
        if pause:
            yield None
        if node.module is None or node.born > at:
            continue
        sets = around.get(node.module)
        if sets is None:
            sets = around[node.module] = [] if node.module.startswith(RECOMPUTE_MODULE) else _around(node.module, vids_of)
        for vids in sets:
            vids.add(node.vid)


def _candidates(run: Run, peak: Peak, vids_of: dict[str, set[int]],
                candidates: list[tuple[int, str, int, int, set[int]]]) -> Iterator[None]:
    """Put in ``candidates`` (saving, pattern, units, freed, nodes) of each module or pattern worth a
    checkpoint at the peak, the biggest saving first; of equal ones the one module (it recomputes
    less: when the pattern of every layer estimates no more, a layer's saving is what there is),
    then the deeper. Yields None between its steps (see :func:`suggesting`)."""
    from graphview.core.options import RunOptions, module_matches

    at, total = peak.at, peak.held.activations
    done = RunOptions.from_dict((run.start or {}).get("options") or {}).checkpoint
    owners: dict[tuple, set[int]] = {}
    yield from _saved_owners(run, at, owners)
    before = _HeldBefore(run, at)
    yield from before.find()
    kept = _InputsKept(run, at)
    yield from kept.find()
    calls: dict[str, list[tuple[int, int]]] = {}
    roots: set[str] = set()
    yield from _calls(run, at, calls, roots)
    for pattern, vids in vids_of.items():
        yield None
        if any(module_matches(p, pattern) or p == pattern for p in done):
            continue
        if COMPILED in pattern.split("."):
            continue  # inside a torch.compile'd model: checkpointing its modules breaks its compile
        if pattern in roots:
            continue  # a model called as a whole: --checkpoint checkpoints the modules inside it
        if not pattern.endswith(".*") and pattern not in calls:
            continue  # never called itself (a ModuleList): checkpointing it would change nothing
        units = _units(run, pattern, vids_of, calls)
        # each unit is checkpointed on its own: what one saves of another's result (the next layer
        # saves this one's output) is that unit's input, which its checkpoint keeps
        # ... but a checkpoint holds its input from the forward to the recompute: an input nothing
        # else holds at the peak (the script let it go, no node saved it) is memory it adds
        inputs = [kept.added(unit) for unit in units]
        freed = [run.checkpoint_would_free(unit, at, owners) - added for unit, added in zip(units, inputs)]
        saving = _saving(units, freed, total, before, inputs) if any(f > 0 for f in freed) else 0
        if saving >= total * WORTH_A_RECOMPUTE:
            candidates.append((saving, pattern, len(units), sum(freed), vids))
    candidates.sort(key=lambda c: (-c[0], c[1].endswith(".*"), -c[1].count("."), c[1]))


def _forward_ops_by_module(run: Run, start: int, at: int) -> tuple[dict[str, int], int]:
    """Module path -> the ops run inside its calls (its modules' included) from event ``start``
    to ``at``, a checkpoint's recompute left out; and all those ops, in modules or not."""
    counts: dict[str, int] = {}
    total = 0
    for index, op in run.ops:
        if index > at:
            break
        path = op.get("module")
        if index < start or op.get("recompute") is not None or (path or "").startswith(RECOMPUTE_MODULE):
            continue
        total += 1
        while path:
            counts[path] = counts.get(path, 0) + 1
            path = path.rpartition(".")[0]
    return counts, total


class _HeldBefore:
    """Bytes the autograd nodes made before an event hold at event ``at`` (a prefix sum over the
    nodes that hold any, in the order they were made; a storage two nodes save counts once, for
    the first: a ReLU's result that the max-pool after it saves too)."""

    def __init__(self, run: Run, at: int) -> None:
        self.run, self.at = run, at
        self.held: dict[int, int] = {}  # vid -> bytes of the storages it is the first to hold at ``at``
        self.first: dict[tuple, int] = {}  # (device, storage) -> when the first node holding it was made
        self.borns: list[int] = []
        self.sums = [0]

    def find(self) -> Iterator[None]:
        """Work out what each node holds first, a few thousand nodes at a time (see :func:`suggesting`)."""
        held, first, at = self.held, self.first, self.at
        nodes = self.run.op_nodes
        saved_by_owner = self.run.saved_by_owner
        made: list[tuple[int, int, int]] = []  # (born, place, vid): the owners in the order they were made
        for pause, (place, vid) in _pauses(enumerate(saved_by_owner)):
            if pause:
                yield None
            made.append((nodes[vid].born if vid in nodes else -1, place, vid))
        made.sort()
        yield None
        for pause, (_, _, vid) in _pauses(made):
            if pause:
                yield None
            for saved in saved_by_owner[vid]:
                key = (saved.device, saved.storage)
                if saved.kind == "activation" and saved.held_at(at) and key not in first:
                    first[key] = nodes[vid].born if vid in nodes else -1
                    held[vid] = held.get(vid, 0) + saved.bytes
        order = sorted((nodes[vid].born, b) for vid, b in held.items() if vid in nodes)
        self.borns = [born for born, _ in order]
        for _, b in order:
            self.sums.append(self.sums[-1] + b)

    def __call__(self, born: int) -> int:
        return self.sums[bisect_left(self.borns, born)]

    def added_by(self, vids: set[int], born: int) -> int:
        """Bytes the nodes ``vids`` hold at ``at`` that no node made before ``born`` holds (a
        storage once): what holding them again adds to ``self(born)``."""
        storages: dict[tuple, int] = {}
        for vid in vids:
            for saved in self.run.saved_by_owner.get(vid, ()):
                key = (saved.device, saved.storage)
                if saved.kind == "activation" and saved.held_at(self.at) and self.first.get(key, born) >= born:
                    storages[key] = saved.bytes
        return sum(storages.values())


#: bytes of one element of each dtype a trace names
_ELEMENT_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
                  "int8": 1, "uint8": 1, "bool": 1, "complex128": 16, "complex64": 8, "complex32": 4}


class _InputsKept:
    """What a checkpoint of a unit keeps that the run did not hold at event ``at``: the unit's
    input activations (tensors made outside its nodes that its ops read) which were dead by then
    and whose memory no saved tensor held. A MultiheadAttention whose input projection saves a
    copy of its transposed input, not the input: checkpointed, it keeps the input itself."""

    def __init__(self, run: Run, at: int) -> None:
        self.run, self.at = run, at
        # the nodes whose memory a saved tensor holds at ``at`` (a node's own result: its owner)
        self.held_makers: set[int] = set()
        self._reads: dict[int, list[int]] = {}  # vid -> the tensors the op that made it read

    def find(self) -> Iterator[None]:
        """Work out both, a few thousand saved tensors and ops at a time (see :func:`suggesting`)."""
        at = self.at
        for pause, saved in _pauses(self.run.saved.values()):
            if pause:
                yield None
            if saved.kind == "activation" and saved.held_at(at):
                self.held_makers.add(saved.src if saved.src is not None else saved.owner)
        for pause, (index, op) in _pauses(self.run.ops):
            if pause:
                yield None
            if index > at:
                break
            vid = op.get("grad_fn")
            if vid is not None:
                self._reads.setdefault(vid, []).extend(tid for tid, _ in op.get("inputs") or ())

    def added(self, unit: set[int]) -> int:
        run, at = self.run, self.at
        reads = self._reads
        bases: dict[int, int] = {}
        for vid in unit:
            for tid in reads.get(vid, ()):
                info = run.tensors.get(tid)
                if info is None or info.get("grad_fn") is None or info["grad_fn"] in unit:
                    continue  # a leaf (held anyway), or made inside the unit
                root, seen = tid, set()
                while run.tensors.get(root, {}).get("base") is not None and root not in seen:
                    seen.add(root)
                    root = run.tensors[root]["base"]
                base = run.tensors.get(root, info)
                maker = base.get("grad_fn")
                if maker is None or maker in self.held_makers:
                    continue  # a view of a leaf, or memory a saved tensor holds anyway
                if any(run.tensor_dead.get(t, at + 1) > at for t in (tid, root)):
                    continue  # the script still holds it at the peak
                bases[root] = _bytes_of(base)
        return sum(bases.values())


def _bytes_of(info: dict) -> int:
    numel = 1
    for d in info.get("shape") or ():
        numel *= d if isinstance(d, int) else 0
    return numel * _ELEMENT_BYTES.get(info.get("dtype") or "", 4)


def _saving(units: list[set[int]], freed: list[int], peak: int, before: _HeldBefore,
            inputs: list[int] | None = None) -> int:
    """About how far the peak falls if a pattern is checkpointed. What the nodes of each of its
    ``units`` alone save of their own (``freed``, one figure a unit: :meth:`Run.checkpoint_would_free`)
    goes from the forward (the peak at its end drops by it), but backward recomputes each unit (each layer of ``layers.*``, each
    call of a module) when it reaches it, while what was made before it is still held: the
    unit's nodes hold again what they held (its input, which the checkpoint kept, included). The
    new peak is the higher of the two (an nn.LSTM that holds nine tenths of a step is recomputed
    whole beside the embedding: little is saved; the last Linear is recomputed first in backward,
    beside all the rest)."""
    nodes = before.run.op_nodes
    firsts = sorted((min(nodes[vid].born for vid in unit), number) for number, unit in enumerate(units))
    recomputing, earlier_units = 0, 0
    for first, number in firsts:  # (the units made before this one are checkpointed too: theirs is gone)
        # (``inputs``: what the checkpoint keeps of the unit's input that nothing else held: held
        # from the forward to here, and through the recompute)
        again = before.added_by(units[number], first) + (inputs[number] if inputs else 0)
        recomputing = max(recomputing, before(first) - earlier_units + again)
        earlier_units += freed[number]
    return max(0, peak - max(peak - sum(freed), recomputing))


def _units(run: Run, pattern: str, vids_of: dict[str, set[int]], calls: dict[str, list[tuple[int, int]]]) -> list[set[int]]:
    """What backward recomputes at once: each numbered layer of ``layers.*``; each call of a
    module called more than once (a max-pool used after each conv: each call is checkpointed)."""
    if pattern.endswith(".*"):
        stem = pattern[:-2]
        return [vids for path, vids in vids_of.items() if path.startswith(stem + ".") and path[len(stem) + 1:].isdigit()]
    vids = vids_of[pattern]
    spans = calls.get(pattern, ())
    if len(spans) < 2:
        return [vids]
    # (an RNN cell called 3,000 times: each node goes to its call by bisection, not by a pass per call)
    starts = [start for start, _ in spans]
    units: list[set[int]] = [set() for _ in spans]
    for vid in vids:
        born = run.op_nodes[vid].born
        at = bisect_right(starts, born) - 1
        if at >= 0 and born <= spans[at][1]:
            units[at].add(vid)
    return [unit for unit in units if unit]


def _calls(run: Run, at: int, calls: dict[str, list[tuple[int, int]]], roots: set[str]) -> Iterator[None]:
    """Put in ``calls`` each module path with (enter, exit) of each of its calls begun by event
    ``at``; and in ``roots`` the paths of the modules called when no other module was running
    (models called as a whole)."""
    open_at: dict[str, int] = {}
    # (every event handed out is decoded: a few hundred a slice)
    for pause, (index, ev) in _pauses(run.events.where({"module_enter", "module_exit"}, 0, at + 1), 256):
        if pause:
            yield None
        if ev["ev"] == "module_enter":
            if not open_at:
                roots.add(ev["path"])
            open_at[ev["path"]] = index
        elif ev["path"] in open_at:
            calls.setdefault(ev["path"], []).append((open_at.pop(ev["path"]), index))
    for path, start in open_at.items():
        calls.setdefault(path, []).append((start, at))


def _saved_owners(run: Run, at: int, owners: dict[tuple, set[int]]) -> Iterator[None]:
    """Put in ``owners`` what :meth:`Run.saved_owners` gives at ``at``, a few thousand nodes at a time."""
    for pause, (vid, saved_list) in _pauses(run.saved_by_owner.items()):
        if pause:
            yield None
        for saved in saved_list:
            if saved.held_at(at):
                owners.setdefault((saved.device, saved.storage), set()).add(vid)


def _around(path: str, vids_of: dict[str, set[int]]) -> list[set[int]]:
    """The sets of ``vids_of`` that a node of module ``path`` belongs to (made where missing): its
    module's, each module's around it, and ``layers.*`` for a numbered layer ``layers.3``."""
    sets = []
    while path:
        sets.append(vids_of.setdefault(path, set()))
        parent, _, last = path.rpartition(".")
        if parent and last.isdigit():
            sets.append(vids_of.setdefault(parent + ".*", set()))
        path = parent
    return sets


def measured_text(pattern: str, before: Run, after: Run) -> str:
    """What checkpointing ``pattern`` did, measured: the earlier run's peak and this run's, and the
    ops recomputed in backward."""
    if after.failed:  # its peak is the peak of the part that ran: no measure
        text = f"checkpoint {pattern}, not measured: with it, {after.failure_headline()}"
        if _failed_recomputing(after):
            text += (" while torch recomputed the checkpointed forward in backward; a module that changes "
                     "state when called computes something else the second time (a key/value cache: "
                     "transformers' models need use_cache=False to be checkpointed)")
        return text
    peak_b, peak_a = before.peak_saved_bytes(), after.peak_saved_bytes()
    recomputed = recomputed_ops(after, 0, len(after.events) - 1) - recomputed_ops(before, 0, len(before.events) - 1)
    if recomputed:
        again = f"{recomputed:+d} ops recomputed in backward"
    else:  # ops torch recomputes where graphview does not see them: what they saved again is counted
        saved = _recomputed_saves(after) - _recomputed_saves(before)
        again = f"{saved:+d} saved tensors recomputed in backward" if saved else "nothing recomputed in backward"
    activations = _peak_text(_activation_peaks(before, 0), _activation_peaks(after, 0))
    return (f"checkpoint {pattern}, measured: peak of activations held for backward {activations}; "
            f"with the weights and inputs held anyway, peak saved {_peak_text(peak_b, peak_a)}; {again}")


def _failed_recomputing(run: Run) -> bool:
    """Whether the run's last error came in a backward call during which a checkpoint recomputed."""
    if not run.errors:
        return False
    index, err = run.errors[-1]
    bid = err.get("bid")
    if bid is None:
        return False
    return any(ev.get("recompute") == bid for _, ev in run.events.where({"op", "saved"}, 0, index))


def _recomputed_saves(run: Run) -> int:
    return sum(1 for _, ev in run.events.where({"saved"}, 0, len(run.events)) if ev.get("recompute") is not None)
