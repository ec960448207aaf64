"""Saved bytes after every event as numpy arrays, grown with the run, and their peaks per bin.

The memory chart of a million-event run draws some 1,500 points per curve: each bin of events
keeps its highest value, so peaks survive. :class:`MemoryArrays` extends its arrays by only the
events the run gained since the last call (from the run's change points, not event by event),
and keeps the peaks of the bins already complete, so a refresh costs about the same at event
1,000 as at event 1,000,000.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Iterator

import numpy as np

#: the arrays: bytes by kind, the stack tops the chart fills (inputs, + parameters, + activations
#: = total) and the CUDA allocator's figure (NaN where none was recorded yet)
KEYS = ("activation", "param", "input", "input_param", "total", "allocated")
#: what is kept: the stack tops (the kinds are their differences) and the allocator's figure
_KEPT = ("input", "input_param", "total")


class MemoryArrays(Mapping):
    """The saved bytes on ``device`` after each event of a run (call :meth:`update` as it grows):
    a mapping of :data:`KEYS` to arrays of one value per event.

    It is given what it reads of the run, not the run (which keeps its arrays: no reference cycle):
    the run's ``events``, and per device its change points ``(index, device, activation, param,
    input)`` (``points_of``) and the CUDA allocator's figures (``allocs_of``), all growing in place."""

    def __init__(self, events: list, points_of: dict[str, list], allocs_of: dict[str, list], device: str) -> None:
        self._events, self._points_of, self._allocs_of = events, points_of, allocs_of
        self.device = device
        self.n = 0
        self.has_alloc = False
        self._buffers = {key: np.zeros(1024, dtype=np.int64) for key in _KEPT}
        self._points = 0  # change points taken in
        self._allocs = 0
        self._current = (0, 0, 0)
        self._value = np.nan
        self._bins: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}  # key -> (width, arg, max) of complete bins

    def update(self) -> "MemoryArrays":
        n = len(self._events)
        old = self.n
        if n <= old:
            return self
        for key, buffer in self._buffers.items():
            if len(buffer) < n:
                grown = np.zeros(max(n, 2 * len(buffer)), dtype=buffer.dtype)
                grown[:old] = buffer[:old]
                self._buffers[key] = grown
        points = self._points_of.get(self.device, [])
        taken = self._points
        while taken < len(points) and points[taken][0] < n:
            taken += 1
        new = points[self._points:taken]
        at = np.array([p[0] for p in new], dtype=np.int64)
        values = np.array([self._current] + [p[2:5] for p in new], dtype=np.int64)
        # after event i hold the bytes of the last change point at or before i
        which = np.searchsorted(at, np.arange(old, n), side="right")
        b = self._buffers
        b["input"][old:n] = values[which, 2]
        b["input_param"][old:n] = b["input"][old:n] + values[which, 1]
        b["total"][old:n] = b["input_param"][old:n] + values[which, 0]
        self._points = taken
        self._current = tuple(int(v) for v in values[-1])
        allocs = self._allocs_of.get(self.device, [])
        taken = self._allocs
        while taken < len(allocs) and allocs[taken][0] < n:
            taken += 1
        new = allocs[self._allocs:taken]
        if new or self.has_alloc:
            if not self.has_alloc:  # the first figure: none before it
                self.has_alloc = True
                b["allocated"] = np.full(len(b["total"]), np.nan)
            at = np.array([p[0] for p in new], dtype=np.int64)
            values = np.array([self._value] + [p[2] for p in new], dtype=np.float64)
            b["allocated"][old:n] = values[np.searchsorted(at, np.arange(old, n), side="right")]
            self._value = float(values[-1])
        self._allocs = taken
        self.n = n
        return self

    def array(self, key: str) -> np.ndarray:
        """The values of ``key`` (one of :data:`KEYS`) after each event so far (a view: copy to keep)."""
        b, n = self._buffers, self.n
        if key in b:
            return b[key][:n]
        if key == "activation":
            return b["total"][:n] - b["input_param"][:n]
        if key == "param":
            return b["input_param"][:n] - b["input"][:n]
        if key == "allocated":  # no figure recorded (a CPU run)
            return np.full(n, np.nan)
        raise KeyError(key)

    def __getitem__(self, key: str) -> np.ndarray:
        return self.array(key)

    def __iter__(self) -> Iterator[str]:
        return iter(KEYS)

    def __len__(self) -> int:
        return len(KEYS)

    def peaks(self, key: str, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """At most about ``limit`` points of ``key``: each bin of events keeps its highest value
        (the first event that has it). Bins a power of two wide; the complete ones are kept."""
        values = self.array(key)
        n = len(values)
        if n <= limit:
            return np.arange(n), values.copy()
        width = 1
        while -(-n // width) > limit:
            width *= 2
        cached = self._bins.get(key)
        if cached is None or cached[0] != width:
            cached = (width, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=values.dtype))
        _, args, tops = cached
        complete = n // width
        done = len(args)
        if complete > done:
            rows = values[done * width:complete * width].reshape(complete - done, width)
            if values.dtype.kind == "f":
                rows = np.where(np.isnan(rows), -np.inf, rows)
            offsets = np.argmax(rows, axis=1)
            new_args = np.arange(done, complete) * width + offsets
            args = np.concatenate([args, new_args])
            tops = np.concatenate([tops, values[new_args]])
            self._bins[key] = (width, args, tops)
        if complete * width < n:  # the bin still filling
            rest = values[complete * width:]
            last = complete * width + int(np.argmax(np.where(np.isnan(rest), -np.inf, rest)
                                                    if values.dtype.kind == "f" else rest))
            return np.append(args, last), np.append(tops, values[last])
        return args.copy(), tops.copy()
