"""Turn tensors into plain value summaries (lists of floats or statistics).

Runs inside the recorder, on a detached view of the tensor, and never keeps the tensor.
"""

from __future__ import annotations

import itertools
import math
import weakref

import numpy as np
import torch

from graphview.core.events import FULL_VALUES_MAX
from graphview.core.value_stats import (
    BLAS_MAX, HIST_BINS, HIST_SAMPLE_MAX, SENT, VALUES_SENT_MAX, _clean, _numpy_histogram, _numpy_stats, array_stats,
    how_to_send, summary_of_values,
)


def dtype_name(dtype: torch.dtype, _names: dict = {}) -> str:  # noqa: B006 - a cache
    name = _names.get(dtype)
    if name is None:
        name = _names[dtype] = str(dtype).removeprefix("torch.")
    return name


def device_name(device: torch.device, _names: dict = {}) -> str:  # noqa: B006 - a cache
    name = _names.get(device)
    if name is None:
        name = str(device)
        if len(_names) < 64:
            _names[device] = name
    return name


def summarize(t: torch.Tensor | None, full_max: int = FULL_VALUES_MAX, light: bool = False,
              norm: bool = True, hist: bool = False, exact: bool = False, known_norm: float | None = None,
              send: bool = False) -> dict | tuple | None:
    """``{"shape", "values"}`` for small tensors, ``{"shape", "stats"}`` otherwise.

    ``light`` (gradients flowing through backward) keeps only the norm of large tensors: one
    pass over the data, which still tells a NaN or Inf apart (the norm is then not finite).
    ``norm=False`` (forward activations) skips the norm: min, max and mean in two passes.
    ``hist`` adds ``stats["hist"]``: counts in HIST_BINS equal bins from min to max (asked for
    parameters, inputs and ``.grad``, a few tensors a step; not for every activation). These are
    what a user looks at when a gradient is None, NaN or huge: their statistics are exact, never
    sampled (see NOTE [Sampled statistics]). ``exact``: not sampled either (a gradient on its way
    into a leaf's ``.grad``, shown beside it). ``known_norm``: the norm of ``t``'s values, exact,
    as this module computed it a moment ago (:meth:`LightSummaries.known_norm`): not computed again.
    ``send``: a plain CPU float32 / float64 tensor of at most VALUES_SENT_MAX values gives its values
    instead, to be summarized by whoever reads the compact event it goes into (see NOTE [Values sent
    to be summarized] in graphview/core/value_stats.py).
    """
    summary = _dense_host_summary(t, full_max, light, norm, hist, sample=not (hist or exact), known_norm=known_norm,
                                  send=send)
    if summary is not None:
        return summary
    summary = _summarize(t, full_max, light, norm, sample=not (hist or exact))
    if hist and summary is not None and "stats" in summary and "min" in summary["stats"] and t.layout == torch.strided:
        # binned from the values the statistics saw: min and max are theirs
        read = _to_read(t.detach(), sample=False)[0] if t.is_cpu else t
        histogram = _histogram(read, summary["stats"])
        if histogram is not None:
            summary["stats"]["hist"], sampled = histogram
            repeat = t.numel() // max(1, read.numel())
            if repeat > 1:  # an expanded tensor: each value read once stands for `repeat` of them
                summary["stats"]["hist"] = [count * repeat for count in summary["stats"]["hist"]]
                sampled *= repeat
            if sampled != summary["stats"].get("numel"):
                summary["stats"]["hist_of"] = sampled
    return summary


_PARAMETER = torch.nn.Parameter
_STRIDED = torch.strided


def _dense_host_summary(t, full_max: int, light: bool, norm: bool, hist: bool, sample: bool,
                        known_norm: float | None = None, send: bool = False) -> dict | tuple | None:
    """``summarize`` of the tensors a step summarizes by the thousand, in fewer calls: a plain
    float32 / float64 CPU tensor (or parameter) of more than ``full_max`` values whose elements
    fill a block of its memory, each once (contiguous, or transposed). The statistics and the
    histogram are those of the general path, from one NumPy view of that memory read once.
    ``None`` for any other tensor (the general path summarizes it)."""
    kind = type(t)
    if (kind is not torch.Tensor and kind is not _PARAMETER) or t.dtype not in _NUMPY_FLOATS or not t.is_cpu \
            or t.layout != _STRIDED:
        return None
    numel = t.numel()
    if numel <= full_max:
        return None
    read = t.detach() if t.requires_grad else t  # (a gradient needs none: one torch call less a summary)
    if not read.is_contiguous():
        if 0 in read.stride() or not _dense(read):
            return None
        read = read.as_strided((numel,), (1,), read.storage_offset())  # its memory in order
    sampled = sample and numel > SAMPLE_ABOVE
    try:
        values = (_sample_of(read) if sampled else read).numpy()
    except (RuntimeError, TypeError):  # a negative view
        return None
    if send and numel <= VALUES_SENT_MAX:  # (never sampled: SAMPLE_ABOVE is larger)
        return (SENT, how_to_send(light, norm, hist), list(t.shape), list(values.shape), values.dtype.char,
                values.tobytes())
    stats = array_stats(values, numel, light, norm, hist, sampled, None if sampled else known_norm)
    return {"shape": list(t.shape), "stats": stats}


#: below this many values a light summary costs less than finding an equal one
SHARED_MIN = 1 << 13


class LightSummaries:
    """Light summaries (``summarize(t, light=True)``) of the gradients of one backward call,
    computed once per run of memory.

    Many backward nodes pass a gradient on over the very memory they received it in (a view,
    transpose, expand to the same shape, add, clone: about 60% of a transformer's large
    gradients), and AccumulateGrad receives what its feeder sent: the same values, so the same
    norm. A large tensor that covers its memory densely (no gaps, no element twice) is keyed by
    that memory and its version; the entry keeps a weak reference to the tensor summarized, so
    memory freed and reused by another tensor never matches. The recorder never keeps a tensor.
    """

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[tuple, tuple] = {}

    def summary(self, t, exact: bool = False, send: bool = False) -> dict | tuple | None:
        """``exact``: never from a sample (a sampled one known for the same memory is summarized anew);
        ``send``: as ``summarize``'s (the values of a small tensor, for a compact event)."""
        if not isinstance(t, torch.Tensor) or t.numel() < SHARED_MIN or t.layout != torch.strided:
            return summarize(t, light=True, exact=exact, send=send)
        key = _memory_key(t)
        if key is not None:
            known = self._known.get(key)
            if known is not None and known[0]() is not None:
                kept = known[1]
                if type(kept) is tuple:  # the values, sent once already: the same again, as this tensor's
                    sent = (SENT, kept[1], list(t.shape), *kept[3:])
                    return sent if send else summary_of_values(sent)
                if not (exact and "sampled" in kept):
                    return {"shape": list(t.shape), "stats": dict(kept)}
        summary = summarize(t, light=True, exact=exact, send=send)
        if key is not None and type(summary) is tuple:
            self._known[key] = (weakref.ref(t), summary)
        elif key is not None and summary is not None and "stats" in summary and "note" not in summary:
            self._known[key] = (weakref.ref(t), summary["stats"])
        return summary

    def known_norm(self, t) -> float | None:
        """The exact norm of ``t``'s values when this call summarized the same memory, unchanged
        since, a moment ago (a gradient that became a leaf's ``.grad``: AccumulateGrad took the
        very tensor it received): what ``summarize(t)`` would compute again, one pass over it.
        Only above BLAS_MAX values, where both compute it with the same einsum."""
        if type(t) is not torch.Tensor or t.numel() <= BLAS_MAX or t.layout != torch.strided:
            return None
        key = _memory_key(t)
        known = self._known.get(key) if key is not None else None
        if known is None or known[0]() is None or type(known[1]) is tuple or "sampled" in known[1]:
            return None  # (values sent: their norm is not known here)
        norm = known[1].get("norm")
        return norm if type(norm) is float else None  # (a NaN or Inf: "nan" / "inf", counted anew)


def _memory_key(t: torch.Tensor) -> tuple | None:
    """The memory a dense tensor's values fill, as it is now (its version: a write in place
    changes it), or None for one that does not fill a block of memory each value once."""
    try:
        return (t.data_ptr(), t.numel(), t.dtype, t.get_device(), t._version) if _dense(t) else None
    except RuntimeError:  # no storage of its own (a wrapper subclass, an inference tensor's version)
        return None


def _dense(t: torch.Tensor) -> bool:
    """Whether ``t``'s elements fill ``numel`` consecutive places of its storage, each once."""
    if t.is_contiguous():
        return True
    expected = 1
    for size, stride in sorted(zip(t.shape, t.stride()), key=lambda pair: pair[1]):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


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
    if t.is_complex() or t.layout != torch.strided or t.is_meta:
        return None
    try:
        t = t.detach()
        stride = max(1, -(-t.numel() // HIST_SAMPLE_MAX))
        if t.is_cpu:
            flat = _host_values(t)
            if flat is None:
                return None
            flat = flat.reshape(-1)[::stride]
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


def _host_values(t: torch.Tensor) -> np.ndarray | None:
    """A detached CPU tensor's values as a NumPy array: on the tensor's own memory for float32 and
    float64, a float32 / float64 copy for other real dtypes, ``None`` where NumPy cannot read it."""
    if not t.is_cpu:
        return None
    dtype = t.dtype
    try:
        if dtype in _NUMPY_FLOATS:
            return t.numpy()
        if dtype is torch.bfloat16:  # the top half of a float32: widen the bits
            bits = t.view(torch.int16).numpy().view(np.uint16).astype(np.uint32)
            return (bits << 16).view(np.float32)
        if dtype is torch.float16 or dtype is torch.bool:
            return t.numpy().astype(np.float32)
        if not t.is_floating_point():
            return t.numpy().astype(np.float64)
    except (RuntimeError, TypeError):  # a negative or conjugate view, a tensor subclass, an exotic dtype
        return None
    return None


def _summarize(t: torch.Tensor | None, full_max: int, light: bool, norm: bool, sample: bool = True) -> dict | None:
    if t is None or not isinstance(t, torch.Tensor):
        return None
    shape = list(t.shape)
    try:
        if t.layout == torch.sparse_coo and not t.is_meta:
            return _sparse_summary(t.detach(), shape, full_max)
        if t.layout != torch.strided or t.is_meta:
            return {"shape": shape, "stats": {"numel": t.numel()}}
        if t.is_complex():
            return _complex_summary(t.detach(), shape, full_max)
        numel = t.numel()
        if numel <= full_max:
            values = _flat_values(t)
            if not t.is_floating_point() or all(map(math.isfinite, values)):
                return {"shape": shape, "values": values}
            return {"shape": shape, "values": [_clean(v) for v in values]}
        t = t.detach()  # the recorder's reads make no graph
        if t.is_cpu:
            read, sampled = _to_read(t, sample)
            values = _host_values(read)
            if values is not None:
                return {"shape": shape, "stats": _numpy_stats(values, numel, light, norm, sampled)}
        return {"shape": shape, "stats": _norm_only(t, numel) if light else _stats(t, numel, norm)}
    except (RuntimeError, TypeError, ValueError) as exc:  # e.g. an exotic tensor subclass
        return {"shape": shape, "stats": {"numel": t.numel()}, "note": str(exc)[:200]}


def _flat_values(t: torch.Tensor) -> list:
    """A small tensor's values in order, as Python numbers: ``tolist`` flattened in Python (a
    reshape, and the copy it makes of a transposed tensor, are torch calls that torch.profiler
    would list beside the script's own)."""
    values = t.tolist()
    if t.dim() == 0:
        return [values]
    for _ in range(t.dim() - 1):
        values = list(itertools.chain.from_iterable(values))
    return values


def _sparse_summary(t: torch.Tensor, shape: list, full_max: int) -> dict:
    """A sparse COO tensor (an ``Embedding(sparse=True)``'s gradient): a small one's values; a
    large one's statistics over every element, the zeros it does not store included, exact, with
    ``nnz`` (how many elements it stores, after adding up duplicates)."""
    t = t.coalesce()
    numel = t.numel()
    if numel <= full_max:
        return _summarize(t.to_dense(), full_max, light=False, norm=True, sample=False)
    values = t.values()
    stored = values.numel()
    if not stored:
        stats = {"min": 0.0, "max": 0.0, "mean": 0.0, "numel": numel, "nan": 0, "inf": 0, "norm": 0.0}
    else:
        stats = _stats(values, stored)
        stats["numel"] = numel
        if isinstance(stats["mean"], float):
            stats["mean"] = stats["mean"] * stored / numel
        if stored < numel:  # the zeros it does not store
            for key, pick in (("min", min), ("max", max)):
                if isinstance(stats[key], float):
                    stats[key] = pick(stats[key], 0.0)
    stats["nnz"] = stored
    return {"shape": shape, "stats": stats}


# NOTE [Sampled statistics]
# Exact statistics of a tensor read all of its memory: on one core about 0.35 ms per pass over 2M
# float32 values, whatever computes them, since the memory is the limit. A transformer step made
# ~50M values of gradients and ~22M of activations: exact statistics of all of them cost a quarter
# of a plain step, more than many of the elementwise ops they describe. So what flows (activations,
# gradients along backward edges) is sampled: a CPU tensor of more than SAMPLE_ABOVE values is
# summarized from SAMPLE_RUNS runs of SAMPLE_RUN consecutive values, evenly spaced over its memory
# (the runs read 256 KiB, whatever the tensor's size), and the statistics say so: ``sampled`` is
# how many values they saw; ``min``/``max`` are the sample's, ``mean`` its mean, ``norm`` the
# sample's scaled to the whole (sqrt(numel / sampled)), ``nan``/``inf`` counted in the sample.
# Views say "sample min", "≈" and "a sample of N". Never sampled: parameters, inputs, buffers and
# ``.grad`` (the summaries with a histogram), and the gradient a node sends into a leaf's ``.grad``
# (directly, or through a node that only passes it on, as a linear layer's ``weight.t()`` does): a
# NaN in a weight's gradient, or an embedding's gradient with a few non-zero rows among 50,000,
# would hide from a sample. Only a tensor whose elements fill a block of memory, each once, is
# sampled (its statistics are those of that block's values, in whatever order); others (a strided
# slice) are exact, and an expanded one is read once (see ``_to_read``).
#: tensors of more values than this are summarized from a sample (1 MiB of float32)
SAMPLE_ABOVE = 1 << 18
#: the sample: this many runs of SAMPLE_RUN consecutive values (65,536 values)
SAMPLE_RUNS = 64
SAMPLE_RUN = 1024


def _to_read(t: torch.Tensor, sample: bool = True) -> tuple[torch.Tensor, bool]:
    """The values of CPU tensor ``t`` that its statistics read, and whether they are a sample.

    An expanded dimension (stride 0) repeats the same values: it is read once (exact: the
    statistics scale by the repeat; a 2M-value gradient of ``sum()`` is one value). What is
    left is sampled when larger than SAMPLE_ABOVE and ``sample`` (see NOTE [Sampled statistics])."""
    try:
        if 0 in t.stride():
            kept = [(size, stride) for size, stride in zip(t.shape, t.stride()) if stride != 0 or size <= 1]
            t = t.as_strided([size for size, _ in kept], [stride for _, stride in kept], t.storage_offset())
        taken = _sample_of(t) if sample else None
        if taken is not None:
            return taken, True
        if not t.is_contiguous() and _dense(t):  # a transposed gradient: its memory in order, not a copy
            return t.as_strided((t.numel(),), (1,), t.storage_offset()), False
    except (RuntimeError, TypeError):  # a tensor subclass without views of its memory: all of it, as it is
        pass
    return t, False


def _sample_of(t: torch.Tensor) -> torch.Tensor | None:
    """SAMPLE_RUNS runs of SAMPLE_RUN consecutive values of ``t``'s memory, evenly spaced from its
    first value to its last (a view: nothing is copied), or ``None`` when ``t`` is not dense."""
    numel = t.numel()
    if numel <= SAMPLE_ABOVE or not _dense(t):
        return None
    step = (numel - SAMPLE_RUN) // (SAMPLE_RUNS - 1)
    # dense with non-negative strides: the lowest address holds element 0, the block is numel long
    return t.as_strided((SAMPLE_RUNS, SAMPLE_RUN), (step, 1), t.storage_offset())


# CPU tensors are summarized with NumPy (see NOTE [Summaries without torch's thread pool] in
# graphview/core/value_stats.py).
_NUMPY_FLOATS = (torch.float32, torch.float64)


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


