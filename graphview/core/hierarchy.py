"""The module hierarchy of a drawing: one box per ``nn.Module`` call, and the layout with some collapsed.

A big model does not read as a few thousand nodes; it reads as its modules, the way model
viewers show it: ``encoder.layers.0 · TransformerEncoderLayer`` as one box, opened when the user
wants its inside. :func:`module_boxes` finds the boxes of a :class:`~graphview.core.drawing.Drawing`
(every node it ever placed, so boxes do not change as the cursor moves), and :class:`Layout` lays
the drawing out again with some boxes collapsed: each collapsed box takes one cell, and the rows
and columns nothing uses any more go, so what is left keeps its order without the gaps.
:func:`levels_that_fit` picks how deep to open the hierarchy so the picture reads at fit.

Pure Python, no Qt, no torch.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Generator

from graphview.core.checkpoint_kept import kept_inputs
from graphview.core.drawing import LAYER_HEIGHT, SLOT_WIDTH, Drawing, unnamed_title
from graphview.core.drawing.placement import setup_end
from graphview.core.held import Held, held_by_nodes
from graphview.core.whatif import RECOMPUTE_MODULE


@dataclass(slots=True)
class ModuleBox:
    """The nodes of one call of one module path (a module called twice gets two boxes)."""

    key: str  # the path, or ``path#2`` for its second call
    path: str
    type: str | None  # the module's class name (``TransformerEncoderLayer``), where recorded
    members: set[str] = field(default_factory=set)  # node ids inside, nested modules' included
    top: int = 0  # first and last row
    bottom: int = 0
    level: int = 0  # boxes around it (0: outermost)
    parent: str | None = None  # key of the box just around it
    repeats: Repeats | None = None  # its inside is one block repeated (GPT-2's 12 GPT2Blocks)
    setup: bool = False  # not a module: a chain of no-grad tensors made before the first step

    @property
    def tensors(self) -> int:
        return len(self.members)

    @property
    def title(self) -> str:
        """Where it is: the path, or for a list of repeated blocks the range of their paths
        (``transformer.h.0-11``); inside a checkpoint's recompute, ``... (recomputed)``."""
        if self.setup:
            return "made before the step"
        path = self.path
        if self.repeats is not None and self.repeats.stem == path:
            path = self.repeats.span
        if path.startswith(RECOMPUTE_MODULE + "."):
            path = f"{path[len(RECOMPUTE_MODULE) + 1:]} (recomputed)"
        return path

    @property
    def kind(self) -> str | None:
        """What it is: the module's class name; for repeated blocks, theirs and how many
        (``GPT2Block ×12``, ``BertEncoder · BertLayer ×12``)."""
        if self.setup:
            return "buffers, without grad"
        repeats = self.repeats
        if repeats is None:
            return self.type
        blocks = f"{repeats.type} ×{len(repeats.keys)}"
        return blocks if self.type in CONTAINERS or repeats.stem == self.path else f"{self.type} · {blocks}"

    @property
    def shown_kind(self) -> str | None:
        """``kind`` where it says more than the title: a module called outside the model's tree
        (Hugging Face's loss) has its type for a path, ``CrossEntropyLoss``, said once."""
        kind = self.kind
        return kind if kind != self.title else None

    @property
    def label(self) -> str:
        """``encoder.layers.0 · TransformerEncoderLayer``: where it is and what it is; inside a
        checkpoint's recompute, ``encoder.layers.0 (recomputed) · TransformerEncoderLayer``;
        repeated blocks, ``transformer.h.0-11 · GPT2Block ×12``; ``CrossEntropyLoss`` alone."""
        kind = self.shown_kind
        return f"{self.title} · {kind}" if kind else self.title


#: module classes that only hold others: a box of repeated blocks is named by the blocks alone
CONTAINERS = (None, "Sequential", "ModuleList")


@dataclass(frozen=True, slots=True)
class Repeats:
    """The children of a box that are one block repeated: ``stem.first`` to ``stem.last``, each a
    call of the same class (GPT-2's ``transformer.h.0`` to ``transformer.h.11``, ResNet's
    ``layer1.0`` to ``layer1.2``). ``keys``: their boxes, in order."""

    stem: str
    first: int
    last: int
    type: str
    keys: tuple[str, ...]

    @property
    def span(self) -> str:
        return f"{self.stem}.{self.first}-{self.last}"


def module_boxes(drawing: Drawing) -> list[ModuleBox]:
    """Every box of ``drawing``, outermost first.

    A module's nodes split into calls where a row between them holds none of them but holds
    others in their columns (the layout stacks each call in rows of its own; a branch drawn beside
    another leaves rows empty where it waits for it). A box that would only repeat its single child's
    (``encoder`` > ``layers`` > ``0``, all the same nodes) is left out: the deepest that ran stands for it."""
    return module_boxes_of(drawing.nodes.values(), drawing.run.module_types, setup_end(drawing.run))


def module_boxes_of(nodes, types: dict[str, str], setup_before: int | None = None) -> list[ModuleBox]:
    """:func:`module_boxes` of ``nodes`` (DrawNodes), with ``types`` (module path -> class name,
    from the run's module_enter events). It reads only what placing a node fixed (its row, its
    module), so it may work on a copy of the node list while the drawing grows on.
    ``setup_before``: see :func:`setup_boxes`."""
    return run_through(module_boxes_in_steps(nodes, types, setup_before))


def module_boxes_in_steps(nodes, types: dict[str, str],
                          setup_before: int | None = None) -> Generator[None, None, list[ModuleBox]]:
    """:func:`module_boxes_of` a step at a time: it pauses (yields) after every :data:`STEP` or so
    nodes, rows or boxes looked at, so that the GUI thread can find a big drawing's boxes in
    slices of the event loop's turns; it returns the boxes."""
    nodes = list(nodes)
    rows, columns, slots = yield from _rows_and_columns(nodes)
    boxes = yield from _calls(rows, columns, slots, types)
    # boxes of the same nodes: one stands for all (grouped by rows and size first, then compared;
    # a frozenset of each box's members would copy the outermost, which holds every node)
    by_members: dict[tuple[int, int, int], list[list[ModuleBox]]] = {}
    found: list[list[ModuleBox]] = []  # the groups in the order their first box came
    for count, box in enumerate(boxes, 1):
        groups = by_members.setdefault((box.top, box.bottom, len(box.members)), [])
        same = next((group for group in groups if group[0].members == box.members), None)
        if same is None:
            groups.append([box])
            found.append(groups[-1])
        else:
            same.append(box)
        if count % BOXES_A_STEP == 0:
            yield
    # the deepest of them that ran (a ModuleList never does: BERT's encoder.layer stood for
    # BertEncoder as "encoder.layer · module")
    kept = [max(same, key=lambda b: (b.type is not None, b.path.count("."))) for same in found]
    if setup_before is not None:
        kept += setup_boxes(nodes, setup_before)
        yield
    yield from _nest(kept)
    kept.sort(key=lambda b: (b.level, b.top, b.key))
    _find_repeats(kept)
    return kept


#: nodes (rows, members) looked at between two pauses of a computation made in steps, and boxes
STEP, BOXES_A_STEP = 4096, 256


def run_through(steps: Generator):
    """What a computation made in steps (a generator) returns, run through without a pause."""
    try:
        while True:
            next(steps)
    except StopIteration as done:
        return done.value


def _rows_and_columns(nodes) -> Generator[None, None, tuple[dict, dict, dict]]:
    """For each module path (and each path holding it): its placed nodes by row, and the least
    and greatest column they take; for each row, the columns of every node placed there."""
    rows: dict[str, dict[int, list[str]]] = {}
    columns: dict[str, list[int]] = {}
    slots: dict[int, list[int]] = {}
    # module path -> (its nodes by row, its columns) and those of each path holding it, innermost
    # first: found once for each module (10^5 nodes, a few hundred modules)
    held: dict[str, list[tuple[dict, list]]] = {}
    for count, node in enumerate(nodes, 1):
        if count % STEP == 0:
            yield
        if not node.placed:
            continue
        layer, slot = node.layer, node.slot
        # (no empty list or dict made to be thrown away, as setdefault would: 10^5 nodes)
        in_row = slots.get(layer)
        if in_row is None:
            slots[layer] = [slot]
        else:
            in_row.append(slot)
        module = node.module
        if not module:
            continue
        tables = held.get(module)
        if tables is None:
            tables = held[module] = _tables_of(module, rows, columns, slot)
        for by_row, span in tables:
            ids = by_row.get(layer)
            if ids is None:
                by_row[layer] = [node.id]
            else:
                ids.append(node.id)
            if slot < span[0]:
                span[0] = slot
            elif slot > span[1]:
                span[1] = slot
    return rows, columns, slots


def _tables_of(module: str, rows: dict, columns: dict, slot: int) -> list[tuple[dict, list]]:
    """The nodes by row and the columns of ``module`` and of each path holding it (innermost first),
    made where a path has none yet (its columns from ``slot``, the column of its first node)."""
    tables = []
    path = module
    while path:
        by_row = rows.get(path)
        if by_row is None:
            by_row = rows[path] = {}
        span = columns.get(path)
        if span is None:
            span = columns[path] = [slot, slot]
        tables.append((by_row, span))
        path = path.rpartition(".")[0]
    return tables


def _calls(rows: dict, columns: dict, slots: dict, types: dict[str, str]) -> Generator[None, None, list[ModuleBox]]:
    """A box for each call of each module path (of two nodes or more). A call of a path ends where
    a call of the path holding it does: a list of blocks that never runs itself (``transformer.h``)
    has a call inside each call of its model, not one across a generation loop's four."""

    def apart(first: int, last: int, left: int, right: int) -> bool:
        """Whether rows first..last hold a node in columns left..right: a call ended there (rows
        with nothing in a branch's columns are where it waited for the branch beside it)."""
        return any(left <= c <= right for row in range(first, last + 1) for c in slots.get(row, ()))

    found: dict[str, list[ModuleBox]] = {}
    tops: dict[str, list[int]] = {}  # path -> the first row of each of its calls
    looked = 0
    for path in sorted(rows, key=lambda p: p.count(".")):  # (the path holding one first)
        by_row = rows[path]
        outer = tops.get(path.rpartition(".")[0])
        calls: list[ModuleBox] = []
        previous = within = None
        for layer in sorted(by_row):
            inside = bisect_right(outer, layer) if outer else None  # which call of the path holding it
            if previous is None or inside != within \
                    or layer - previous > 1 and apart(previous + 1, layer - 1, *columns[path]):
                key = path if not calls else f"{path}#{len(calls) + 1}"
                calls.append(ModuleBox(key, path, types.get(path), top=layer))
            members = by_row[layer]
            calls[-1].members.update(members)
            calls[-1].bottom = layer
            previous, within = layer, inside
            looked += len(members)
            if looked >= STEP:  # (the model's path holds every node: pauses inside it too)
                looked = 0
                yield
        tops[path] = [call.top for call in calls]
        found[path] = calls
    return [box for path in rows for box in found[path] if len(box.members) >= 2]


#: a chain of fewer no-grad tensors made before the step is drawn as it is
SETUP_AT_LEAST = 3


def setup_boxes(nodes, before: int) -> list[ModuleBox]:
    """Boxes for what a model's constructor computed without grad, before the first step
    (``before``): Whisper's sinusoidal positions (arange, mul, exp, sin, cos, cat), BERT's
    ``arange(...).expand``. Each connected chain of unnamed tensors made then outside any module,
    with the named tensor each builds (the buffer), is a box: shut, it is one card where a
    dozen nodes stood above the model."""
    early = {n.id: n for n in nodes if n.placed and n.module is None and n.born < before
             and n.kind in ("input", "detached")}
    members = {node_id for node_id, n in early.items() if unnamed_title(n.title)}
    for node_id, n in early.items():  # the buffer a chain builds: named, made from the chain alone
        if node_id not in members and n.preds and all(p in members for p in n.preds):
            members.add(node_id)
    # connected chains (union-find over the edges between members)
    root = {m: m for m in members}

    def find(m: str) -> str:
        while root[m] != m:
            root[m] = root[root[m]]
            m = root[m]
        return m

    for m in members:
        for p in early[m].preds:
            if p in members:
                root[find(p)] = find(m)
    chains: dict[str, set[str]] = {}
    for m in members:
        chains.setdefault(find(m), set()).add(m)
    boxes = []
    for chain in sorted(chains.values(), key=lambda c: min((early[m].layer, early[m].slot) for m in c)):
        if len(chain) < SETUP_AT_LEAST:
            continue
        rows = [early[m].layer for m in chain]
        key = "(setup)" if not boxes else f"(setup)#{len(boxes) + 1}"
        boxes.append(ModuleBox(key, "", None, set(chain), top=min(rows), bottom=max(rows), setup=True))
    return boxes


def _find_repeats(boxes: list[ModuleBox]) -> None:
    """Mark each box whose children are all calls of one class at consecutive indices of one
    list (``stem.0``, ``stem.1``, ...), two or more, as :class:`Repeats`: it reads as a stack of
    that block (``transformer.h.0-11 · GPT2Block ×12``) rather than as a module."""
    children: dict[str, list[ModuleBox]] = {}
    for box in boxes:  # (sorted by row: the children come in the order they ran)
        if box.parent is not None:
            children.setdefault(box.parent, []).append(box)
    keyed = {box.key: box for box in boxes}
    for key, inside in children.items():
        if len(inside) < 2 or inside[0].type is None or any(b.type != inside[0].type for b in inside):
            continue
        stem, _, first = inside[0].path.rpartition(".")
        if not stem or not first.isdigit():
            continue
        indices = []
        for b in inside:
            head, _, index = b.path.rpartition(".")
            if head != stem or not index.isdigit():
                break
            indices.append(int(index))
        else:
            if indices == list(range(indices[0], indices[0] + len(indices))):
                keyed[key].repeats = Repeats(stem, indices[0], indices[-1], inside[0].type,
                                             tuple(b.key for b in inside))


#: the kinds of drawn node that are autograd nodes (their saved tensors are what a box holds)
AUTOGRAD_KINDS = ("op", "accumulate")


def blocks_held(drawing: Drawing, box: ModuleBox, keyed: dict[str, ModuleBox], index: int,
                shown=None) -> list[tuple[ModuleBox, int, Held]]:
    """Each repeated block of ``box`` (see :class:`Repeats`): the block, how many autograd nodes it
    has and what their saved tensors hold after event ``index``. ``shown``: only these node ids
    count (what the canvas shows at the cursor); all of them when None."""
    if box.repeats is None:
        return []
    nodes = drawing.nodes
    blocks = []
    for key in box.repeats.keys:
        block = keyed.get(key)
        if block is None:
            continue
        ops = [nodes[m] for m in block.members
               if nodes[m].kind in AUTOGRAD_KINDS and (shown is None or m in shown)]
        held = box_held(drawing, block, index, [n.id for n in ops])
        blocks.append((block, sum(1 for n in ops if n.kind == "op"), held))
    return blocks


def box_held(drawing: Drawing, box: ModuleBox, index: int, shown=None) -> Held:
    """What ``box`` holds for backward after event ``index`` (its card's figure): the saved
    tensors of its autograd nodes (``shown``: only these node ids count; all when None) and what a
    checkpoint keeps for its call with no node of its own (:func:`kept_for_box`), each storage once."""
    nodes = drawing.nodes
    vids = {nodes[m].ref for m in (box.members if shown is None else shown) if nodes[m].kind in AUTOGRAD_KINDS}
    return held_by_nodes(drawing.run, vids, index, kept_for_box(drawing, box))


def kept_for_box(drawing: Drawing, box: ModuleBox) -> list:
    """The saved tensors a ``use_reentrant=False`` checkpoint keeps for the module call of ``box``
    or one inside it, which no autograd node holds (:func:`graphview.core.checkpoint_kept.kept_inputs`):
    what its box holds with its nodes' saved tensors, as a reentrant checkpoint's own node, inside
    the box, holds them."""
    path = box.path
    inside = path + "."
    return [saved for kept in kept_inputs(drawing.run)
            if kept.node is not None and (kept.path == path or kept.path.startswith(inside))
            and f"op{kept.node}" in box.members for saved in kept.saved]


def box_lifetimes(drawing: Drawing, boxes: list[ModuleBox]) -> dict[str, tuple[int, int | None]]:
    """For each box: (the first of its nodes' births, the last of their ends, or None while any
    end is not known yet). Outside that span none of its nodes is shown, so the box is not either:
    a long training run's canvas need not look at the boxes of the steps before and after the cursor."""
    return run_through(box_lifetimes_in_steps(drawing, boxes))


def box_lifetimes_in_steps(drawing: Drawing,
                           boxes: list[ModuleBox]) -> Generator[None, None, dict[str, tuple[int, int | None]]]:
    """:func:`box_lifetimes` a step at a time (see :func:`module_boxes_in_steps`)."""
    spans: dict[str, tuple[int, int | None]] = {}
    nodes = drawing.nodes
    # each node's end asked once: a node is a member of every box around it (a step's call of the
    # model, its block, the block's layer)
    ends: dict[str, int | None] = {}
    looked = 0
    for box in boxes:
        born, end = None, -1
        for member in box.members:
            node = nodes[member]
            if born is None or node.born < born:
                born = node.born
            if end is not None:
                dead = ends[member] if member in ends else ends.setdefault(member, drawing.dead_index(node))
                end = None if dead is None else max(end, dead)
            looked += 1
            if looked >= STEP:
                looked = 0
                yield
        spans[box.key] = (born, end)
    return spans


def _nest(boxes: list[ModuleBox]) -> Generator[None, None, None]:
    """Set each box's parent (the box of the nearest enclosing path whose rows hold it) and level, a step
    at a time (see :func:`module_boxes_in_steps`)."""
    by_path: dict[str, list[ModuleBox]] = {}
    for box in boxes:
        by_path.setdefault(box.path, []).append(box)
    for count, box in enumerate(boxes, 1):
        if count % BOXES_A_STEP == 0:
            yield
        path = box.path.rpartition(".")[0]
        while path and box.parent is None:
            for outer in by_path.get(path, ()):
                if outer.top <= box.top and box.bottom <= outer.bottom and box.members <= outer.members:
                    box.parent = outer.key
                    break
            path = path.rpartition(".")[0]
    keyed = {box.key: box for box in boxes}
    for box in boxes:
        level, parent = 0, box.parent
        while parent is not None:
            level += 1
            parent = keyed[parent].parent
        box.level = level


class Layout:
    """Cells of a drawing with the boxes in ``collapsed`` shut.

    ``cells`` maps each unit to its (row, column): a node outside every collapsed box, or the
    key of an outermost collapsed box (which takes the cell of its first computed node, see
    :meth:`entry`).
    ``hidden_by`` maps every node inside a collapsed box to that box's key. Rows and columns that
    no unit uses are dropped (but for columns the drawing itself left empty: between branches
    side by side, see :mod:`graphview.core.drawing.strips`); everything else keeps its order.
    With nothing collapsed, cells are the drawing's own.

    In an open stack of repeated blocks, the shut blocks but the one in ``focus`` (stack key ->
    the block's place in the stack; the first when not given) take one cell together, a run at a
    time: :attr:`runs` (see :func:`thin_stacks`), and :attr:`covered` are the boxes inside them.

    With ``keep`` (node ids), only those nodes (and the shut boxes holding any of them) have a
    cell, and the rows and columns the others leave empty are dropped as well: the leaves left at
    a run's end, without the room of the graph that was freed between them."""

    def __init__(self, drawing: Drawing, boxes: list[ModuleBox], collapsed: set[str],
                 focus: dict[str, int] | None = None, keep: frozenset[str] | None = None) -> None:
        self.drawing = drawing
        keyed = {box.key: box for box in boxes}
        self.runs = {run.key: run for run in thin_stacks(boxes, keyed, collapsed, focus or {})}
        in_runs = {key for run in self.runs.values() for key in run.repeats.keys}
        self.covered = {box.key for box in boxes if box.key in in_runs or self._inside_any(box, in_runs, keyed)}
        shut = [keyed[k] for k in collapsed if k in keyed and k not in in_runs]
        outermost = [b for b in shut if not self._inside_any(b, collapsed, keyed)] + list(self.runs.values())
        self.collapsed = {b.key for b in outermost}
        self.hidden_by: dict[str, str] = {}
        for box in outermost:
            for member in box.members:
                self.hidden_by[member] = box.key
        raw: dict[str, tuple[int, int]] = {}
        self.keep = keep
        for node in drawing.nodes.values():
            if node.placed and node.id not in self.hidden_by and (keep is None or node.id in keep):
                raw[node.id] = (node.layer, node.slot)
        for box in outermost:
            if keep is None or not keep.isdisjoint(box.members):
                first = self.entry(drawing, box)
                raw[box.key] = (first.layer, first.slot)
        if not self.collapsed and keep is None:
            self.cells = raw
        else:
            rows = sorted({r for r, _ in raw.values()})
            used = {c for _, c in raw.values()}
            # a column the drawing left empty stays (between branches side by side, beside a box:
            # the boxes around each side have room there); those emptied by shutting boxes go
            drawn = {node.slot for node in drawing.nodes.values() if node.placed} - drawing.gap_columns()
            cols = sorted(used | {c for c in range(min(used), max(used)) if c not in drawn} if used else used)
            base_row, base_col = rows[0] if rows else 0, cols[0] if cols else 0
            self.cells = {unit: (base_row + bisect_left(rows, r), base_col + bisect_left(cols, c))
                          for unit, (r, c) in raw.items()}
        self._occupied: dict[int, set[int]] = {}
        for r, c in self.cells.values():
            self._occupied.setdefault(r, set()).add(c)
        self._squares: tuple[tuple[int, float], dict] | None = None  # by_square's, worked out ahead

    @staticmethod
    def entry(drawing: Drawing, box: ModuleBox):
        """The node whose cell a shut box takes: its first computed node, top row, leftmost. Not
        a parameter: leaves sit just above their user, often above the box's own inputs, and a
        box drawn there would take its inputs' edges upwards."""
        nodes = [drawing.nodes[m] for m in box.members]
        computed = [n for n in nodes if n.kind not in ("param", "input", "input_grad", "accumulate")]
        return min(computed or nodes, key=lambda n: (n.layer, n.slot))

    @staticmethod
    def _inside_any(box: ModuleBox, collapsed: set[str], keyed: dict[str, ModuleBox]) -> bool:
        parent = box.parent
        while parent is not None:
            if parent in collapsed:
                return True
            parent = keyed[parent].parent
        return False

    def position(self, unit: str) -> tuple[float, float] | None:
        """Scene position (x, y) of a unit's centre; None for a node inside a collapsed box."""
        cell = self.cells.get(unit)
        if cell is None:
            return None
        return cell[1] * SLOT_WIDTH, cell[0] * LAYER_HEIGHT

    def by_square(self, node_ids: list[str], side: float) -> dict[tuple[int, int], list[str]]:
        """``node_ids`` by the square of side ``side`` (scene units) their :meth:`position` falls
        in (a node in a shut box: the box's), each square's in the order given; nodes without a
        cell are left out. The first answer for a list of some length may have been worked out
        ahead (on a thread, while the layout was made): it is handed out once, then worked out anew."""
        ahead, self._squares = self._squares, None
        if ahead is not None and ahead[0] == (len(node_ids), side):
            return ahead[1]
        cells, hidden = self.cells, self.hidden_by
        squares: dict[tuple[int, int], list[str]] = {}
        for node_id in node_ids:
            cell = cells.get(hidden.get(node_id, node_id))
            if cell is None:
                continue
            key = (int(cell[1] * SLOT_WIDTH // side), int(cell[0] * LAYER_HEIGHT // side))
            square = squares.get(key)
            if square is None:
                squares[key] = [node_id]
            else:
                square.append(node_id)
        return squares

    def work_out_squares(self, node_ids: list[str], side: float) -> None:
        """Work out :meth:`by_square` of ``node_ids`` now, for its first asker (a thread making
        the layout: the window then asks without the wait)."""
        self._squares = ((len(node_ids), side), self.by_square(node_ids, side))

    def size(self) -> tuple[int, int]:
        """Rows and columns the layout takes."""
        if not self.cells:
            return 0, 0
        rows = [r for r, _ in self.cells.values()]
        cols = [c for _, c in self.cells.values()]
        return max(rows) - min(rows) + 1, max(cols) - min(cols) + 1

    def path_clear(self, source: str, target: str, half_width: float) -> bool:
        """Whether a straight line between two units keeps ``half_width`` away from every cell
        taken in the rows between them (else the canvas routes the edge down a lane)."""
        a, b = self.cells.get(source), self.cells.get(target)
        if a is None or b is None:
            return False
        (top_row, top_col), (bottom_row, bottom_col) = (a, b) if a[0] < b[0] else (b, a)
        span = bottom_row - top_row
        for step in range(1, span):
            taken = self._occupied.get(top_row + step)
            if not taken:
                continue
            x = (top_col + (bottom_col - top_col) * step / span) * SLOT_WIDTH
            if any(abs(col * SLOT_WIDTH - x) < half_width for col in taken):
                return False
        return True


def thin_stacks(boxes: list[ModuleBox], keyed: dict[str, ModuleBox], collapsed: set[str],
                focus: dict[str, int]) -> list[ModuleBox]:
    """An open stack of repeated blocks opens one block at a time: the shut blocks before and
    after the one in ``focus`` (its place in the stack, the first by default) read as thin stacks,
    each one card with a bar per block (``transformer.h.1-11 · GPT2Block ×11``), not a column of
    eleven cards. Returns a box for each run of two or more such blocks, inside the stack."""
    runs = []
    for stack in boxes:
        if stack.repeats is None or stack.key in collapsed or Layout._inside_any(stack, collapsed, keyed):
            continue
        blocks = [keyed[key] for key in stack.repeats.keys if key in keyed]
        chosen = focus.get(stack.key, 0)
        current: list[ModuleBox] = []
        for place, block in enumerate(blocks + [None]):
            if block is not None and place != chosen and block.key in collapsed:
                current.append(block)
                continue
            if len(current) >= 2:
                runs.append(_run_of(stack, current))
            current = []
    return runs


def _run_of(stack: ModuleBox, blocks: list[ModuleBox]) -> ModuleBox:
    """The box of blocks ``blocks`` (consecutive ones of ``stack``) shut together."""
    stem = stack.repeats.stem
    first, last = (int(block.path.rpartition(".")[2]) for block in (blocks[0], blocks[-1]))
    members = set().union(*(block.members for block in blocks))
    return ModuleBox(f"{stack.key}/{first}-{last}", stem, blocks[0].type, members,
                     top=min(b.top for b in blocks), bottom=max(b.bottom for b in blocks), level=blocks[0].level,
                     parent=stack.key, repeats=Repeats(stem, first, last, blocks[0].type,
                                                       tuple(block.key for block in blocks)))


def collapsed_at_level(boxes: list[ModuleBox], level: int) -> set[str]:
    """The boxes to shut so the hierarchy shows down to ``level`` (boxes at ``level`` shut, and
    every box deeper, so opening one shows its children shut). A setup chain is shut at every
    level (double-click opens it)."""
    return {box.key for box in boxes if box.level >= level or box.setup}


def levels_that_fit(drawing: Drawing, boxes: list[ModuleBox], fits) -> set[str]:
    """The collapsed set a big graph opens with: the deepest level whose layout ``fits(rows,
    columns)`` (the caller knows the screen), else the outermost boxes shut. Nothing is shut
    when the whole drawing fits."""
    level = level_that_fits(drawing, boxes, fits)
    return {box.key for box in boxes if box.setup} if level is None else collapsed_at_level(boxes, level)


def level_that_fits(drawing: Drawing, boxes: list[ModuleBox], fits,
                    all_open: tuple[int, int] | None = None) -> int | None:
    """The level :func:`levels_that_fit` shuts the boxes at (None: none shut). ``all_open``: the
    size of the layout with every box open, where the caller has it."""
    if not boxes or fits(*(all_open or Layout(drawing, boxes, set()).size())):
        return None
    deepest = max(box.level for box in boxes)
    for level in range(deepest, 0, -1):
        if fits(*Layout(drawing, boxes, collapsed_at_level(boxes, level)).size()):
            return level
    return 0
