"""Turn tensors into plain value summaries (lists of floats or statistics).

Runs inside the recorder, with autograd off, and never keeps the tensor.
"""

from __future__ import annotations

import math

import torch

from graphview.core.events import FULL_VALUES_MAX


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def summarize(t: torch.Tensor | None, full_max: int = FULL_VALUES_MAX) -> dict | None:
    """``{"shape", "values"}`` for small tensors, ``{"shape", "stats"}`` otherwise."""
    if t is None or not isinstance(t, torch.Tensor):
        return None
    shape = list(t.shape)
    try:
        with torch.no_grad():
            if t.layout != torch.strided or t.device.type == "meta":
                return {"shape": shape, "stats": {"numel": t.numel()}}
            if t.is_complex():
                t = torch.view_as_real(t)
            numel = t.numel()
            if numel <= full_max:
                values = t.detach().reshape(-1).tolist()
                return {"shape": shape, "values": [_clean(v) for v in values]}
            return {"shape": shape, "stats": _stats(t.detach(), numel)}
    except (RuntimeError, TypeError, ValueError) as exc:  # e.g. an exotic tensor subclass
        return {"shape": shape, "stats": {"numel": t.numel()}, "note": str(exc)[:200]}


def _stats(t: torch.Tensor, numel: int) -> dict:
    if not t.is_floating_point():
        t = t.to(torch.float64) if t.dtype != torch.bool else t.to(torch.float32)
    elif t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    lo, hi = torch.aminmax(t)
    total = t.sum()
    norm = torch.linalg.vector_norm(t)
    lo, hi, total, norm = (float(v) for v in torch.stack([lo, hi, total, norm]).tolist())
    stats = {"min": _clean(lo), "max": _clean(hi), "mean": _clean(total / numel), "norm": _clean(norm),
             "numel": numel, "nan": 0, "inf": 0}
    if not math.isfinite(norm):  # a NaN or Inf somewhere: count them (rare, so pay only then)
        stats["nan"] = int(torch.isnan(t).sum())
        stats["inf"] = int(torch.isinf(t).sum())
    return stats


def _clean(v: object) -> object:
    """JSON has no NaN/Inf: send them as strings the views understand."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v
