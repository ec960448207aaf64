"""Where each open module box's name goes (``BoxItems.place_labels`` asks): on its top border where
that is free, else under the names in its way inside its box, else on its bottom border where that
is free and a line clear of other names, else right of the names in its way."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QRectF

from graphview.qt.canvas.groups import GroupItem


class LabelPlaces:
    """Where each open box's name goes, clear of the names placed before it (:meth:`add`) and of
    what ``solid(rect)`` says is drawn there (nodes, shut cards); a name on a bottom border, a line
    clear of the names on ``open_boxes``' top borders too."""

    #: between a name and the name above it, stacked (scene units)
    STACK_GAP = 2.0
    #: between a name and the name left of it on one line (the inner box's dashed top border shows
    #: between them; at 6 units the two read as one line)
    SIDE_GAP = 16.0

    def __init__(self, solid: Callable[[QRectF], bool], open_boxes: list[GroupItem]) -> None:
        self.solid = solid
        # where each open box's name may go on its top border: from its left to its right corner
        self.tops = [(g, QRectF(g.rect.left() + 10, g.rect.top() - GroupItem.LABEL_H / 2, g.rect.width() - 20,
                                GroupItem.LABEL_H)) for g in open_boxes]
        self.bands: dict[int, list[QRectF]] = {}  # every label placed so far, by height
        self.band_h = 2 * GroupItem.LABEL_H

    def add(self, label: QRectF) -> None:
        for b in range(int(label.top() // self.band_h), int(label.bottom() // self.band_h) + 1):
            self.bands.setdefault(b, []).append(label)

    def near(self, rect: QRectF) -> list[QRectF]:
        first, last = int(rect.top() // self.band_h), int(rect.bottom() // self.band_h)
        return [r for b in range(first, last + 1) for r in self.bands.get(b, ())]

    def find(self, group: GroupItem, others: list[QRectF]) -> tuple[float, bool, float]:
        """(shift, below, drop) of ``group``'s name: on its top border where that is free; else
        under the names in the way, inside its box, where nothing is drawn; else on its bottom
        border (see below); else right of them."""
        shift = self.free_shift(group, False, others)
        if shift == 0:
            return 0.0, False, 0.0
        drop = self.free_drop(group, others)
        if drop is not None:
            return 0.0, False, drop
        # right of the names in the way, on their line, it reads as one with them (GPT-2's
        # "transformer.h.0.attn · GPT2Attention transformer.h.0.attn.c_attn · Conv1D", 16 units
        # apart): the bottom border, where that is free and clear of other names by a line; and
        # where moved right it would be cut short, where it has more room (a checkpoint's
        # recompute box and the module inside it start and end together)
        low = self.free_shift(group, True, others)
        bottom = group.label_rect(low, True, 0.0)
        if low == 0 or bottom.width() > group.label_rect(shift, False, 0.0).width():
            if bottom.width() >= min(group.label_width() + 10, 60) and not self.crowds(group, bottom, others):
                return low, True, 0.0
        return shift, False, 0.0

    def crowds(self, group: GroupItem, label: QRectF, others: list[QRectF]) -> bool:
        """Whether ``label``, on ``group``'s bottom border, comes within a line of another name above or
        below it (placed, or on another box's top border): a box just below, its name 2 units under
        this one, read as one two-line label ('model.0 · Linear · 0 B → 0 B activations' over
        'model.1 · ReLU', the MLP run again with retain_graph)."""
        near = label.adjusted(0, -GroupItem.LABEL_H, 0, GroupItem.LABEL_H)
        return bool(self._blocking(near, others)) or any(
            other is not group and place.intersects(near) for other, place in self.tops)

    def _blocking(self, label: QRectF, others: list[QRectF]) -> list[QRectF]:
        return [r for r in others + self.near(label) if r.intersects(label)]

    def free_shift(self, group: GroupItem, below: bool, others: list[QRectF]) -> float:
        shift = 0.0
        for _ in range(64):
            blocking = self._blocking(group.label_rect(shift, below, 0.0), others)
            if not blocking:
                break
            shift = max(r.right() for r in blocking) + self.SIDE_GAP - (group.rect.left() + 10)
        return shift

    def free_drop(self, group: GroupItem, others: list[QRectF]) -> float | None:
        """How far down its name goes to sit under the names in its way, whole and inside its box
        above its bottom border, on nothing drawn; None where there is no such place."""
        top = group.label_rect(0.0, False, 0.0).top()
        drop = 0.0
        for _ in range(8):
            label = group.label_rect(0.0, False, drop)
            if label.width() < min(group.label_width() + 10, 60) or label.bottom() > group.rect.bottom() - 10:
                return None
            blocking = self._blocking(label, others)
            if not blocking:
                return None if self.solid(label) else drop
            drop = max(r.bottom() for r in blocking) + self.STACK_GAP - top
        return None
