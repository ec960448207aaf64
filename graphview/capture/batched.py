"""Value summaries of many tensors at once: the parameters an optimizer step changed.

``summarize(p, hist=True)`` of each parameter, one after another, costs about 20 µs of Python a
parameter before any value is read: a 256-layer MLP's 514 parameters took a tenth of a recorded
step. :func:`summarize_all` gives the same summaries (exact, never sampled, with the histogram)
with the small and middling CPU tensors of one dtype read together: their values joined into one
array, then one ``minimum.reduceat``, ``maximum.reduceat`` and ``add.reduceat`` for all of them,
and one ``bincount`` for every histogram. Each result is still the tensor's own, taken when the
caller calls (the values of the event it belongs to). Any other tensor (a large one, another
device, a NaN or Inf among its values, an exotic dtype or layout) is summarized on its own, by
:func:`~graphview.capture.summaries.summarize`.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from graphview.capture.summaries import HIST_BINS, HIST_SAMPLE_MAX, _clean, _FLOAT_MAX, summarize
from graphview.core.events import FULL_VALUES_MAX

#: the values joined for one pass at most (their float64 squares stay in a core's cache: joining more was slower)
BATCH_VALUES = 1 << 15
_BATCHED_DTYPES = {torch.float32: np.float32, torch.float64: np.float64}


def summarize_all(tensors: list[torch.Tensor]) -> list[dict | None]:
    """``[summarize(t, hist=True) for t in tensors]``, the batchable ones read together.

    Statistics sum in float64 (a float32 parameter's mean and norm are nearer torch's float64
    results than a float32 sum is); min, max and the histogram's counts are exact as ever."""
    results: list[dict | None] = [None] * len(tensors)
    groups: dict[tuple, list[int]] = {}
    for i, t in enumerate(tensors):
        key = _batch_key(t)
        if key is None:
            results[i] = summarize(t, hist=True)
        else:
            groups.setdefault(key, []).append(i)
    for (kind, _), members in groups.items():
        batch: list[int] = []
        size = 0
        for i in members + [None]:
            numel = tensors[i].numel() if i is not None else 0
            if i is None or size + numel > BATCH_VALUES:
                if batch:
                    (_values_of if kind == "values" else _stats_of)([tensors[j] for j in batch], batch, results)
                batch, size = [], 0
            if i is not None:
                batch.append(i)
                size += numel
    return results


def _batch_key(t) -> tuple | None:
    """(``"values"`` or ``"stats"``, dtype) for a tensor read with others, None for one summarized alone."""
    if (type(t) is not torch.nn.Parameter and type(t) is not torch.Tensor) or t.layout != torch.strided:
        return None
    if not t.is_cpu or t.is_meta or t.dtype not in _BATCHED_DTYPES or not t.is_contiguous() or t.is_conj() or t.is_neg():
        return None
    numel = t.numel()
    if numel == 0 or numel > HIST_SAMPLE_MAX:  # (a larger one's histogram is of every k-th value)
        return None
    return ("values" if numel <= FULL_VALUES_MAX else "stats", t.dtype)


def _flat(tensors: list[torch.Tensor]) -> np.ndarray:
    return np.concatenate([t.detach().numpy().reshape(-1) for t in tensors])


def _values_of(tensors: list[torch.Tensor], indices: list[int], results: list) -> None:
    """Small tensors: their values, as ``summarize`` lists them (non-finite ones as strings)."""
    values = _flat(tensors).tolist()
    start = 0
    for t, i in zip(tensors, indices):
        numel = t.numel()
        mine = values[start:start + numel]
        start += numel
        if not all(map(math.isfinite, mine)):
            mine = [_clean(v) for v in mine]
        results[i] = {"shape": list(t.shape), "values": mine}


def _stats_of(tensors: list[torch.Tensor], indices: list[int], results: list) -> None:
    """Middling tensors: min, max, mean, norm and the histogram of each, in one pass of each kind."""
    flat = _flat(tensors)
    sizes = np.fromiter((t.numel() for t in tensors), dtype=np.intp, count=len(tensors))
    starts = np.zeros(len(tensors), dtype=np.intp)
    np.cumsum(sizes[:-1], out=starts[1:])
    lows, highs = np.minimum.reduceat(flat, starts), np.maximum.reduceat(flat, starts)
    wide = flat.astype(np.float64)
    fmax = _FLOAT_MAX[flat.dtype]
    with np.errstate(all="ignore"):
        totals = np.add.reduceat(wide, starts)
        squares = np.add.reduceat(np.square(wide), starts)
        # a NaN or Inf somewhere, or a range whose binning float32 cannot hold: that tensor alone
        alone = ~(np.isfinite(lows) & np.isfinite(highs) & np.isfinite(squares)
                  & ((highs.astype(np.float64) - lows) * HIST_BINS < fmax / 2))
    counts = _histograms(flat, lows, highs, sizes, alone)
    stats = zip(lows.tolist(), highs.tolist(), totals.tolist(), np.sqrt(squares).tolist(), counts.tolist())
    for t, i, own, (lo, hi, total, norm, hist) in zip(tensors, indices, alone.tolist(), stats):
        if own:
            results[i] = summarize(t, hist=True)
            continue
        numel = t.numel()
        results[i] = {"shape": list(t.shape), "stats": {
            "min": lo, "max": hi, "mean": total / numel, "numel": numel, "nan": 0, "inf": 0, "norm": norm,
            "hist": hist}}


def _histograms(flat: np.ndarray, lows: np.ndarray, highs: np.ndarray, sizes: np.ndarray,
                alone: np.ndarray) -> np.ndarray:
    """Each tensor's HIST_BINS counts over its own [min, max], by torch.histc's arithmetic in the
    values' own float type (``int((x - min) * bins / (max - min))``, the maximum in the last bin;
    all in the first bin where min == max): what ``summaries._numpy_histogram`` counts, for all
    tensors in one ``bincount``. Rows of ``alone`` tensors are left to be counted on their own."""
    with np.errstate(all="ignore"):  # (the rows of `alone` tensors hold NaN or Inf: never a warning of ours)
        return _counts(flat, lows, highs, sizes, alone)


def _counts(flat, lows, highs, sizes, alone) -> np.ndarray:
    real = flat.dtype.type
    flat_range = highs == lows
    span = np.where(flat_range | alone, real(1), highs - lows)
    low = np.where(alone, real(0), lows)
    position = ((flat - np.repeat(low, sizes)) * real(HIST_BINS) / np.repeat(span, sizes)).astype(np.intp)
    position[np.repeat(flat_range | alone, sizes)] = 0
    np.clip(position, 0, HIST_BINS - 1, out=position)
    position += np.repeat(np.arange(len(sizes), dtype=np.intp) * HIST_BINS, sizes)
    return np.bincount(position, minlength=len(sizes) * HIST_BINS).reshape(len(sizes), HIST_BINS)
