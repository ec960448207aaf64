"""Numbers and value summaries in a few words, for badges, panels and the status bar."""

from __future__ import annotations

from graphview.core.events import summary_text
from graphview.core.labels import elide_name


def short_value(summary) -> str:
    """A badge-sized form of a value summary: the value of a scalar, else a norm."""
    if not isinstance(summary, dict):
        return "None" if summary is None else str(summary)
    values = summary.get("values")
    if values is not None:
        shown = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in values[:3]]
        if len(values) == 1:
            return shown[0]
        return "[" + ", ".join(shown) + (", …]" if len(values) > 3 else "]")
    stats = summary.get("stats") or {}
    if stats.get("nan") or stats.get("inf"):
        return f"{stats.get('nan', 0)} NaN, {stats.get('inf', 0)} Inf" + (" in sample" if stats.get("sampled") else "")
    norm = stats.get("norm")
    if isinstance(norm, float):
        return f"norm ≈{norm:.4g}" if stats.get("sampled") else f"norm {norm:.4g}"
    return f"{stats.get('numel', '?')} values"


def human_bytes(n: float) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def short_bytes(n: float) -> str:
    """``human_bytes`` for a badge: three figures (``149 KiB``, ``16.4 KiB``), no wasted ``.0``."""
    text = human_bytes(n)
    number, _, unit = text.partition(" ")
    if unit != "B" and abs(float(number)) >= 100:
        return f"{float(number):.0f} {unit}"
    return text


def capped(summary, limit: int = 8) -> str:
    """A value summary for a panel: at most ``limit`` values, then how many more."""
    return summary_text(summary, limit)


_ELIDED: dict[tuple, str] = {}


def elided(text: str, font, width: float) -> str:
    """``text`` shortened at word boundaries to ``width`` pixels in ``font`` (see
    :func:`graphview.core.labels.elide_name`); remembered, since labels repaint often."""
    key = (text, font.key(), round(width))
    found = _ELIDED.get(key)
    if found is None:
        from PySide6.QtGui import QFontMetricsF

        metrics = QFontMetricsF(font)
        found = elide_name(text, lambda s: metrics.horizontalAdvance(s) <= width)
        if len(_ELIDED) > 20000:
            _ELIDED.clear()
        _ELIDED[key] = found
    return found
