"""Lining up an earlier run's timeline with the current run's, for the memory chart's overlays.

Runs of one script with different options have different event counts (retain_graph keeps saved
tensors, a detach drops a part of the graph), so an earlier run drawn by its own event indices
drifts: the hump of its third step lands beside the current run's. :class:`Alignment` maps an
earlier run's event indices onto the current run's axis through the landmarks both runs have
(:mod:`graphview.core.landmarks`: each step's start and end, the n-th op of each step with that
name and line, each backward node): every shared landmark lands exactly on its counterpart, and
the events between two landmarks are spread evenly between their counterparts.
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np

from graphview.core.landmarks import Landmarks
from graphview.core.run import Run


class Alignment:
    """Maps event indices of ``earlier`` onto the axis of ``current`` (which may still grow).

    ``pairs()`` are the shared landmarks as (earlier index, current index), increasing in both;
    ``map(indices)`` places earlier indices on the current run's axis: exactly at a shared
    landmark, linearly between two, one event per event before the first and after the last.
    """

    def __init__(self, earlier: Run, current: Run) -> None:
        self.earlier = earlier
        self.current = current
        self._earlier_marks = Landmarks(earlier).update().landmarks()
        self._current = Landmarks(current)
        self._pairs: tuple[np.ndarray, np.ndarray] | None = None
        self._seen = -1

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        self._current.update()
        if self._pairs is None or self._seen != len(self._current.names):
            self._seen = len(self._current.names)
            matched = [(i, self._current.find(name)) for i, name in self._earlier_marks]
            matched = [(i, j) for i, j in matched if j is not None]
            kept = _increasing(matched)
            self._pairs = (np.array([i for i, _ in kept], dtype=np.float64),
                           np.array([j for _, j in kept], dtype=np.float64))
        return self._pairs

    def map(self, indices) -> np.ndarray:
        x = np.asarray(indices, dtype=np.float64)
        old, new = self.pairs()
        if len(old) == 0:
            return x
        mapped = np.interp(x, old, new)
        before, after = x < old[0], x > old[-1]
        mapped[before] = new[0] - (old[0] - x[before])
        mapped[after] = new[-1] + (x[after] - old[-1])
        return mapped


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (ordered by their first index) whose second index increases
    too: a landmark that moved across others in the re-run cannot anchor the mapping."""
    tails: list[int] = []  # tails[k]: the smallest second index ending an increasing run of k + 1
    tail_at: list[int] = []  # position in pairs of that tail
    before: list[int] = [-1] * len(pairs)
    for position, (_, j) in enumerate(pairs):
        k = bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(position)
        else:
            tails[k] = j
            tail_at[k] = position
        before[position] = tail_at[k - 1] if k > 0 else -1
    kept = []
    position = tail_at[-1] if tail_at else -1
    while position >= 0:
        kept.append(pairs[position])
        position = before[position]
    return kept[::-1]
