"""The last line of a shut module card while the op at the cursor ran inside it.

The card read "2 ops · now to" or "19 ops · now transpose": "now to" read as half a sentence (the op
``to``, named like a word), and nothing said the name was an op's. It reads "19 ops · running:
transpose" where that fits the card's line; else the op alone, "running: scaled_dot_product_attention"
(the op's name is what the line is for: the count is the card's when nothing runs), elided at its end
only if even that is too wide.
"""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtGui import QFont, QFontMetricsF


def running_line(count: str, op: str, font: QFont, width: float) -> str:
    """The card's line for ``count`` (``"19 ops"``) while ``op`` runs inside it, for a line ``width`` wide in ``font``."""
    return _fitted(count, op, font.toString(), round(width, 1))


@lru_cache(maxsize=512)
def _fitted(count: str, op: str, font: str, width: float) -> str:
    described = QFont()
    described.fromString(font)
    metrics = QFontMetricsF(described)
    forms = (f"{count} · running: {op}", f"running: {op}")
    return next((form for form in forms if metrics.horizontalAdvance(form) <= width), forms[-1])
