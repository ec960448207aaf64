"""Strips: columns a branch of a model takes beside the rest, over its rows.

A model whose parts compute independently (Whisper's encoder and the decoder that reads its
output only in cross-attention, CLIP's vision and text towers, which meet in the loss) would be
one tall column if each module took rows of its own: the decoder below the encoder. A
:class:`Strip` gives such a branch columns of its own instead, right of everything drawn in its
rows, so it starts at the top beside the branch before it. The :class:`~graphview.core.drawing.grid.Grid`
asks the strips which columns a node may take in a row (:meth:`Strips.bounds`) and whether a
row holds another strip's nodes that would put a node inside a box it is not part of
(:meth:`Strips.foreign`).

What keeps the boxes apart: a strip's nodes take columns from its ``left``; every other node
in its rows (and the row below) stays left of ``left - 1``, a column kept empty between them
(the boxes drawn around each side's nodes have room there). A node outside the box that holds
both sides (``model``, around Whisper's encoder and decoder) does not go in the strip's rows at
all: it would be inside that box; where no box holds them (CLIP's towers, T5's encoder and
decoder), a module that starts after both sides (T5's head) starts below them too.

Pure Python, no Qt, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

#: columns between a strip and what is left of it: one empty column
GAP = 2
_NO_LIMIT = 1 << 30
#: the columns a node may take where no strip bounds them (every one a drawing can have)
UNBOUNDED = (-_NO_LIMIT, _NO_LIMIT)


def within(module: str | None, path: str) -> bool:
    """Whether ``module`` is ``path`` or inside it (``model.decoder.fc1`` is inside ``model.decoder``)."""
    return module is not None and (module == path or module.startswith(path + "."))


def parent_of(path: str) -> str:
    return path.rpartition(".")[0]


def branch_owner(module: str, others) -> str | None:
    """The outermost module of ``module``'s side where it parts from each path in ``others``: the
    child of their common ancestor (``model.decoder`` for ``model.decoder.embed_tokens`` beside
    ``model.encoder.layers.0``). None when ``module`` is one of them or holds one (its own rows)."""
    parts = module.split(".")
    owner = None
    for other in others:
        if not other or within(other, module):
            return None
        theirs = other.split(".")
        common = 0
        while common < min(len(parts), len(theirs)) and parts[common] == theirs[common]:
            common += 1
        if common == len(parts):
            return None
        candidate = ".".join(parts[:common + 1])
        if owner is None or len(candidate) < len(owner):
            owner = candidate
    return owner


@dataclass(slots=True)
class Strip:
    """The columns from ``left`` in rows ``top`` to ``bottom``, for the nodes of module ``owner``."""

    owner: str
    left: int
    top: int
    bottom: int

    @property
    def holder(self) -> str:
        """The module whose box holds this strip and what is beside it ("": no box, the model's own forward)."""
        return parent_of(self.owner)


class Strips:
    """The strips of one drawing, in the order they opened (each right of those before it in its rows)."""

    def __init__(self) -> None:
        self.strips: list[Strip] = []
        self._of: dict[str | None, Strip | None] = {}  # module path -> its strip (cached)

    def of(self, module: str | None) -> Strip | None:
        """The strip ``module``'s nodes go in (the innermost whose owner holds it), None: the drawing's first columns."""
        known = self._of.get(module, False)
        if known is not False:
            return known
        found = None
        for strip in self.strips:
            if within(module, strip.owner) and (found is None or len(strip.owner) > len(found.owner)):
                found = strip
        self._of[module] = found
        return found

    def open(self, owner: str, left: int, top: int) -> Strip:
        strip = Strip(owner, left, top, top)
        self.strips.append(strip)
        self._of.clear()
        return strip

    def grew(self, module: str | None, layer: int) -> None:
        """A node of ``module`` was placed in row ``layer``: its strip takes that row."""
        if not self.strips:  # (most drawings: no strip, and every node placed asks)
            return
        strip = self.of(module)
        if strip is not None:
            if layer > strip.bottom:
                strip.bottom = layer
            elif layer < strip.top:
                strip.top = layer

    def bounds(self, module: str | None, layer: int) -> tuple[int, int]:
        """The least and greatest column a node of ``module`` may take in row ``layer``: from its
        strip's ``left``, and left of the gap before each strip right of it whose rows reach there."""
        if not self.strips:
            return UNBOUNDED
        own = self.of(module)
        low = own.left if own is not None else -_NO_LIMIT
        high = _NO_LIMIT
        for strip in self.strips:
            if strip is not own and strip.left > low and layer <= strip.bottom + 1:
                high = min(high, strip.left - GAP)
        return low, high

    def foreign(self, layer: int, module: str | None, new: bool) -> bool:
        """Whether row ``layer`` belongs to a strip whose holding box ``module``'s node is not part of
        (it would be drawn inside that box); for a strip no box holds (CLIP's text tower, T5's
        decoder), whether ``module`` is ``new`` (none of its nodes drawn yet): what starts after
        both sides (T5's head) starts below them, not in the rows the first side left empty."""
        own = self.of(module)
        for strip in self.strips:
            if strip is not own and strip.top <= layer <= strip.bottom and not within(module, strip.owner) \
                    and (not within(module, strip.holder) if strip.holder else new):
                return True
        return False

    def side(self, module: str | None) -> str | None:
        """The owner of ``module``'s strip (None: the first columns): nodes on different sides share rows."""
        strip = self.of(module)
        return strip.owner if strip is not None else None

    def gap_columns(self) -> set[int]:
        """The empty column before each strip: a layout that drops unused columns keeps these."""
        return {strip.left - 1 for strip in self.strips}
