"""Summaries of the parameters an optimizer step changed, computed together.

After every ``optimizer.step()`` each parameter with a gradient gets ``summarize(p, hist=True)``:
its values when it has few, else min, max, mean, norm, NaN and Inf counts and a histogram. Done
one parameter at a time that is a dozen NumPy calls a parameter (a 256-layer MLP has 514), most
of them on a few thousand values. Here the parameters that share a shape and a float dtype are
stacked into one array, and each statistic is one call over its rows; the histograms of all rows
are one ``bincount`` over ``row * HIST_BINS + bin``. The numbers are those ``summarize`` gives:
the same min, max, sum (NumPy's pairwise sum along each row is the one it makes of a flat
array; a parameter of more than BLOCKED_ABOVE values, alone in its row, is read a block at a
time by the same ``blocked_reductions``), NaN and Inf counts, and the same bins by torch.histc's
own arithmetic; the norm is one ``einsum`` per row (``summarize`` uses BLAS's dot up to
``BLAS_MAX`` values: they differ in the last bits). Like ``summarize``, this runs on NumPy (no torch op besides reading each parameter,
so torch.profiler lists nothing else of graphview's, and no wait on torch's intra-op threads).
Any other parameter (another dtype or device, not contiguous, a subclass, sparse, quantized,
meta) is summarized by ``summarize`` itself.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import torch

from graphview.capture.summaries import summarize
from graphview.core.events import FULL_VALUES_MAX
from graphview.core.value_stats import (
    _FLOAT_MAX, BLOCKED_ABOVE, HIST_BINS, HIST_SAMPLE_MAX, _clean, _numpy_histogram, _sum, blocked_reductions,
)

#: at most this many values are stacked into one array (256 KiB of float32: each pass over it stays in
#: the cache; a larger parameter is read in place)
STACK_MAX = 1 << 16


class _Scratch(threading.local):
    """Arrays of STACK_MAX values reused from one step to the next (about 1 MiB a thread): fresh
    ones of this size are new pages from the system each time, and their page faults cost more
    than the passes over them."""

    def __init__(self) -> None:
        self._arrays: dict[tuple, np.ndarray] = {}

    def array(self, name: str, dtype, size: int) -> np.ndarray:
        key = (name, np.dtype(dtype))
        kept = self._arrays.get(key)
        if kept is None:
            kept = self._arrays[key] = np.empty(STACK_MAX, dtype)
        return kept[:size]


_SCRATCH = _Scratch()
_PLAIN = (torch.Tensor, torch.nn.Parameter)
_FLOATS = (torch.float32, torch.float64)


def summarize_parameters(params: list[torch.Tensor]) -> list[dict | None]:
    """``[summarize(p, hist=True) for p in params]``, in bulk where it can be."""
    summaries: list[dict | None] = [None] * len(params)
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(params):
        key = _group_of(p)
        if key is not None:
            groups.setdefault(key, []).append(i)
    for (kind, _dtype, shape), indices in groups.items():
        if len(indices) == 1:  # (alone in its shape: nothing to share)
            continue
        try:
            arrays = [params[i].detach().numpy() for i in indices]
        except (RuntimeError, TypeError):  # (a tensor NumPy cannot read after all: summarize's way)
            continue
        if kind == "values":
            for i, summary in zip(indices, _values_of(arrays, shape)):
                summaries[i] = summary
            continue
        numel = math.prod(shape)
        rows = max(1, STACK_MAX // numel)
        for start in range(0, len(indices), rows):
            chunk = arrays[start:start + rows]
            if len(chunk) == 1:
                stacked = chunk[0].reshape(1, numel)
            else:
                stacked = _SCRATCH.array("stack", chunk[0].dtype, len(chunk) * numel).reshape(len(chunk), *shape)
                np.stack(chunk, out=stacked)
                stacked = stacked.reshape(len(chunk), numel)
            for i, stats in zip(indices[start:start + rows], _stats_of_rows(stacked)):
                summaries[i] = {"shape": list(shape), "stats": stats}
    for i, summary in enumerate(summaries):
        if summary is None:
            summaries[i] = summarize(params[i], hist=True)
    return summaries


def _group_of(p) -> tuple | None:
    """``(kind, dtype, shape)`` of a parameter summarized in bulk, ``None`` for ``summarize``."""
    if type(p) not in _PLAIN or p.dtype not in _FLOATS or not p.is_cpu or p.layout != torch.strided \
            or not p.is_contiguous() or p.is_neg():
        return None
    numel = p.numel()
    if numel == 0:
        return None
    return ("values" if numel <= FULL_VALUES_MAX else "stats", p.dtype, tuple(p.shape))


def _values_of(arrays: list[np.ndarray], shape: tuple) -> list[dict]:
    """Small parameters of one shape: their values, as ``summarize`` lists them."""
    numel = math.prod(shape)
    flat = np.concatenate([a.reshape(-1) for a in arrays]) if len(arrays) > 1 else arrays[0].reshape(-1)
    values = flat.tolist()
    finite = bool(np.isfinite(flat).all())
    out = []
    for start in range(0, len(values), numel):
        part = values[start:start + numel]
        out.append({"shape": list(shape), "values": part if finite else [_clean(v) for v in part]})
    return out


def _stats_of_rows(a: np.ndarray) -> list[dict]:
    """``summarize``'s statistics and histogram of each row of ``a`` (one parameter a row)."""
    count, numel = a.shape
    if numel > BLOCKED_ABOVE and a.flags.c_contiguous:  # read a block at a time, as summarize reads it
        lows, highs, sums, square_sums = zip(*(blocked_reductions(row, True) for row in a))
        lo, hi = np.array(lows, dtype=a.dtype), np.array(highs, dtype=a.dtype)
        totals, squares = np.array(sums), np.array(square_sums)
    else:
        with np.errstate(all="ignore"):  # (overflow: an Inf in the statistics, as summarize says it)
            lo, hi = np.minimum.reduce(a, axis=1), np.maximum.reduce(a, axis=1)
            totals = np.array([_sum(row) for row in a])  # (summarize's sum of each: the same bits)
            squares = np.einsum("ij,ij->i", a, a)
    out = []
    for row, (low, high, total, square) in enumerate(zip(lo.tolist(), hi.tolist(), totals.tolist(), squares.tolist())):
        norm = math.sqrt(square)
        stats = {"min": _clean(low), "max": _clean(high), "mean": _clean(total / numel), "numel": numel,
                 "nan": 0, "inf": 0, "norm": _clean(norm)}
        if not all(map(math.isfinite, (low, high, total, norm))):
            stats["nan"] = int(np.isnan(a[row]).sum())
            stats["inf"] = int(np.isinf(a[row]).sum())
        out.append(stats)
    _add_histograms(a, lo, hi, out)
    return out


def _add_histograms(a: np.ndarray, lo: np.ndarray, hi: np.ndarray, stats: list[dict]) -> None:
    """``stats[row]["hist"]`` (and ``hist_of``) for every row with a finite range: torch.histc's
    arithmetic, ``int((x - min) * bins / (max - min))`` in the rows' float type (the maximum in
    the last bin), every k-th value of a row of more than HIST_SAMPLE_MAX, as ``summarize`` bins."""
    numel = a.shape[1]
    stride = max(1, -(-numel // HIST_SAMPLE_MAX))
    binned = []
    fmax = _FLOAT_MAX[a.dtype]
    for row, s in enumerate(stats):
        low, high = s["min"], s["max"]
        if not isinstance(low, float) or not isinstance(high, float):
            continue  # a NaN or Inf: no finite range to bin
        if (high - low) * HIST_BINS >= fmax / 2:  # a range the float type cannot hold: summarize's own way
            s["hist"] = _numpy_histogram(a[row, ::stride], low, high)
        else:
            binned.append(row)
    if binned:
        every = len(binned) == len(stats)
        sample = a[:, ::stride] if every else a[binned, ::stride]
        low = lo if every else lo[binned]
        span = (hi if every else hi[binned]) - low
        span[span == 0] = 1  # all values equal: each (x - min) is 0, bin 0, as summarize counts them
        position = _SCRATCH.array("position", a.dtype, sample.size).reshape(sample.shape)
        np.subtract(sample, low[:, None], out=position)
        np.multiply(position, a.dtype.type(HIST_BINS), out=position)
        np.divide(position, span[:, None], out=position)
        # row r's values go to r * (HIST_BINS + 1) + int(position): the maximum itself, at HIST_BINS,
        # is moved into the last bin after counting (one pass less than clamping every value)
        bins = _SCRATCH.array("bins", np.int32, sample.size).reshape(sample.shape)
        np.copyto(bins, position, casting="unsafe")  # (truncated, as astype does)
        bins += np.arange(0, len(binned) * (HIST_BINS + 1), HIST_BINS + 1, dtype=np.int32)[:, None]
        counts = np.bincount(bins.reshape(-1), minlength=len(binned) * (HIST_BINS + 1)).reshape(len(binned), -1)
        counts[:, HIST_BINS - 1] += counts[:, HIST_BINS]
        counts = counts[:, :HIST_BINS]
        for row, hist in zip(binned, counts.tolist()):
            stats[row]["hist"] = hist
    sampled = -(-numel // stride)
    if sampled != numel:
        for s in stats:
            if "hist" in s:
                s["hist_of"] = sampled
