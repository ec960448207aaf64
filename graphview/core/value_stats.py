"""Statistics of a tensor's values from their bytes in memory: min, max, mean, norm, NaN and Inf
counts and a histogram, with NumPy alone.

The recorder computes them on the memory of the tensor it reads (graphview/capture/summaries.py);
the reader of the runner's channel computes the same numbers, with the same calls, on the copy of a
small tensor's values the recorder sent instead (:func:`summary_of_values`, see
graphview/core/compact_events.py). Each number is the same to the last bit either way.
"""

from __future__ import annotations

import math

import numpy as np

#: bins of the value histograms the inspector draws
HIST_BINS = 24
#: larger tensors are binned from every k-th value, at most this many
HIST_SAMPLE_MAX = 1 << 14


def _numpy_histogram(flat: np.ndarray, lo: float, hi: float) -> list[int]:
    """torch.histc(flat, HIST_BINS, lo, hi) for values all within [lo, hi], as CPU torch computes it."""
    if hi == lo:
        return [int(flat.size)] + [0] * (HIST_BINS - 1)
    if (hi - lo) * HIST_BINS >= _FLOAT_MAX.get(flat.dtype, 0.0) / 2:  # a range float32 cannot hold
        flat = flat.astype(np.float64)
    real = flat.dtype.type
    low = real(lo)
    position = ((flat - low) * real(HIST_BINS) / (real(hi) - low)).astype(np.intp)
    np.minimum(position, HIST_BINS - 1, out=position)  # the maximum itself: in the last bin
    return np.bincount(position, minlength=HIST_BINS).tolist()


# NOTE [Summaries without torch's thread pool]
# CPU tensors are summarized with NumPy, whose reductions run on the calling thread: torch's
# parallel reductions wait for every intra-op thread, and while another process keeps a core busy
# a 2M-value min/max/sum took 6.6-16.6 ms instead of 1.8-2.9 ms (and torch.histc 3.7 ms instead of
# 0.03 ms on 256 values). Norms of more than BLAS_MAX values use einsum, not np.dot: OpenBLAS
# threads a dot product that long (and its threads spin on after it). Other devices use torch.
_MIN, _MAX = np.minimum.reduce, np.maximum.reduce
BLAS_MAX = 1 << 13


def _numpy_stats(a: np.ndarray, numel: int, light: bool, with_norm: bool, sampled: bool = False,
                 known_norm: float | None = None) -> dict:
    """min, max, mean (and norm), or the norm alone (``light``), on the calling thread.

    ``a`` may hold fewer values than the tensor's ``numel``: each of its values once, where the
    tensor repeats them (an expanded dimension: exact, the norm and the NaN / Inf counts scaled
    by the repeat), or a sample of them (``sampled``, see NOTE [Sampled statistics]: the
    statistics are the sample's, the norm scaled to the whole).

    No floating-point warning of graphview's own reaches the script: the norm alone is an einsum
    (which never warns); a sum or a dot product is computed outside ``np.errstate`` only where
    min and max prove that it cannot overflow (uninitialised ``torch.empty`` memory can)."""
    count = a.size
    scale = 1.0 if count == numel else numel / count
    if light:
        if _by_rows(a):  # (errstate only then: it costs more than a short einsum)
            with np.errstate(all="ignore"):
                square_sum = _square_rows(a)
        else:
            square_sum = float(_einsum_square(a))
        norm = math.sqrt(square_sum * scale)  # as Python floats: NumPy's float32 would warn on overflow
        stats = {"norm": _clean(norm), "numel": numel}
        values = [norm]
    else:
        if count > BLOCKED_ABOVE and a.flags.c_contiguous:  # (see NOTE [Statistics a block at a time])
            lo, hi, total, square_sum = blocked_reductions(a.reshape(-1), with_norm and known_norm is None)
            norm = known_norm if known_norm is not None or not with_norm else math.sqrt(square_sum * scale)
        else:
            lo, hi, total, norm = _whole_reductions(a, with_norm, scale, known_norm)
        stats = {"min": _clean(lo), "max": _clean(hi), "mean": _clean(total / count), "numel": numel, "nan": 0, "inf": 0}
        values = [lo, hi, total]
        if with_norm:
            stats["norm"] = _clean(norm)
            values.append(norm)
    if not all(map(math.isfinite, values)):
        repeat = 1 if sampled else numel // count
        stats["nan"] = int(np.isnan(a).sum()) * repeat
        stats["inf"] = int(np.isinf(a).sum()) * repeat
    if sampled:
        stats["sampled"] = count
    return stats


def _whole_reductions(a: np.ndarray, with_norm: bool, scale: float,
                      known_norm: float | None) -> tuple[float, float, float, float | None]:
    """min, max, sum and (``with_norm``) norm of ``a``: the ufuncs' own minimum and maximum (what
    ndarray.min / max call) and einsum's sum, over any strides, each a pass over the whole array.
    The sum is einsum's, not ``add.reduce``'s: over a 2-D or 3-D array NumPy's pairwise reduction
    reduces a row at a time (65,536 float32 values as 1,024 rows of 64: 37.5 us, einsum 5.3 us;
    2,048 values: 2.4 against 1.0 us), an error beside the exact sum about that of torch's own."""
    lo, hi = float(_MIN(a, axis=None)), float(_MAX(a, axis=None))
    count = a.size
    bound = max(abs(lo), abs(hi)) * count  # NaN: False below
    fmax = _FLOAT_MAX.get(a.dtype, 0.0)
    if known_norm is not None and with_norm and bound < fmax:
        total, norm = float(_sum(a)), known_norm
    elif bound < fmax and (not with_norm or bound * max(abs(lo), abs(hi)) < fmax):
        total = float(_sum(a))
        norm = math.sqrt(float(_square_norm(a)) * scale) if with_norm else None
    else:
        with np.errstate(all="ignore"):
            total = float(_sum(a))
            norm = math.sqrt(float(_squares(a)) * scale) if with_norm else None
    return lo, hi, total, norm


# NOTE [Statistics a block at a time]
# Min, max, sum and the sum of squares are four passes over a tensor's values. Over a tensor larger
# than the cache each pass reads it from memory again: a 38.6M-value float32 embedding (GPT-2's
# wte, 154 MB) took 54 ms for the four, where reading it once, a block of BLOCK values at a time,
# and making the four passes over each block while it is in the cache takes 32 ms (one core, best
# of five; a 2.4M-value weight 1.80 -> 1.65 ms). So a contiguous array of more than
# BLOCKED_ABOVE values is reduced block by block: min and max are the same numbers; the sum and
# the sum of squares add up the blocks' own (an einsum within a block, the blocks' sums added as
# Python floats, in double precision), which differs from one sum over the whole array in the
# last bits (its error grows with the block, not the tensor). A block's sum is einsum's, not
# NumPy's pairwise ``add.reduce``: 5.0 us against 14.3 us for 64K float32 values in the cache, its
# error beside the exact sum 1.5e-6 to 2.6e-6 of it against 0.6e-6 to 1.3e-6 (torch's own float32
# sum 0.9e-6 to 2.2e-6; 20 random blocks each of four kinds); GPT-2 small's parameters summarized
# together 98-105 ms -> 84-89 ms (thread CPU time, two alternated pairs). A block's own float32 sum can still overflow (an Inf in the mean, as over the whole)
# where its values come near float32's limit; added across blocks in double, a sum beyond
# float32's range that no block's overflows is a finite mean.
#: arrays of more values are reduced a block at a time (1 MiB of float32)
BLOCKED_ABOVE = 1 << 18
#: values in a block (256 KiB of float32: within each core's cache)
BLOCK = 1 << 16


def blocked_reductions(flat: np.ndarray, squares: bool) -> tuple[float, float, float, float | None]:
    """min, max, sum and (``squares``) the sum of squares of a contiguous 1-D array, a block at a
    time (see the NOTE); NaN where a value is NaN, as NumPy's reductions say it. No warning."""
    lows, highs = [], []
    total, square_sum = 0.0, (0.0 if squares else None)
    with np.errstate(all="ignore"):
        for start in range(0, flat.size, BLOCK):
            block = flat[start:start + BLOCK]
            lows.append(_MIN(block))
            highs.append(_MAX(block))
            total += float(_sum(block))
            if squares:
                square_sum += float(_squares(block))
        lo, hi = float(_MIN(np.array(lows), axis=None)), float(_MAX(np.array(highs), axis=None))
    return lo, hi, total, square_sum


_FLOAT_MAX = {np.dtype(np.float32): float(np.finfo(np.float32).max),
              np.dtype(np.float64): float(np.finfo(np.float64).max)}


try:  # what np.einsum calls (its default optimize=False), without its Python wrapper: a third of a small norm
    from numpy._core.multiarray import c_einsum as _c_einsum
except ImportError:  # (NumPy 1)
    try:
        from numpy.core.multiarray import c_einsum as _c_einsum
    except ImportError:
        _c_einsum = np.einsum
_AXES = [list(range(n)) for n in range(33)]


def _sum(a: np.ndarray):
    """The sum of ``a``'s values over any strides (see ``_whole_reductions``)."""
    axes = _AXES[a.ndim] if a.ndim < len(_AXES) else list(range(a.ndim))
    return _c_einsum(a, axes, [])


def _einsum_square(a: np.ndarray):
    """The sum of squares over any strides (a sample's runs are not copied together first)."""
    axes = _AXES[a.ndim] if a.ndim < len(_AXES) else list(range(a.ndim))
    return _c_einsum(a, axes, a, axes, [])


def _square_norm(a: np.ndarray):
    """The sum of squares where it cannot overflow; np.dot (BLAS) up to BLAS_MAX values, above
    as :func:`_squares` (see the NOTE)."""
    if a.size <= BLAS_MAX:
        flat = a.reshape(-1)
        return np.dot(flat, flat)
    return _squares(a)


# NOTE [Sums of squares by rows]
# einsum's sum of squares reads float32 at about a quarter of the speed of BLAS's dot product: 65,536
# values 14.1 us against 6.8, 262,144 values 52.7 against 24.6, GPT-2 small's 38.6M-value embedding
# gradient 62-66 ms against 42-43 (one core). But OpenBLAS threads a dot product of more than 10,000
# values (see NOTE [Summaries without torch's thread pool]), and a dot product that overflows warns.
# So an array of at least ROWS_MIN values that fills its memory in order is taken as rows of
# SQUARE_ROW values, and np.vecdot makes one BLAS dot product a row in one call (each on the calling
# thread), the rows' sums added in double precision (nearer the exact sum than one float32
# einsum: 0.4e-9 to 1.4e-8 of it against 1.5e-8 to 2.8e-7, random values of 64K to 4M). A caller
# runs it under ``np.errstate`` (5.9 us: not worth it below ROWS_MIN), or where min and max prove
# that no sum can overflow. NumPy 1 has no vecdot: einsum there.
#: arrays of at least this many values are summed as rows (see the NOTE)
ROWS_MIN = 1 << 16
#: values in a row: one BLAS dot product, below OpenBLAS's threading threshold
SQUARE_ROW = 8192
_VECDOT = getattr(np, "vecdot", None)
_ADD = np.add.reduce


def _squares(a: np.ndarray):
    """The sum of squares, by rows where it can be (see the NOTE), else einsum's; the caller
    keeps an overflow from warning."""
    return _square_rows(a) if _by_rows(a) else _einsum_square(a)


def _by_rows(a: np.ndarray) -> bool:
    """Whether ``a``'s sum of squares is taken by rows (see the NOTE)."""
    return a.size >= ROWS_MIN and a.flags.c_contiguous and _VECDOT is not None


def _square_rows(a: np.ndarray) -> float:
    """The sum of squares of C-contiguous ``a``: BLAS dot products of rows of SQUARE_ROW values,
    added in double precision (see the NOTE)."""
    flat = a.reshape(-1)
    rows = flat.size // SQUARE_ROW
    body = flat[:rows * SQUARE_ROW].reshape(rows, SQUARE_ROW)
    total = float(_ADD(_VECDOT(body, body), dtype=np.float64))
    tail = flat[rows * SQUARE_ROW:]
    if tail.size:
        total += float(np.dot(tail, tail))
    return total


def _clean(v: object) -> object:
    """JSON has no NaN/Inf: send them as strings the views understand."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


# NOTE [Values sent to be summarized]
# Summarizing a tensor of a few thousand values costs the recording script far more than reading
# them: 13-29 us a tensor in a recorded step (the calls around NumPy's passes, not the passes),
# where a copy of its 8-16 KiB takes about 2 us. A recorded step of a 256-layer MLP summarizes
# about 2,000 such tensors (its activations on the way forward, its gradients on the way back).
# So the recorder sends a small CPU tensor's values instead of their summary, as a tuple in the
# summary's place (made by graphview/capture/summaries.py), and whoever reads its compact events
# (graphview/core/compact_events.py: the channel's reader, in the process that started the
# runner) makes the summary of them with the same calls on the same values: the same numbers, to
# the last bit. The tuple is (SENT, how, shape, read_shape, dtype, values):
#
# * ``how``: which statistics (see :data:`_HOWS`), as ``summarize``'s ``light``, ``norm`` and ``hist``;
# * ``shape``: the tensor's shape; ``read_shape``: the shape of the array the recorder would have read
#   (the tensor's, or its memory in order for a transposed one: a sum over other axes can differ in
#   the last bits);
# * ``dtype``: NumPy's character for float32 ("f") or float64 ("d"); ``values``: their bytes, in that order.
#
# What comes out of the runner's pipe is treated as hostile: a tuple that is not such a summary is
# refused (:class:`NotSentValues`), and none carries more than VALUES_SENT_MAX values.
#: the first item of a tuple that stands for the summary of the values it carries
SENT = "sent values"
#: a tensor of more values than this is summarized where it is recorded
VALUES_SENT_MAX = 1 << 14
#: how -> (light, norm, hist), as ``summarize`` takes them
_HOWS = {"light": (True, False, False), "plain": (False, False, False), "norm": (False, True, False),
         "hist": (False, True, True)}
_SENT_DTYPES = {"f": np.dtype(np.float32), "d": np.dtype(np.float64)}
_DIMS_MAX = 64  # (torch's own limit on a tensor's dimensions)


class NotSentValues(ValueError):
    """A tuple that is not the values of a tensor to summarize; the message says why."""


def how_to_send(light: bool, norm: bool, hist: bool) -> str:
    """The ``how`` of a tuple of sent values for ``summarize``'s ``light``, ``norm`` and ``hist``."""
    return "light" if light else ("hist" if hist else ("norm" if norm else "plain"))


def summary_of_values(sent: tuple) -> dict:
    """The summary (``{"shape", "stats"}``) the values in ``sent`` have: what the recorder's
    ``summarize`` gives for the tensor they were copied from (see the NOTE)."""
    if len(sent) != 6 or sent[0] != SENT:
        raise NotSentValues(f"a tuple of {len(sent)} values that is no summary")
    _, how, shape, read_shape, dtype, data = sent
    flags = _HOWS.get(how) if type(how) is str else None
    item = _SENT_DTYPES.get(dtype) if type(dtype) is str else None
    if flags is None or item is None or type(data) is not bytes:
        raise NotSentValues("sent values of no known kind")
    count = len(data) // item.itemsize
    if len(data) % item.itemsize or not 0 < count <= VALUES_SENT_MAX:
        raise NotSentValues(f"sent values of {len(data):,} bytes")
    if _count(shape) != count or _count(read_shape) != count:
        raise NotSentValues("sent values whose shape does not hold them")
    values = np.frombuffer(data, item).reshape(read_shape)
    light, norm, hist = flags
    return {"shape": list(shape), "stats": array_stats(values, count, light, norm, hist)}


def array_stats(values: np.ndarray, numel: int, light: bool, norm: bool, hist: bool, sampled: bool = False,
                known_norm: float | None = None) -> dict:
    """:func:`_numpy_stats` of ``values``, and with ``hist`` their histogram over [min, max] (from
    every k-th value past HIST_SAMPLE_MAX): the statistics of a summary, as the recorder and the
    channel's reader both make them."""
    stats = _numpy_stats(values, numel, light, norm, sampled, known_norm)
    if hist and "min" in stats:
        lo, hi = stats["min"], stats["max"]
        if isinstance(lo, float) and isinstance(hi, float):  # (NaN or Inf somewhere: no finite range to bin)
            flat = values.reshape(-1)[::max(1, -(-numel // HIST_SAMPLE_MAX))]
            stats["hist"] = _numpy_histogram(flat, lo, hi)
            if flat.size != numel:
                stats["hist_of"] = flat.size
    return stats


def _count(shape) -> int:
    """How many values a shape holds; -1 for what is no shape."""
    if (type(shape) is not list and type(shape) is not tuple) or len(shape) > _DIMS_MAX:
        return -1
    count = 1
    for size in shape:
        if type(size) is not int or not 0 <= size <= VALUES_SENT_MAX:
            return -1
        count *= size
    return count
