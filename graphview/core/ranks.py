"""Traces of a run on several processes: one file per rank, named by rank.

``graphview.record("run.gvtrace")`` on rank 1 of a ``torchrun`` job writes ``run.rank1.gvtrace``;
the files of one job sit side by side, and any of them finds the others.
"""

from __future__ import annotations

import glob
import os
import re

from graphview.core.trace import SUFFIX

_RANKED = re.compile(r"^(?P<stem>.*)\.rank(?P<rank>\d+)(?P<suffix>\.gvtrace)$")


def rank_path(path: str, rank: int | None) -> str:
    """``run.gvtrace`` -> ``run.rank3.gvtrace`` (unchanged when ``rank`` is None)."""
    if rank is None:
        return path
    stem, suffix = (path[: -len(SUFFIX)], SUFFIX) if path.endswith(SUFFIX) else (path, "")
    return f"{stem}.rank{rank}{suffix or SUFFIX}"


def rank_of(path: str) -> int | None:
    """The rank a trace's file name gives (``run.rank1.gvtrace`` -> 1), else None."""
    match = _RANKED.match(os.path.basename(path))
    return int(match.group("rank")) if match else None


def rank_set(path: str) -> dict[int, str]:
    """Every rank's trace of the job ``path`` belongs to: {rank: path}, in rank order (empty when
    ``path`` is not a rank's trace)."""
    match = _RANKED.match(os.path.basename(path))
    if match is None:
        return {}
    folder = os.path.dirname(path)
    pattern = os.path.join(folder, glob.escape(match.group("stem")) + ".rank*" + SUFFIX)
    found = {}
    for candidate in glob.glob(pattern):
        other = _RANKED.match(os.path.basename(candidate))
        if other is not None and other.group("stem") == match.group("stem"):
            found[int(other.group("rank"))] = candidate
    return dict(sorted(found.items()))


def rank_label(header: dict, start: dict | None = None) -> str | None:
    """``rank 1 of 2`` for a trace of one process of a distributed job, else None."""
    for source in (start or {}, header):
        rank, world = source.get("rank"), source.get("world_size")
        if isinstance(rank, int):
            return f"rank {rank} of {world}" if isinstance(world, int) else f"rank {rank}"
    return None
