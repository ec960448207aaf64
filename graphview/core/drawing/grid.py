"""The grid a drawing is placed on: which cell each node holds, and which module each row holds.

A cell is a (layer, slot) pair: ``layer`` a row (:data:`~graphview.core.drawing.nodes.LAYER_HEIGHT`
apart), ``slot`` a column (:data:`~graphview.core.drawing.nodes.SLOT_WIDTH` apart). A cell whose
node autograd destroyed is free again for nodes born after that: the next training step's graph
is drawn where the last one was. :class:`~graphview.core.drawing.placement.Placement` decides where
a node goes and asks the grid what is free; the grid answers and records.

Pure Python, no Qt, no torch.
"""

from __future__ import annotations

from typing import Callable

from graphview.core.drawing.nodes import LAYER_HEIGHT, SLOT_WIDTH, DrawNode
from graphview.core.drawing.strips import GAP, UNBOUNDED, Strip, Strips, branch_owner, within

#: leaves that outlive a step's graph: the next step's graph is drawn around them again
_LASTING = frozenset({"param", "input", "input_grad"})
#: how many rows above its own :meth:`Grid.beside_models` looks at for the models' columns
_BESIDE_ROWS = 40
#: nodes a row of the layout counts as its module's (see Grid.put), and a module's weights
_ROW_KINDS = frozenset({"op", "intermediate"})
_WEIGHT_KINDS = frozenset({"param", "accumulate"})


def _holding(module: str | None) -> tuple[str, ...]:
    """``module`` and each module path holding it, innermost first (``a.b.c``, ``a.b``, ``a``)."""
    paths = []
    while module:
        paths.append(module)
        module = module.rpartition(".")[0]
    return tuple(paths)


class Grid:
    """The cells of a drawing's placed nodes, the modules of its rows, and their extent.

    ``dead_index``: when a node stopped being drawn (``None``: not yet), as
    :meth:`~graphview.core.drawing.lifetimes.Lifetimes.dead_index` says."""

    def __init__(self, nodes: dict[str, DrawNode], dead_index: Callable[[DrawNode], int | None]) -> None:
        self.nodes = nodes
        self.dead_index = dead_index
        self.order: list[str] = []  # node ids in placement order
        self._occupied: dict[int, dict[int, str]] = {}  # layer -> slot -> node id
        self._extent: list[int] | None = None  # the placed nodes' least and greatest slot and layer
        self._row_modules: dict[int, dict[str, list[str]]] = {}  # layer -> module path -> node ids
        self._model_weights: dict[str, list[str]] = {}  # a model's name (``teacher``) -> its weights' node ids
        self.strips = Strips()  # branches drawn beside the rest
        # module path (and each path holding it) -> the columns and rows its nodes took: left, top, right, bottom
        self._spans: dict[str, list[int]] = {}
        self._refused: set[str] = set()  # branches that found no room beside: they stay below
        self._holding: dict[str | None, tuple[str, ...]] = {}  # module path -> it and each path holding it

    def _free(self, taken: dict[int, str], slot: int, born: int) -> bool:
        """A slot is free if nobody had it, or its node was destroyed before ``born``."""
        occupant = taken.get(slot)
        if occupant is None:
            return True
        dead = self.dead_index(self.nodes[occupant])
        return dead is not None and dead <= born

    def put(self, node: DrawNode, layer: int, want: int, side: str | None = None, holds_row: bool = False) -> None:
        """Put ``node`` in row ``layer``, in the free slot nearest ``want`` among the columns its
        strip allows there (``side``: the module whose strip counts, if not the node's own).
        ``holds_row``: the row counts it as its module's whatever its kind (see below)."""
        taken = self._occupied.get(layer)
        if taken is None:
            taken = self._occupied[layer] = {}
        node_id, module, kind = node.id, node.module, node.kind
        strips = self.strips
        beside = strips.strips  # (most drawings: no strip, and every node placed asks)
        if beside:
            side = module if side is None else side
            low, high = strips.bounds(side, layer)
            want = min(max(want, low), high)
        slot = want
        if want in taken:
            if not beside:
                low, high = UNBOUNDED
            for distance in range(0, 100000):
                if want + distance <= high and self._free(taken, want + distance, node.born):
                    slot = want + distance
                    break
                if distance and want - distance >= low and self._free(taken, want - distance, node.born):
                    slot = want - distance
                    break
        taken[slot] = node_id
        node.layer, node.slot, node.placed = layer, slot, True
        extent = self._extent
        if extent is None:
            self._extent = [slot, layer, slot, layer]
        else:  # widened to hold the cell (inline: every node placed)
            if slot < extent[0]:
                extent[0] = slot
            elif slot > extent[2]:
                extent[2] = slot
            if layer < extent[1]:
                extent[1] = layer
            elif layer > extent[3]:
                extent[3] = layer
        # a row counts its ops, results and a module's weights (with their AccumulateGrad); not the
        # tensors without grad that only sit above their users: the script's inputs and what a module
        # makes without grad (GPT-2's position ids: read as the run streams in, they held the rows of
        # the first iteration's graph, and the second went below it). A tensor without grad is an
        # input until an edge made later says it was detached: counting those would make the
        # layout depend on how the run was read. Unless the placement says it holds its row: a
        # result of an op the script ran under no_grad, whose graph is made of such results alone
        if holds_row or kind in _ROW_KINDS or module is not None and kind in _WEIGHT_KINDS:
            self._track(node, layer, slot)
        if beside:
            strips.grew(side, layer)
        self.order.append(node_id)

    def free_column(self, layer: int, born: int, module: str | None = None) -> int:
        """The leftmost slot (from 0, or from the left of ``module``'s strip) with no live node in
        ``layer`` or any row below it: where the next training step's graph goes once the last one
        is destroyed, so repeated steps draw in the same place instead of drifting right."""
        rows = [(k, taken) for k, taken in self._occupied.items() if k >= layer]
        nodes = self.nodes
        start = max(0, self.strips.bounds(module, layer)[0])
        for slot in range(start, start + 100000):
            # a leaf (a parameter, an input) lives on from step to step just above where its user
            # was and will be again: below this row it keeps no column from the next step's graph
            # (which went two columns right at each step, past the second layer's weights)
            if all(self._free(taken, slot, born) or (k > layer and nodes[taken[slot]].kind in _LASTING)
                   for k, taken in rows):
                return slot
        return start

    def foreign_rows(self, top: int, bottom: int, module: str | None, born: int) -> bool:
        """Whether rows ``top..bottom`` hold live nodes of another module than ``module`` (see :meth:`foreign_row`)."""
        return self.foreign_row(top, bottom, module, born) is not None

    def foreign_row(self, top: int, bottom: int, module: str | None, born: int) -> int | None:
        """The first of rows ``top..bottom`` that holds live nodes of another module than ``module``
        (None: none does). Asked again of rows it looked at, with nothing placed meanwhile, it
        answers the same (what it forgets, nodes destroyed by ``born``, it would forget again).

        A box is drawn around its nodes: a node of any other module in one of its rows would look
        inside it (a residual ``add`` of a transformer layer inside its LayerNorm's box, when the
        norm's weights went in the add's row), so each row holds one module's nodes (or nodes
        outside every module) on each side of a strip's edge (:mod:`~graphview.core.drawing.strips`).
        Which nodes a row counts is in :meth:`put`. Live means not destroyed before ``born``; a row
        of a model whose weights live stays its own after its graph is freed: its next call comes
        back there (a distillation's student, drawn in the rows of the teacher's freed graph, sat
        inside the teacher's box at the next step)."""
        strips = self.strips
        beside = bool(strips.strips)  # (most drawings have no strip: every node is on one side)
        if beside:
            side = strips.side(module)
            own = strips.of(module)
            new = bool(module) and module not in self._spans
        row_modules = self._row_modules
        for layer in range(top, bottom + 1):
            if beside and strips.foreign(layer, module, new):
                return layer
            row = row_modules.get(layer)
            if not row or len(row) == 1 and module in row:  # (none, or only its own module's)
                continue
            for path, ids in list(row.items()):
                if module == path:
                    continue
                if beside and strips.side(path) != side:  # beside: in its own columns, unless it reaches into ours
                    theirs = strips.of(path)
                    if own is not None and (theirs is None or theirs.left < own.left) and self._reaches(ids, own, born):
                        return layer
                    continue
                live = [i for i in ids if not self.gone(i, born)]
                if live:
                    if len(live) != len(ids):
                        row[path] = live
                    return layer
                if self._model_lives(path, module, born):
                    return layer
                del row[path]
        return None

    def _reaches(self, ids: list[str], strip: Strip, born: int) -> bool:
        """Whether any of these live nodes (of another side) is in ``strip``'s columns or the gap before them."""
        return any(self.nodes[i].slot > strip.left - GAP and not self.gone(i, born) for i in ids)

    def _track(self, node: DrawNode, layer: int, slot: int) -> None:
        """Count ``node`` (in ``layer``, ``slot``) in its row as its module's (see :meth:`put`), and a
        model's weight as its model's; widen the span of its module and each module holding it. A
        module beside another that jumps down to read its output (a decoder's cross-attention, waiting
        for the encoder) holds the rows it jumped over on its side: nothing else starts there, inside its box."""
        module = node.module
        row = self._row_modules.get(layer)
        if row is None:
            row = self._row_modules[layer] = {}
        ids = row.get(module)
        if ids is None:
            row[module] = [node.id]
        else:
            ids.append(node.id)
        if node.kind == "param":
            self._model_weights.setdefault(module.partition(".")[0], []).append(node.id)
        paths = self._holding.get(module)
        if paths is None:
            paths = self._holding[module] = _holding(module)
        jumped = None
        spans = self._spans
        for path in paths:
            span = spans.get(path)
            if span is None:
                spans[path] = [slot, layer, slot, layer]
                continue
            if jumped is None and span[3] < layer - 1:
                jumped = (path, span[3])
            if slot < span[0]:  # widened to hold the cell (inline: every node a row counts)
                span[0] = slot
            elif slot > span[2]:
                span[2] = slot
            if layer < span[1]:
                span[1] = layer
            elif layer > span[3]:
                span[3] = layer
        if jumped is not None and self.strips.strips:
            path, last = jumped
            side = self.strips.side(path)
            for row in range(last + 1, layer):
                held = self._row_modules.setdefault(row, {})
                if all(self.strips.side(other) != side for other in held):
                    held.setdefault(path, []).append(node.id)

    def outside_boxes(self, layer: int, want: int, side: str | None, module: str | None) -> int:
        """The column nearest ``want`` in row ``layer`` for a tensor without grad of ``module`` (None:
        outside every module) drawn above its user: not inside the span of a module that does not
        hold it whose rows reach there (Whisper's sinusoid, made before the step,
        beside its encoder; Llama's rotary cos and sin beside the layer that reads them). ``side``:
        the module whose strip it goes in."""
        # a tensor of a module keeps a column from the others' spans, which may grow (its own box
        # is drawn around it); one outside every module only keeps out of them
        margin = 1 if module else 0
        taken = []
        for path, (left, top, right, bottom) in self._spans.items():
            if top <= layer <= bottom and not within(module, path):
                taken.append((left - margin, right + margin))
        low, high = self.strips.bounds(side, layer)
        want = min(max(want, low), high)
        if not taken:
            return want
        for distance in range(0, 100000):
            for slot in (want - distance, want + distance):
                if low <= slot <= high and not any(a <= slot <= b for a, b in taken):
                    return slot
        return want

    def open_beside(self, module: str | None, top: int, bottom: int, born: int) -> bool:
        """A new, independent computation of ``module`` whose rows ``top..bottom`` hold other
        modules' nodes: open a strip for its branch right of everything live from there down,
        when the box holding both sides holds everything in those rows (else it would be drawn
        around a stranger). Returns True when it opened one."""
        if not module:
            return False
        side = self.strips.side(module)
        others = {path for layer in range(top, bottom + 1) for path, ids in self._row_modules.get(layer, {}).items()
                  if path != module and self.strips.side(path) == side and any(not self.gone(i, born) for i in ids)}
        owner = branch_owner(module, others) if others else None
        if owner is None or owner == module or owner in self._refused or owner in self._spans \
                or any(s.owner == owner for s in self.strips.strips):
            # (a module with nodes drawn already is no new branch; one module alone, GPT-2's
            # position embedding beside its token embedding, stays in the rows below)
            return False
        holder = owner.rpartition(".")[0]
        start = min(top, self._spans[holder][1]) if holder in self._spans else top
        right = None
        for layer, taken in self._occupied.items():
            if layer < start:
                continue
            if holder and any(not within(path, holder) and any(not self.gone(i, born) for i in ids)
                              for path, ids in self._row_modules.get(layer, {}).items()):
                self._refused.add(owner)
                return False
            for slot, node_id in taken.items():
                if (right is None or slot > right) and not self.gone(node_id, born):
                    right = slot
        own = self.strips.of(module)
        left = max(right + GAP if right is not None else 0, own.left if own is not None else 0)
        self.strips.open(owner, left, top)
        return True

    def _model_lives(self, path: str | None, module: str | None, born: int) -> bool:
        """Whether ``path`` belongs to another model than ``module`` (its first name) whose weights
        are alive at ``born`` (the modules of one model take each other's freed rows, as a
        mixture of experts' routed experts do)."""
        if not path:
            return False
        root = path.partition(".")[0]
        if module is not None and module.partition(".")[0] == root:
            return False
        return any(not self.gone(i, born) for i in self._model_weights.get(root, ()))

    def gone(self, node_id: str, born: int) -> bool:
        dead = self.dead_index(self.nodes[node_id])
        return dead is not None and dead <= born

    def beside_models(self, row: int, slot: int, born: int, module: str | None = None) -> int:
        """The column for a tensor without grad from outside every module box (``module``: None, or
        ``""``, a model's own forward), in ``row`` above an op outside every box (a distillation's
        detached target above its loss, GPT-2's padded labels above its loss): right of the models
        whose nodes share the row (and the rows just above), whose boxes would hold it."""
        roots = {path.partition(".")[0] for path, ids in self._row_modules.get(row, {}).items()
                 if path is not None and path != module and any(not self.gone(i, born) for i in ids)}
        if not roots:
            return slot
        right = slot - 1
        for r in range(row - _BESIDE_ROWS, row + 1):
            for path, ids in self._row_modules.get(r, {}).items():
                if path is not None and path != module and path.partition(".")[0] in roots:
                    right = max([right] + [self.nodes[i].slot for i in ids if not self.gone(i, born)])
        return max(slot, right + 1)

    def above_weights(self, user: DrawNode, born: int) -> int:
        """The row for a tensor without grad from outside every module that ``user`` reads: above
        the rows just above it that hold only weights of ``user``'s model (the batch a model's first
        conv reads, BERT's ids into the word embeddings), where the model's boxes, drawn around
        those weights, do not hold it. Just above ``user`` where the model has ops there."""
        root = user.module.partition(".")[0]
        row = user.layer - 1
        for _ in range(4):
            live = [i for path, ids in self._row_modules.get(row, {}).items()
                    if path is not None and (path == root or path.startswith(root + ".")) for i in ids
                    if not self.gone(i, born)]
            if not live:
                return row
            if any(self.nodes[i].kind not in _WEIGHT_KINDS for i in live):
                break
            row -= 1
        return user.layer - 1

    def path_clear(self, source: DrawNode, target: DrawNode, half_width: float) -> bool:
        """Whether a straight line between two placed nodes keeps ``half_width`` (in scene units)
        away from every cell any node ever took in the rows between them; when it does not, the
        canvas routes the edge down a lane between columns instead."""
        top, bottom = (source, target) if source.layer < target.layer else (target, source)
        span = bottom.layer - top.layer
        for step in range(1, span):
            taken = self._occupied.get(top.layer + step)
            if not taken:
                continue
            x = top.x + (bottom.x - top.x) * step / span
            reach = int(half_width // SLOT_WIDTH) + 1
            centre = round(x / SLOT_WIDTH)
            for slot in range(centre - reach, centre + reach + 1):
                if slot in taken:
                    occupant = self.nodes[taken[slot]]
                    if abs(occupant.x - x) < half_width:
                        return False
        return True

    def bounds(self) -> tuple[float, float, float, float]:
        """Left, top, right, bottom of every placed node's centre (kept up to date as nodes are placed)."""
        extent = self._extent
        if extent is None:
            return 0.0, 0.0, 0.0, 0.0
        return extent[0] * SLOT_WIDTH, extent[1] * LAYER_HEIGHT, extent[2] * SLOT_WIDTH, extent[3] * LAYER_HEIGHT
