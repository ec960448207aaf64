"""Shortening names to fit a label without cutting a word in half.

``encoder.layers.0.norm1.bias`` shortens from the left at a dot (``…layers.0.norm1.bias``,
``…norm1.bias``): the end tells parameters apart. ``NativeBatchNormBackward0`` loses whole words
from its middle (``Native…NormBackward0``). Pure Python: the canvas passes a ``fits`` test that
measures text in its font.
"""

from __future__ import annotations

ELLIPSIS = "…"
_SEPARATORS = ". _/-·:"


def word_boundaries(text: str) -> list[int]:
    """Positions where a word starts: after a separator, at a capital after a lower-case letter."""
    cuts = [0]
    for i in range(1, len(text)):
        before, here = text[i - 1], text[i]
        if (before in _SEPARATORS and here not in _SEPARATORS) or (here.isupper() and before.islower()):
            cuts.append(i)
    cuts.append(len(text))
    return cuts


def _dotted_start(text: str) -> int | None:
    """Where a dotted path starts in ``text`` (its last space-separated word, after a lead such
    as ``▸ `` or ``into ``), if it ends with one."""
    word_start = text.rfind(" ") + 1
    return word_start if "." in text[word_start:] else None


def _path_and_note(head: str) -> tuple[str, str]:
    """A dotted path and the note in brackets after it (``encoder.layers.0 (recomputed)``:
    ``encoder.layers.0``, `` (recomputed)``); a head without such a note is all path."""
    cut = head.rfind(" (")
    if cut > 0 and head.endswith(")") and "." in head[:cut] and " " not in head[:cut]:
        return head[:cut], head[cut:]
    return head, ""


def _elide_words(text: str, fits) -> str | None:
    """The longest form of ``text`` that fits with whole words taken out, or None: from the
    left of a dotted path, from the middle of anything else."""
    cuts = word_boundaries(text)
    dotted = _dotted_start(text)
    best = None
    for i, start in enumerate(cuts):
        if dotted is not None and start != dotted:
            continue
        for end in cuts[i + 1:]:
            if end == len(text) and (start == 0 or dotted is not None):
                continue  # something of the name stays: a dotted path keeps its last part
            candidate = text[:start] + ELLIPSIS + text[end:].lstrip(".")
            kept = len(text) - (end - start)
            if (best is None or kept > best[0]) and fits(candidate):
                best = (kept, candidate)
                break  # later ends only keep less
    return None if best is None else best[1]


#: how many of a label's forms with fewer parts after its type :func:`elide_name` measures
_PARTS_TRIED = 4


def elide_name(text: str, fits) -> str:
    """``text`` itself if ``fits(text)``, else the longest form that fits with whole words taken
    out and an ellipsis in their place: from the left of a dotted path, from the middle of
    anything else. A ``path · Type`` label shortens its path first, by whole parts between
    its dots, and keeps the type while it can; a note after the path (``encoder.layers.0.self_attn (recomputed) · MultiheadAttention``)
    goes before the path's last part or the type do (``…self_attn · MultiheadAttention``). What
    follows the type (a comparison's bytes: ``model.1 · ReLU · 2.0 KiB → 2.0 KiB activations``) goes
    first, an ellipsis in its place (it went whole with the type: ``model.1``). When no form fits,
    the last word alone."""
    if fits(text):
        return text
    head, sep, tail = text.partition(" · ")
    if sep and " · " in tail:  # the parts after the type go first, the last first (a few tried, no
        # more: a trace's name of a thousand parts is no reason for a thousand measures)
        parts = text.split(" · ")
        for count in range(len(parts) - 1, max(1, len(parts) - 1 - _PARTS_TRIED), -1):
            shorter = " · ".join(parts[:count]) + sep + ELLIPSIS
            if fits(shorter):
                return shorter
        return elide_name(head + sep + parts[1], fits)  # the path and its type (one " · ": no deeper)
    if sep:
        path, note = _path_and_note(head)
        parts = path.split(".")
        shorter = [ELLIPSIS + ".".join(parts[k:]) for k in range(1, len(parts))]  # whole parts, from the left
        for after in dict.fromkeys((note + sep + tail, sep + tail)):  # with the note, then without it
            found = next((h + after for h in shorter if fits(h + after)), None)
            if found is not None:
                return found
        return elide_name(path if note else head, fits)  # no room for the type: the path alone
    shorter = _elide_words(text, fits)
    if shorter is not None:
        return shorter
    cuts = word_boundaries(text)
    last = cuts[-2] if len(cuts) > 2 else 0
    return ELLIPSIS + text[last:]
