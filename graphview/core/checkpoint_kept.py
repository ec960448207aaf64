"""What a checkpoint keeps for its recompute, and the module it keeps it for.

``torch.utils.checkpoint.checkpoint`` keeps the inputs of what it checkpoints from the forward to
the recompute in backward. With ``use_reentrant=True`` its own autograd node
(``CheckpointFunctionBackward``) saves them, and that node lies in the module's box like any
other. With ``use_reentrant=False`` (graphview's ``--checkpoint`` too, and Hugging Face's gradient
checkpointing with it) no autograd node saves them: torch keeps them beside the graph, so the
recorder sees them saved by no node, and no box's nodes hold them. Whose they are is found here:
for ``--checkpoint``, the checkpointed module open when they were saved; for a checkpoint the
script (or a library) makes, the recompute that reads them in backward, whose modules say what
was checkpointed (the module around all of them: a layer, not its first norm).

:func:`kept_inputs` finds them for a whole run, forward by forward (each up to a backward's
start), with the call of the module they are kept for (its first autograd node), so a module
box (:mod:`graphview.core.hierarchy`) can hold them as a reentrant checkpoint's box does.
"""

from __future__ import annotations

import os
import weakref
from bisect import bisect_left
from dataclasses import dataclass
from typing import Iterable, Iterator

from graphview.core.run import Run, SavedNode

RECOMPUTE_MODULE = "checkpoint recompute"  # the module box of the ops a checkpoint recomputes in backward

#: (device, storage) -> (the saved tensors of that storage a checkpoint keeps, the module paths it keeps them for)
Found = dict[tuple, tuple[list[SavedNode], set[str]]]


@dataclass(frozen=True)
class Kept:
    """A storage a checkpoint keeps for its recompute, with no autograd node of its own."""

    path: str  # the module it is kept for
    saved: tuple[SavedNode, ...]  # its saved tensors (held while any is)
    node: int | None  # the first autograd node the module's call made after it was kept (None: none)


def kept_inputs(run: Run) -> list[Kept]:
    """Every storage a ``use_reentrant=False`` checkpoint kept in a forward of ``run`` that is
    held when the next backward starts (or now, before any), for the module it is kept for.
    Worked out again only when the run has more events, and then only for the forwards whose
    backward had not ended."""
    cached = _KEPT.get(run)
    if cached is not None and cached[0] == len(run.events):
        return cached[1]
    done = cached[2] if cached is not None else {}
    found: list[Kept] = []
    for key, saved_list in _forwards(run).items():
        if key not in done:
            kept = list(_kept_in(run, key, saved_list))
            if key[2] is None:
                found += kept
                continue
            done[key] = kept  # (its backward ended: what it found stands)
        found += done[key]
    _KEPT[run] = (len(run.events), found, done)
    return found


#: run -> (its events when worked out, what :func:`kept_inputs` found, the forwards whose backward ended -> theirs)
_KEPT: "weakref.WeakKeyDictionary[Run, tuple[int, list[Kept], dict]]" = weakref.WeakKeyDictionary()


def _forwards(run: Run) -> dict[tuple, list[SavedNode]]:
    """(the start of the backward that ends a forward, that backward's end, or None: before any
    backward, or while it runs; the saved tensors) -> the saved tensors of that forward a
    checkpoint may keep: saved by no node graphview sees, not by a recompute, and not known since
    to be a node's."""
    candidates = [s for s in run.unowned_saved if s.owner is None and s.kind not in ("param", "input")]
    calls = sorted((call.start, call.end) for call in run.backwards.values())
    starts = [start for start, _ in calls]
    forwards: dict[int, list[SavedNode]] = {}
    for saved in candidates:
        forwards.setdefault(bisect_left(starts, saved.born), []).append(saved)
    keyed = {}
    for number, saved_list in forwards.items():
        at, end = calls[number] if number < len(calls) else (len(run.events) - 1, None)
        keyed[(at, end, len(saved_list))] = saved_list
    return keyed


def _kept_in(run: Run, key: tuple, saved_list: list[SavedNode]) -> Iterator[Kept]:
    at, end, _ = key
    last = end if end is not None else len(run.events) - 1
    for group, paths in kept_in_forward(run, min(s.born for s in saved_list), at, last, saved_list).values():
        born = min(s.born for s in group)
        for path in sorted(paths):
            yield Kept(path, tuple(group), _first_node(run, path, born))


def _first_node(run: Run, path: str, born: int) -> int | None:
    """The first autograd node (not a weight's) that a call of module ``path`` made from event
    ``born`` on (the call the checkpoint that kept a storage then ran: after it, or around it), or
    None where that call made none."""
    inside = path + "."
    for _, ev in run.events.where({"node", "module_exit"}, born):
        if ev["ev"] == "module_exit":
            if ev["path"] == path:
                return None
            continue
        node = run.op_nodes.get(ev["vid"])
        module = (node.module if node is not None else None) or ""
        # (a weight's AccumulateGrad is the weight's, made at its first use, in whichever call)
        if (module == path or module.startswith(inside)) and "AccumulateGrad" not in node.name:
            return ev["vid"]
    return None


def kept_in_forward(run: Run, start: int, at: int, end: int, saved: Iterable[SavedNode] | None = None) -> Found:
    """What the checkpoints of a forward (events ``start`` to ``at``, its backward until ``end``)
    keep for their recompute and for which modules: ``--checkpoint``'s (:func:`option_kept`) and
    the script's own (:func:`script_kept`). ``saved``: of these saved tensors (None: all the run's)."""
    found = option_kept(run, start, at, saved)
    for key, (group, paths) in script_kept(run, start, at, end, saved).items():
        found.setdefault(key, (group, set()))[1].update(paths)
    return found


def credited(found: Found) -> dict[str, dict[tuple, int]]:
    """Module path -> the bytes of each storage ``found`` keeps for it or for a module inside it."""
    result: dict[str, dict[tuple, int]] = {}
    for key, (group, paths) in found.items():
        for path in paths:
            while path:
                result.setdefault(path, {})[key] = group[0].bytes
                path = path.rpartition(".")[0]
    return result


def option_kept(run: Run, start: int, at: int, saved: Iterable[SavedNode] | None = None) -> Found:
    """The activations the checkpoints of the run's ``--checkpoint`` keep for the recompute that are
    held after event ``at``: saved between events ``start`` and ``at`` by no node graphview sees
    (of ``saved``; None: all the run's) inside a call of a module the option names, for the
    innermost such module."""
    from graphview.core.options import RunOptions, module_matches

    patterns = RunOptions.from_dict((run.start or {}).get("options") or {}).checkpoint or []
    if not patterns:
        return {}
    kept = [s for s in (run.saved.values() if saved is None else saved) if s.owner is None
            and s.kind not in ("param", "input") and start <= s.born and s.held_at(at)]
    kept.sort(key=lambda s: s.born)
    found: Found = {}
    open_paths: list[str] = []
    events = iter(run.events.where({"module_enter", "module_exit"}, start, at + 1))
    index, ev = next(events, (at + 1, None))
    for s in kept:
        while ev is not None and index < s.born:
            follow_modules(open_paths, ev)
            index, ev = next(events, (at + 1, None))
        path = next((p for p in reversed(open_paths) if any(module_matches(x, p) for x in patterns)), None)
        if path:
            found.setdefault((s.device, s.storage), ([], set()))
            found[(s.device, s.storage)][0].append(s)
            found[(s.device, s.storage)][1].add(path)
    return found


def script_kept(run: Run, start: int, at: int, end: int, saved: Iterable[SavedNode] | None = None) -> Found:
    """The activations a checkpoint the script itself made keeps for its recompute, held after
    event ``at``: saved between events ``start`` and ``at`` (of ``saved``; None: all the run's) by
    no node graphview sees or by the checkpoint's own (:func:`_checkpoints`), and still held in
    backward (before ``end``) when the checkpoint's recompute reads it: an op of the recompute
    reads the tensor kept (``use_reentrant=False`` hands the recompute the very tensor), the
    recompute runs inside the checkpoint's own node that saved it (``True``), or the recompute
    saves the storage again. A script's ``checkpoint(module, x)`` saves ``x`` before the module's
    call starts (or after it ends), so where it was saved does not say whose it is; the recompute
    does: the module it recomputes (``checkpoint recompute.<path>``), or the one around all it
    recomputes where that is several (a layer's forward: its norms, attention and MLP)."""
    kept, made_by, kept_by = _kept_by_checkpoints(run, start, at, run.saved.values() if saved is None else saved)
    found: Found = {}
    if not kept:
        return found
    recompute = _Recompute(found, kept)
    running: dict[int, set[tuple]] = {}  # the checkpoint nodes running in backward -> what they keep
    for index, ev in run.events.where(_RECOMPUTE_READS, at, end + 1):
        kind = ev["ev"]
        if kind == "bw_node" or kind == "bw_node_done":
            recompute.done()  # (a recompute runs whole inside one node's run, before any other)
            if kind == "bw_node_done":
                running.pop(ev["vid"], None)
            elif ev["vid"] in kept_by:
                running[ev["vid"]] = kept_by[ev["vid"]]
        elif kind == "module_enter" or kind == "module_exit":
            recompute.follow(ev)
            if kind == "module_enter":
                recompute.read(set().union(*running.values()), index)
        elif ev.get("recompute") is None:
            continue
        elif kind == "saved":
            recompute.read({(ev["device"], ev["storage"])}, index)
        else:  # an op: the kept tensors it reads
            recompute.read(set().union(*(made_by.get(m, ()) for m in _makers(run, ev.get("inputs") or ()))), index)
    recompute.done()
    return found


class _Recompute:
    """One recompute of a checkpoint in backward, followed: the modules it recomputes (outermost)
    and the kept storages it reads; when done, those storages go to the module around them all."""

    def __init__(self, found: Found, kept: dict[tuple, list]) -> None:
        self.found, self.kept = found, kept
        self.open_paths: list[str] = []
        self.tops: list[list[str]] = []  # the outermost recomputed modules' paths, by their parts
        self.read_keys: set[tuple] = set()

    def follow(self, ev: dict) -> None:
        follow_modules(self.open_paths, ev)
        path = ev["path"]
        if ev["ev"] == "module_enter" and path.startswith(RECOMPUTE_MODULE + ".") \
                and not any(p.startswith(RECOMPUTE_MODULE + ".") for p in self.open_paths[:-1]):
            self.tops.append(path[len(RECOMPUTE_MODULE) + 1:].split("."))

    def read(self, keys: set[tuple], index: int) -> None:
        # the same storage still held then (not a freed one's address taken again)
        self.read_keys.update(key for key in keys if any(s.held_at(index) for s in self.kept.get(key, ())))

    def done(self) -> None:
        if self.tops and self.read_keys:
            around = ".".join(os.path.commonprefix(self.tops))  # (of lists: the path parts they all start with)
            for key in self.read_keys:
                if around:
                    self.found.setdefault(key, (self.kept[key], set()))[1].add(around)
        self.tops, self.read_keys = [], set()


def _kept_by_checkpoints(run: Run, start: int, at: int, saved: Iterable[SavedNode]) -> tuple[dict, dict, dict]:
    """The storages a checkpoint may keep (see :func:`script_kept`), of ``saved``: (device, storage)
    -> its saved tensors; the node that made one (saved by no node: ``use_reentrant=False``) ->
    those storages; the checkpoint's own node that saved one (``True``) -> those storages."""
    kept: dict[tuple, list] = {}
    made_by: dict[int, set[tuple]] = {}
    kept_by: dict[int, set[tuple]] = {}
    for s in saved:
        if s.kind not in ("param", "input") and start <= s.born and s.held_at(at) and _checkpoints(run, s.owner):
            key = (s.device, s.storage)
            kept.setdefault(key, []).append(s)
            if s.owner is not None:
                kept_by.setdefault(s.owner, set()).add(key)
            elif s.src is not None:
                made_by.setdefault(s.src, set()).add(key)
    return kept, made_by, kept_by


#: the events by which a checkpoint's recompute in backward reads what the checkpoint kept
_RECOMPUTE_READS = frozenset({"module_enter", "module_exit", "saved", "op", "bw_node", "bw_node_done"})


def _makers(run: Run, inputs) -> Iterator[int]:
    """The autograd nodes that made the tensors ``inputs`` (an op's ``[tid, version]``): each one's
    own and, for a view, its base's (the node a saved tensor's ``src`` names)."""
    for tid, _ in inputs:
        info, seen = run.tensors.get(tid), set()
        while info is not None and tid not in seen:
            seen.add(tid)
            if info.get("grad_fn") is not None:
                yield info["grad_fn"]
            tid = info.get("base")
            info = run.tensors.get(tid) if tid is not None else None


def follow_modules(open_paths: list[str], ev: dict) -> None:
    """The module calls open after ``ev`` (a ``module_enter`` or ``module_exit``), innermost last."""
    if ev["ev"] == "module_enter":
        open_paths.append(ev["path"])
    elif ev["path"] in open_paths:
        del open_paths[len(open_paths) - 1 - open_paths[::-1].index(ev["path"])]


def _checkpoints(run: Run, owner: int | None) -> bool:
    """Whether a tensor saved by node ``owner`` may be one a checkpoint keeps: saved by no node
    graphview sees (``use_reentrant=False``) or by the checkpoint's own node (``use_reentrant=True``)."""
    return owner is None or getattr(run.op_nodes.get(owner), "name", None) == "CheckpointFunctionBackward"


def recompute_held(run: Run, index: int) -> tuple[str | None, dict[tuple, tuple[str, int]]]:
    """What backward's recompute of a checkpoint holds after event ``index``: the storages saved
    during a recompute (``recompute`` events: the tensors it keeps until the node that needs them
    runs) that no save outside a recompute holds then (the input the checkpoint kept, saved again,
    is the forward's), by (device, storage) -> (kind, bytes); and the module around all the
    recomputed modules that saved them (their common path; None where none ran in a module)."""
    held = [s for s in run.saved.values() if s.held_at(index)]
    outside: set[tuple] = set()
    recomputed: list[SavedNode] = []
    for saved in held:
        if run.events[saved.born].get("recompute") is None:
            outside.add((saved.device, saved.storage))
        else:
            recomputed.append(saved)
    storages = {(s.device, s.storage): (s.kind, s.bytes) for s in recomputed if (s.device, s.storage) not in outside}
    if not storages:
        return None, {}
    recomputed.sort(key=lambda s: s.born)
    born = {s.born for s in recomputed}
    open_paths: list[str] = []
    paths: list[list[str]] = []
    prefix = RECOMPUTE_MODULE + "."
    for at, ev in run.events.where({"module_enter", "module_exit", "saved"}, recomputed[0].born, index + 1):
        if ev["ev"] != "saved":
            follow_modules(open_paths, ev)
        elif at in born:
            inside = next((p for p in reversed(open_paths) if p.startswith(prefix)), None)
            if inside is not None:
                paths.append(inside[len(prefix):].split("."))
    return (".".join(os.path.commonprefix(paths)) or None) if paths else None, storages
