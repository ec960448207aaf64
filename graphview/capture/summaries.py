"""Turn tensors into plain value summaries (lists of floats or statistics).

Runs inside the recorder, on a detached view of the tensor, and never keeps the tensor.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from graphview.core.events import FULL_VALUES_MAX


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def summarize(t: torch.Tensor | None, full_max: int = FULL_VALUES_MAX, light: bool = False,
              norm: bool = True, hist: bool = False) -> dict | None:
    """``{"shape", "values"}`` for small tensors, ``{"shape", "stats"}`` otherwise.

    ``light`` (gradients flowing through backward) keeps only the norm of large tensors: one
    pass over the data, which still tells a NaN or Inf apart (the norm is then not finite).
    ``norm=False`` (forward activations) skips the norm: min, max and mean in two passes.
    ``hist`` adds ``stats["hist"]``: counts in HIST_BINS equal bins from min to max (asked for
    parameters, inputs and ``.grad``, a few tensors a step; not for every activation).
    """
    summary = _summarize(t, full_max, light, norm)
    if hist and summary is not None and "stats" in summary and "min" in summary["stats"]:
        histogram = _histogram(t, summary["stats"])
        if histogram is not None:
            summary["stats"]["hist"], sampled = histogram
            if sampled != summary["stats"].get("numel"):
                summary["stats"]["hist_of"] = sampled
    return summary


#: bins of the value histograms the inspector draws
HIST_BINS = 24
#: larger tensors are binned from every k-th value, at most this many
HIST_SAMPLE_MAX = 1 << 14


def _histogram(t: torch.Tensor, stats: dict) -> tuple[list[int], int] | None:
    """Counts in HIST_BINS equal bins over [min, max], and how many values were binned (all, or
    every k-th of a large tensor).

    On the CPU the counts are computed with NumPy on the tensor's own memory, by torch.histc's
    own arithmetic (``int((x - min) * bins / (max - min))`` in the tensor's float type, the
    maximum in the last bin): the same counts, without waiting on torch's intra-op threads,
    which torch.histc always uses (3.7 ms a call instead of 0.03 ms while another process keeps
    a core busy). Other devices use torch.histc itself.
    """
    lo, hi = stats["min"], stats["max"]
    if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
        return None  # NaN or Inf somewhere: no finite range to bin
    if t.is_complex() or t.layout != torch.strided or t.device.type == "meta":
        return None
    try:
        t = t.detach()
        stride = max(1, -(-t.numel() // HIST_SAMPLE_MAX))
        if t.device.type == "cpu":
            flat = _host_values(t)
            if flat is not None:
                flat = flat.reshape(-1)[::stride]
            else:  # other dtypes: the sample, converted (at most HIST_SAMPLE_MAX values)
                flat = _as_float(t.reshape(-1)[::stride]).numpy()
            return _numpy_histogram(flat, lo, hi), flat.size
        flat = _as_float(t).reshape(-1)
        if stride > 1:
            flat = flat[::stride]
        if flat.dtype != torch.float32 and flat.dtype != torch.float64:
            flat = flat.float()
        if hi == lo:
            return [flat.numel()] + [0] * (HIST_BINS - 1), flat.numel()
        counts = torch.histc(flat, bins=HIST_BINS, min=float(lo), max=float(hi)).tolist()
        return [int(c) for c in counts], flat.numel()
    except (RuntimeError, TypeError, ValueError):
        return None


def _numpy_histogram(flat: np.ndarray, lo: float, hi: float) -> list[int]:
    """torch.histc(flat, HIST_BINS, lo, hi) for values all within [lo, hi], as CPU torch computes it."""
    if hi == lo:
        return [int(flat.size)] + [0] * (HIST_BINS - 1)
    real = flat.dtype.type
    low = real(lo)
    position = ((flat - low) * real(HIST_BINS) / (real(hi) - low)).astype(np.intp)
    np.minimum(position, HIST_BINS - 1, out=position)  # the maximum itself: in the last bin
    return np.bincount(position, minlength=HIST_BINS).tolist()


def _host_values(t: torch.Tensor) -> np.ndarray | None:
    """A detached CPU float32 / float64 tensor's values as a NumPy array on the same memory."""
    if t.device.type != "cpu" or t.dtype not in _NUMPY_FLOATS:
        return None
    try:
        return t.numpy()
    except (RuntimeError, TypeError):  # a negative or conjugate view, a tensor subclass
        return None


def _summarize(t: torch.Tensor | None, full_max: int, light: bool, norm: bool) -> dict | None:
    if t is None or not isinstance(t, torch.Tensor):
        return None
    shape = list(t.shape)
    try:
        t = t.detach()  # the recorder's reads make no graph
        if t.layout != torch.strided or t.device.type == "meta":
            return {"shape": shape, "stats": {"numel": t.numel()}}
        if t.is_complex():
            return _complex_summary(t, shape, full_max)
        numel = t.numel()
        if numel <= full_max:
            values = t.reshape(-1).tolist()
            if not t.is_floating_point() or all(map(math.isfinite, values)):
                return {"shape": shape, "values": values}
            return {"shape": shape, "values": [_clean(v) for v in values]}
        if numel <= SMALL_MAX:
            values = _host_values(t)
            if values is not None:
                return {"shape": shape, "stats": _numpy_stats(values, numel, light, norm)}
        return {"shape": shape, "stats": _norm_only(t, numel) if light else _stats(t, numel, norm)}
    except (RuntimeError, TypeError, ValueError) as exc:  # e.g. an exotic tensor subclass
        return {"shape": shape, "stats": {"numel": t.numel()}, "note": str(exc)[:200]}


# Below this size, torch's per-kernel dispatch and thread start-up cost more than the work:
# NumPy on the same memory (CPU tensors only, no copy) is several times faster.
SMALL_MAX = 1 << 16
_NUMPY_FLOATS = (torch.float32, torch.float64)
_MIN, _MAX, _SUM = np.minimum.reduce, np.maximum.reduce, np.add.reduce


def _numpy_stats(a: np.ndarray, numel: int, light: bool, with_norm: bool) -> dict:
    # an overflow in graphview's own sums (uninitialised torch.empty memory) is not the script's warning
    with np.errstate(all="ignore"):
        return _numpy_stats_unchecked(a, numel, light, with_norm)


def _numpy_stats_unchecked(a: np.ndarray, numel: int, light: bool, with_norm: bool) -> dict:
    flat = a.reshape(-1)
    if light:
        norm = float(np.sqrt(np.dot(flat, flat)))
        stats = {"norm": _clean(norm), "numel": numel}
        values = [norm]
    else:  # the ufuncs' own reductions: what ndarray.min / max / sum call, less their wrappers
        lo, hi, total = float(_MIN(flat)), float(_MAX(flat)), float(_SUM(flat))
        stats = {"min": _clean(lo), "max": _clean(hi), "mean": _clean(total / numel), "numel": numel, "nan": 0, "inf": 0}
        values = [lo, hi, total]
        if with_norm:
            norm = float(np.sqrt(np.dot(flat, flat)))
            stats["norm"] = _clean(norm)
            values.append(norm)
    if not all(map(math.isfinite, values)):
        stats["nan"] = int(np.isnan(flat).sum())
        stats["inf"] = int(np.isinf(flat).sum())
    return stats


def _complex_summary(t: torch.Tensor, shape: list, full_max: int) -> dict:
    """Complex tensors: values as [real, imag] pairs; statistics of the magnitudes."""
    if t.numel() <= full_max:
        pairs = torch.view_as_real(t.resolve_conj()).reshape(-1, 2).tolist()
        return {"shape": shape, "complex": True, "values": [[_clean(a), _clean(b)] for a, b in pairs]}
    magnitude = t.abs()
    stats = _stats(magnitude, magnitude.numel())
    stats["of"] = "magnitude"
    return {"shape": shape, "complex": True, "stats": stats}


def _as_float(t: torch.Tensor) -> torch.Tensor:
    if not t.is_floating_point():
        return t.to(torch.float64) if t.dtype != torch.bool else t.to(torch.float32)
    if t.dtype in (torch.float16, torch.bfloat16):
        return t.float()
    return t


def _stats(t: torch.Tensor, numel: int, with_norm: bool = True) -> dict:
    """min, max, mean (and norm): vectorized passes over the data (aminmax, sum, vector_norm)."""
    t = _as_float(t)
    lo, hi = torch.aminmax(t)
    parts = [lo, hi, t.sum()] + ([torch.linalg.vector_norm(t)] if with_norm else [])
    values = torch.stack(parts).tolist()
    lo, hi, total = values[:3]
    stats = {"min": _clean(lo), "max": _clean(hi), "mean": _clean(total / numel), "numel": numel, "nan": 0, "inf": 0}
    if with_norm:
        stats["norm"] = _clean(values[3])
    if not all(map(math.isfinite, values)):  # a NaN or Inf somewhere (rare): count them
        stats["nan"] = int(torch.isnan(t).sum())
        stats["inf"] = int(torch.isinf(t).sum())
    return stats


def _norm_only(t: torch.Tensor, numel: int) -> dict:
    norm = float(_l2(_as_float(t), numel))
    stats = {"norm": _clean(norm), "numel": numel}
    if not math.isfinite(norm):
        stats["nan"] = int(torch.isnan(t).sum())
        stats["inf"] = int(torch.isinf(t).sum())
    return stats


def _l2(t: torch.Tensor, numel: int) -> torch.Tensor:
    """The L2 norm; large tensors as a norm of row norms, which torch parallelizes better."""
    if numel >= 1 << 16 and t.is_contiguous():
        for rows in (64, 32, 16, 8):
            if numel % rows == 0:
                return torch.linalg.vector_norm(torch.linalg.vector_norm(t.view(rows, -1), dim=1))
    return torch.linalg.vector_norm(t)


def _clean(v: object) -> object:
    """JSON has no NaN/Inf: send them as strings the views understand."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v
