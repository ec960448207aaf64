"""Where a run's memory for backward goes: the modules that hold the most activations at the peak.

What ``graphview info`` answers first, from :mod:`graphview.core.held`'s split: the peak of
activations held for backward (weights and inputs held anyway apart) and the modules that make it
up, a family of numbered layers (``transformer.h.0`` .. ``transformer.h.11``) as one line.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphview.core.held import Held, Peak, held_by_nodes, human
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

    def text(self) -> str:
        kind = f" ({self.count} × {self.types})" if self.count > 1 and self.types else (
            f" ({self.types})" if self.types else "")
        each = f", {human(self.held.activations // self.count)} each" if self.count > 1 else ""
        weights = f"; and {human(self.held.weights)} of weights" if self.held.weights else ""
        return f"{self.path}{kind}: {human(self.held.activations)} of activations{each}{weights}"


def modules_at(run: Run, peak: Peak, limit: int = TOP) -> list[ModuleShare]:
    """The modules holding the most activations at ``peak``, as a user would open them: from the
    models called as a whole, the biggest entry is opened into its parts while it holds more
    than half of the activations and has parts that hold any (numbered layers stay one family)."""
    held = {path: held_by_nodes(run, vids, peak.at) for path, vids in nodes_by_module(run, 0, peak.at).items()}
    children: dict[str, list[str]] = {}
    for path in held:
        children.setdefault(path.rpartition(".")[0], []).append(path)

    def entries_below(parent: str) -> list[ModuleShare]:
        """The parts of ``parent``, numbered ones as one family."""
        found: list[ModuleShare] = []
        families: dict[str, list[str]] = {}
        for path in children.get(parent, ()):
            stem, _, last = path.rpartition(".")
            if last.isdigit():
                families.setdefault(stem, []).append(path)
            else:
                found.append(ModuleShare(path, held[path], run.module_types.get(path)))
        for stem, members in families.items():
            if len(members) == 1:
                found.append(ModuleShare(members[0], held[members[0]], run.module_types.get(members[0])))
                continue
            total = Held()
            for member in members:
                total = total + held[member]
            types = {run.module_types.get(m) for m in members}
            found.append(ModuleShare(f"{stem}.*", total, types.pop() if len(types) == 1 else None, len(members)))
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
    return shown[:limit]
