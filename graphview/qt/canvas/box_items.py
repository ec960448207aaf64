"""BoxItems: the module boxes drawn at the cursor: each box's item, its geometry and its label.

A plain part of :class:`~graphview.qt.canvas.module_boxes.ModuleBoxes`, reading which boxes there
are, which are shut and the layout from its :class:`~graphview.qt.canvas.box_state.BoxState`. An
open box is drawn around its nodes shown at the cursor; a shut one is one card where the layout
puts it, with what its nodes hold (a repeated stack: a bar per block, from
:func:`graphview.core.hierarchy.blocks_held`). Each item's click is connected to ``on_toggle``, a
method of that QObject (never of this part: see :mod:`graphview.qt.canvas.glide`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from typing import Callable

from PySide6.QtCore import QPointF, QRectF

from graphview.core.drawing import LAYER_HEIGHT
from graphview.core.held import Held
from graphview.core.hierarchy import ModuleBox, blocks_held, box_held
from graphview.qt.canvas.groups import GroupItem
from graphview.qt.canvas.label_places import LabelPlaces
from graphview.qt.canvas.nodes import ITEM_BOUNDS
from graphview.qt.canvas.style import NODE_H, NODE_W

#: boxes of more nodes than this (a big finished run, nothing shut) are measured from the scene's
#: arrays of births, deaths and places
MEASURED_IN_ARRAYS_ABOVE = 256


class BoxItems:
    """The items of one scene's module boxes."""

    def __init__(self, scene, state, on_toggle: Callable[[str], None]) -> None:
        self.scene = scene
        self.state = state  # the BoxState: boxes, keyed, spans, layout
        self.on_toggle = on_toggle
        self.groups: dict[str, GroupItem] = {}
        self.hidden_by: dict[str, GroupItem] = {}  # node id -> the shut box that hides it
        # module path -> (bytes in the earlier run, in this run) at backward: a what-if comparison
        self.compared: dict[str, tuple[int, int]] = {}
        self._running: str | None = None
        self._now: tuple | None = None  # (node id, op name) of the op at the cursor, in forward
        self._shown: set[str] = set()
        self._rows_of: dict[str, tuple] = {}  # box key -> (box, lifetimes' length, its nodes' rows there)
        self._op_births: dict[str, tuple] = {}  # box key -> (box, the birth of its first autograd node)
        self._runs_shown: set[str] = set()  # keys of the thin stacks (see Layout.runs) drawn last
        self._cards: dict[str, tuple] = {}  # shut box key -> what its card was last worked out from
        # the open boxes shown, by the top of their box, whose names the labels item draws
        self.named: list[GroupItem] = []
        self.named_tops: list[float] = []

    def reset(self) -> None:
        """A new run: no items (the scene removed the old ones)."""
        self.named, self.named_tops = [], []
        self._cards = {}
        self._rows_of = {}
        self._op_births = {}
        self._runs_shown = set()
        self.groups = {}
        self.hidden_by = {}

    def retarget(self, keyed: dict[str, ModuleBox]) -> None:
        """The boxes were found again: each item draws its box as found now."""
        for key, group in self.groups.items():
            if key in keyed:
                group.box = keyed[key]

    def set_compared(self, compared: dict[str, tuple[int, int]]) -> None:
        """Each box shows the activations held for it at backward in both runs (empty: no comparison)."""
        self.compared = dict(compared)
        for key, group in self.groups.items():
            group.set_compared(self._compared(key, group.path))
        # the names grew (or shrank) by their bytes: placed again, so that none runs into another
        self.place_labels([g for g in self.groups.values() if g.isVisible()])

    # ------------------------------------------------------------------ at the cursor
    def update(self, visible: set[str], index: int) -> dict[str, GroupItem]:
        """Show each box around its nodes shown at ``index`` (a shut one as one card holding
        them). Returns node id -> the shut box that hides it."""
        scene, state = self.scene, self.state
        layout = state.layout
        shut = layout.collapsed if layout is not None else set()
        self._look_at(index)
        self._shown = visible
        runs = list(layout.runs.values()) if layout is not None else []  # thin stacks of repeated blocks
        covered = layout.covered if layout is not None else set()
        buried = {box.key for box in state.boxes if box.key in covered or self._buried(box, shut)}
        hidden: dict[str, GroupItem] = {}
        shown: list[GroupItem] = []
        region = scene._region_bounds if scene.virtual and layout is None else None
        # (the scene's arrays of births, deaths and places say what is shown, as ``visible`` does)
        in_arrays = layout is None and scene.virtual and not scene.live
        for key in self._runs_shown - {run.key for run in runs}:  # thin stacks of an earlier layout
            self.groups[key].setVisible(False)
        self._runs_shown = {run.key for run in runs}
        for box in state.boxes + runs:
            group = self.groups.get(box.key)
            if self._away(box, index, region):
                # none of its nodes exists at the cursor, or (a big graph) it is far from the view
                if group is not None and group.isVisible():
                    group.setVisible(False)
                continue
            if in_arrays and len(box.members) > MEASURED_IN_ARRAYS_ABOVE:
                group = self._show_measured(box, group, index)
            else:
                members = [m for m in box.members if m in visible] if box.key not in buried else []
                group = self._show(box, group, members, box.key in shut, index, hidden)
            if group is not None:
                shown.append(group)
        self.place_labels(shown)
        self.hidden_by = hidden
        return hidden

    def _look_at(self, index: int) -> None:
        """What runs at ``index``: the autograd node the engine executes (its boxes light up), or
        in forward the op, by the autograd node it made (or its output, made without grad)."""
        run = self.scene.run
        ev = run.events[index] if run is not None and 0 <= index < len(run.events) else {}
        self._running = f"op{ev.get('vid')}" if ev.get("ev") in ("bw_node", "bw_node_done", "accumulate") else None
        self._now = None
        if ev.get("ev") == "op":
            self._now = (run.node_made_by(ev), ev.get("op"))

    def _away(self, box: ModuleBox, index: int, region) -> bool:
        """None of ``box``'s nodes exists at ``index``, or it is far from ``region`` (top, bottom)."""
        span = self.state.spans.get(box.key)
        if span is not None and (index < span[0] or (span[1] is not None and index >= span[1])):
            return True
        return region is not None and (box.bottom * LAYER_HEIGHT < region[1] or box.top * LAYER_HEIGHT > region[3])

    def _show_measured(self, box: ModuleBox, group: GroupItem | None, index: int) -> GroupItem | None:
        """A big finished run, nothing shut: which of ``box``'s nodes are shown, and where, at once."""
        count, extent = self.scene._lifetimes.shown_extent(self._rows(box), index)
        group = self._shown_or_hidden(box, group, count >= 2, shut=False)
        if group is not None:
            self._set_open(group, box, extent, count)
        return group

    def _shown_or_hidden(self, box: ModuleBox, group: GroupItem | None, shown: bool, shut: bool) -> GroupItem | None:
        """``box``'s item shown (made if need be), open or ``shut``; or, not ``shown``, hidden (None)."""
        if not shown:
            if group is not None:
                group.setVisible(False)
            return None
        group = self._group(box, group)
        group.collapsed = shut
        group.setVisible(True)
        return group

    def _show(self, box: ModuleBox, group: GroupItem | None, members: list[str], is_shut: bool, index: int,
              hidden: dict) -> GroupItem | None:
        """``box`` around ``members``, its nodes shown at ``index``; the item shown, or None."""
        items = self.scene.node_items
        if is_shut and members and index < self._first_op_born(box):
            # shut, and its module has not run yet at the cursor (its parameters exist already:
            # a card "0 ops" where the graph is to grow): nothing of it shows until it runs
            group = self._group(box, group)
            group.setVisible(False)
            for m in members:
                if m in items:
                    items[m].setVisible(False)
                hidden[m] = group  # (hidden by a box not shown: their edges are not either)
            return None
        group = self._shown_or_hidden(box, group, bool(members) if is_shut else len(members) >= 2, shut=is_shut)
        if group is None:
            return None
        if group.collapsed:
            self._show_shut(group, box, members, index, hidden)
        else:
            self._show_open(group, box, members)
        return group

    def _group(self, box: ModuleBox, group: GroupItem | None) -> GroupItem:
        """The item of ``box`` (``group``, or made now)."""
        if group is None:
            group = self.groups[box.key] = GroupItem(box)
            group.set_compared(self._compared(box.key, box.path))
            group.sigToggled.connect(self.on_toggle)
            self.scene.addItem(group)
        elif group.box is not box:  # (a thin stack is made again with each layout)
            group.box = box
        return group

    def _compared(self, key: str, path: str) -> tuple[int, int] | None:
        """A box's bytes in both runs (a thin stack of blocks has none of its own: its path is the stack's)."""
        return self.compared.get(path) if key in self.state.keyed else None

    def _first_op_born(self, box: ModuleBox) -> int:
        """The event the first autograd node of ``box`` is born at (-1: it has none, only leaves)."""
        known = self._op_births.get(box.key)
        if known is not None and known[0] is box:
            return known[1]
        nodes = self.scene.drawing.nodes
        born = min((nodes[m].born for m in box.members if nodes[m].kind == "op"), default=-1)
        self._op_births[box.key] = (box, born)
        return born

    def _rows(self, box: ModuleBox):
        """The rows of ``box``'s nodes in the scene's lifetimes (kept while the box and the
        number of nodes taken in stay the same)."""
        lifetimes = self.scene._lifetimes
        known = self._rows_of.get(box.key)
        if known is not None and known[0] is box and known[1] == len(lifetimes.ids):
            return known[2]
        rows = lifetimes.rows_of(box.members)
        self._rows_of[box.key] = (box, len(lifetimes.ids), rows)
        return rows

    def _buried(self, box: ModuleBox, shut: set[str]) -> bool:
        keyed = self.state.keyed
        parent = box.parent
        while parent is not None:
            if parent in shut:
                return True
            parent = keyed[parent].parent if parent in keyed else None
        return False

    # ------------------------------------------------------------------ geometry
    def _show_shut(self, group: GroupItem, box: ModuleBox, members: list[str], index: int, hidden: dict) -> None:
        scene = self.scene
        items = scene.node_items
        for m in members:
            if m in items:
                items[m].setVisible(False)
            hidden[m] = group
        run = scene.run
        layout = self.state.layout
        # what the card shows follows from these alone: when none changed since it was last worked
        # out, it stands as it is (the window's first fit shows the cards three times: shutting
        # the boxes, the cursor, the view's region; thousands of cards for a deep model)
        basis = (index, len(members), len(run.events) if run is not None else 0, self._running, self._now)
        last = self._cards.get(box.key)
        if last is not None and last[0] is box and last[1] is layout and last[2] == basis:
            return
        self._cards[box.key] = (box, layout, basis)
        drawing = scene.drawing
        x, y = layout.position(box.key)
        ops = [drawing.nodes[m] for m in members if drawing.nodes[m].kind in ("op", "accumulate")]
        if not ops:  # none now: destroyed by backward, or never made (a call under no_grad)
            group.made_graph = any(drawing.nodes[m].kind in ("op", "accumulate") for m in box.members)
        held = box_held(drawing, box, index, [n.id for n in ops]) if run is not None else Held()
        states = {n.id: (items[n.id].state if n.id in items else drawing.op_state(n.ref, index)) for n in ops}
        running = self._running is not None and self._running in states
        grad_fns = [n for n in ops if n.kind == "op"]
        freed = bool(grad_fns) and all(states[n.id] == "freed" for n in grad_fns)
        now = self._now[1] if self._now is not None and self._now[0] in members else None
        failed = drawing.failed_roots(index) if run is not None and run.errors else ()
        error = "error" in states.values() or bool(failed) and any(
            drawing.nodes[m].ref in failed for m in members if drawing.nodes[m].kind not in ("op", "accumulate"))
        group.set_box(QRectF(x - NODE_W / 2, y - NODE_H / 2, NODE_W, NODE_H), len(members),
                      len(grad_fns), held, running, freed, now, error)
        if box.repeats is not None:
            group.set_blocks(self._blocks(box, members, index))

    def _blocks(self, box: ModuleBox, members: list[str], index: int) -> tuple[tuple[str, int, int], ...]:
        """Each repeated block of ``box``: its title, its autograd nodes among ``members`` (those
        shown at ``index``) and the bytes of activations they hold there."""
        shown = set(members)
        return tuple((block.title, ops, held.activations)
                     for block, ops, held in blocks_held(self.scene.drawing, box, self.state.keyed, index, shown))

    def _show_open(self, group: GroupItem, box: ModuleBox, members: list[str]) -> None:
        scene = self.scene
        items = scene.node_items
        layout = self.state.layout
        points = []
        for m in members:
            inner = layout.hidden_by.get(m) if layout is not None else None
            if inner is not None:
                points.append(QPointF(*layout.position(inner)))
            elif m in items:
                points.append(items[m].pos())  # where it is now (it may be gliding)
            else:
                points.append(QPointF(*scene.place_of(m)))
        xs = [p.x() for p in points]
        ys = [p.y() for p in points]
        self._set_open(group, box, (min(xs), min(ys), max(xs), max(ys)), len(members))

    def _set_open(self, group: GroupItem, box: ModuleBox, extent: tuple[float, float, float, float],
                  count: int) -> None:
        """An open box drawn around ``count`` nodes whose centres span ``extent`` (left, top, right, bottom)."""
        left, top, right, bottom = extent
        rect = QRectF(left - NODE_W / 2, top - NODE_H / 2, right - left + NODE_W, bottom - top + NODE_H)
        # nested boxes step inwards; vertically they stay inside the gap between rows, so the
        # boxes of two modules one after the other (the layout stacks them) never overlap
        level = 3 - min(3, box.level)
        pad_x, pad_y = 10 + 7 * level, 6 + 5 * level
        running = self._running is not None and self._running in box.members and self._running in self._shown
        group.set_box(rect.adjusted(-pad_x, -pad_y, pad_x, pad_y), count, 0, None, running)

    # ------------------------------------------------------------------ labels
    def place_labels(self, groups: list[GroupItem]) -> None:
        """A nested box often starts on the same row as its parent: its name goes under the
        parent's, inside its own box, where no node is (a name beside the other on one line read as
        one: "model · Sequential model.0 · Linear"); where a node is in the way, on its bottom
        border (right of the parent's only where that is taken). A name moved past its own box's edge, or made longer by a comparison, must not
        run into another box's name either: each name goes under (else right of) every name
        already placed that it would cross (Whisper's ``model``, ``model.encoder`` and
        ``model.encoder.conv1`` start on one row)."""
        placed: dict[str, list[tuple[GroupItem, QRectF]]] = {}  # key -> its label
        places = LabelPlaces(lambda rect: self._solid_in(rect, groups), [g for g in groups if not g.collapsed])
        named: list[tuple[float, GroupItem]] = []  # every open box, by the middle of its name's height
        for group in sorted(groups, key=lambda g: (g.box.level, g.rect.left())):
            others = self._outer_labels(group, placed)
            shift, below, drop = (0.0, False, 0.0) if group.collapsed else places.find(group, others)
            spared = tuple(r for r in others if r.intersects(group.rect.adjusted(-1, -1, 1, 1)))
            if (shift, below, drop, spared) != (group.label_shift, group.label_below, group.label_drop, group.spared):
                group.prepareGeometryChange()
                group.label_shift, group.label_below, group.label_drop = shift, below, drop
                group.spared = spared
                group.update()
            label = group.label_rect()
            placed.setdefault(group.key, []).append((group, label))
            if not group.collapsed:
                named.append((label.center().y(), group))
                places.add(label)
        named.sort(key=lambda pair: pair[0])
        self.named = [group for _, group in named]
        # (no repaint of the labels item's whole area: a name that moved or came was in its box's
        # own update, which the view repaints with whatever item is drawn there, the names' too)
        self.named_tops = [middle for middle, _ in named]

    def _solid_in(self, rect: QRectF, groups: list[GroupItem]) -> bool:
        """Whether a node shown (with its badges) or a shut box's card is in ``rect``."""
        scene, layout = self.scene, self.state.layout
        inside = layout.hidden_by if layout is not None else {}
        reach = max(ITEM_BOUNDS.width(), ITEM_BOUNDS.height())
        for node_id in scene.ids_in(rect.adjusted(-reach, -reach, reach, reach)):
            place = scene.place_of(node_id) if node_id in self._shown and node_id not in inside else None
            if place is not None and ITEM_BOUNDS.translated(*place).intersects(rect):
                return True
        return any(g.collapsed and g.rect.intersects(rect) for g in groups)

    def named_between(self, top: float, bottom: float) -> list[GroupItem]:
        """The open boxes shown whose name's middle (on the top border, or the bottom one) is between
        ``top`` and ``bottom`` (scene y), as :meth:`place_labels` last found them."""
        return self.named[bisect_left(self.named_tops, top):bisect_right(self.named_tops, bottom)]

    def _outer_labels(self, group: GroupItem, placed: dict) -> list[QRectF]:
        """The labels placed of the boxes around ``group``'s whose boxes cross it."""
        keyed = self.state.keyed
        others = []
        parent = group.box.parent
        while parent is not None:
            others += [label for outer, label in placed.get(parent, ()) if outer.rect.intersects(group.rect)]
            parent = keyed[parent].parent if parent in keyed else None
        return others
