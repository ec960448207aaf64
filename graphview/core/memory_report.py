"""Where a run's memory for backward goes: the modules that hold the most activations at the peak.

What ``graphview info`` answers first, from :mod:`graphview.core.held`'s split: the peak of
activations held for backward (weights and inputs held anyway apart) and the modules that make it
up, a family of numbered layers (``transformer.h.0`` .. ``transformer.h.11``) as one line.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphview.core.checkpoint_kept import RECOMPUTE_MODULE, recompute_held
from graphview.core.held import Held, Peak, human, split_among
from graphview.core.run import Run
from graphview.core.whatif import nodes_by_module

#: the modules a report names at most
TOP = 5


@dataclass
class ModuleShare:
    """What module ``path`` (or the numbered family ``parent.*``) holds at the peak."""

    path: str
    held: Held
    types: str | None = None  # its class name
    count: int = 1  # the modules of a family
    recomputed: bool = False  # what backward's recompute of its checkpoint holds, not its forward

    def text(self) -> str:
        kind = f" ({self.count} × {self.types})" if self.count > 1 and self.types else (
            f" ({self.types})" if self.types else "")
        each = f", {human(self.held.activations // self.count)} each" if self.count > 1 else ""
        weights = f"; and {human(self.held.weights)} of weights" if self.held.weights else ""
        again = ", recomputed in backward" if self.recomputed else ""
        return f"{self.path}{kind}{again}: {human(self.held.activations)} of activations{each}{weights}"


def modules_at(run: Run, peak: Peak, limit: int = TOP) -> list[ModuleShare]:
    """The modules holding the most activations at ``peak``, as a user would open them: from the
    models called as a whole, the biggest entry is opened into its parts while it holds more
    than half of the activations and has parts that hold any (numbered layers of one type stay one
    family). The entries of one level share nothing: a storage two of them save (a ReLU's output,
    saved by the ReLU and by the Linear after it) counts once, for the module that made it."""
    vids_of = nodes_by_module(run, 0, peak.at)
    children: dict[str, list[str]] = {}
    for path in vids_of:
        children.setdefault(path.rpartition(".")[0], []).append(path)

    def entries_below(parent: str) -> list[ModuleShare]:
        """The parts of ``parent``, numbered ones of one type as one family."""
        parts = children.get(parent, ())
        held = split_among(run, {path: vids_of[path] for path in parts}, peak.at)
        found: list[ModuleShare] = []
        families: dict[str, list[str]] = {}
        for path in parts:
            stem, _, last = path.rpartition(".")
            families.setdefault(stem if last.isdigit() else path, []).append(path)
        for stem, members in families.items():
            types = {run.module_types.get(m) for m in members}
            if len(members) == 1 or len(types) > 1:  # (a Sequential's Linear, ReLU, Linear: no family)
                found += [ModuleShare(m, held[m], run.module_types.get(m)) for m in members]
                continue
            total = Held()
            for member in members:
                total = total + held[member]
            found.append(ModuleShare(f"{stem}.*", total, types.pop(), len(members)))
        return [e for e in found if e.held.activations > 0]

    shown = entries_below("")
    while shown:
        shown.sort(key=lambda e: -e.held.activations)
        biggest = shown[0]
        if biggest.count > 1 or biggest.held.activations * 2 < peak.held.activations:
            break
        parts = entries_below(biggest.path)
        if not parts:
            break
        shown = parts + shown[1:]
    recomputed = _recomputed_share(run, peak)
    if recomputed is not None:  # (after the opening: it is no module's forward to open)
        shown.append(recomputed)
        shown.sort(key=lambda e: -e.held.activations)
    return shown[:limit]


def _recomputed_share(run: Run, peak: Peak) -> ModuleShare | None:
    """What backward's recompute of a checkpoint holds at ``peak``, for the module it recomputes
    (:func:`graphview.core.checkpoint_kept.recompute_held`); None where it holds no activations.
    With checkpointing the peak is usually there: GPT-2's last layer, recomputed, holds most of it."""
    path, storages = recompute_held(run, peak.at)
    kinds = {"activation": 0, "param": 0, "input": 0}
    for kind, nbytes in storages.values():
        kinds[kind if kind in kinds else "activation"] += nbytes
    if not kinds["activation"]:
        return None
    held = Held(kinds["activation"], kinds["param"], kinds["input"])
    return ModuleShare(path or RECOMPUTE_MODULE, held, run.module_types.get(path) if path else None, recomputed=True)

