"""Placement: where each node of a drawing goes, decided once, when it appears.

The entry point is :class:`Placement`; a :class:`~graphview.core.drawing.builder.Drawing` makes a
node for each element of the run and hands it over (:meth:`Placement.arrive`), tells it of each
edge drawn (:meth:`Placement.meet`), and at the end of each update (while a run streams, also
before the first element past a leaf's wait) lets the leaves nobody used yet find their place
(:meth:`Placement.settle`). The cells themselves are kept by a
:class:`~graphview.core.drawing.grid.Grid`.

The rules, in the order they apply:

* **Stable.** A node is placed once and never moves when later nodes arrive, so a run that
  streams in grows downwards and rightwards without the picture jumping.
* **Rows follow the data.** A node's layer is one below its lowest placed predecessor; its slot
  is the free slot nearest to its predecessors' mean (:meth:`Placement._place`). A node with no
  placed predecessor (a new, independent computation) takes the leftmost column free in its row
  and every row below (:meth:`Grid.free_column`), so each training step's graph is drawn where
  the last one was once that one is destroyed.
* **Leaves wait for their user.** Parameters, inputs, their AccumulateGrad and ops fed only by
  those (``weight.t()``) are not placed when they appear (:meth:`Placement._waits`) but just above
  their first user (:meth:`Placement._place_above`), so a parameter sits next to the op that reads
  it instead of in a row at the top of a deep model. What nobody uses is placed late, or never
  (:meth:`Placement.settle`: scratch tensors of a model's constructor are not drawn).
* **Module boxes never overlap.** On each side of a strip's edge (below), a row holds one
  module's nodes (or nodes outside every module), so a node goes no higher than the rows where
  another module's live nodes sit, together with the leaves that wait above it
  (:meth:`Grid.foreign_rows`). So ``norm1`` ends before ``linear1`` begins, and the boxes drawn
  around each module's nodes are stacked, not interleaved. A tensor from outside every module
  goes above its model's weights (:meth:`Grid.above_weights`) or right of the models sharing its
  row (:meth:`Grid.beside_models`); a tensor without grad drawn above its user goes beside the
  boxes that do not hold it (:meth:`Grid.outside_boxes`).
* **Independent branches side by side.** A new, independent computation (nothing drawn feeds
  it but weights and inputs) whose rows hold another branch of a container module (Whisper's
  or T5's decoder after the encoder, CLIP's text tower after the vision tower) does not go below
  it: its branch gets a strip, the columns right of everything drawn from its rows down with an
  empty column between, starting at the top (:meth:`Grid.open_beside`,
  :mod:`~graphview.core.drawing.strips`). Where the branch later reads the other's output
  (cross-attention), it jumps down to there and holds the rows it jumped over. A strip opens once
  (the next step's branch goes back into it) and only when the box holding both sides holds
  everything in their rows; a single module (GPT-2's position embedding) stays below, and what
  starts after both sides (the head, the loss) starts below both.

Pure Python, no Qt, no torch.
"""

from __future__ import annotations

from typing import Callable

from graphview.core.drawing.grid import Grid
from graphview.core.drawing.nodes import DrawEdge, DrawNode, unnamed_title
from graphview.core.run import Run
from graphview.core.whatif import RECOMPUTE_MODULE

#: what is drawn above its first user, in its module's box by its name
_LEAF_KINDS = frozenset({"param", "accumulate", "input"})
#: what waits for its first user when it appears (see Placement._waits)
_DEFERRABLE = frozenset({"param", "input_grad", "input", "accumulate"})
#: what may take its name (and its module) when it is placed (see Placement._name_late)
_NAMED_LATE = frozenset({"param", "input", "detached"})
#: tensors drawn without a grad_fn of their own: leaves and tensors cut from a graph
_NO_GRAD_TENSORS = frozenset({"input", "input_grad", "detached"})
#: what a node read from before it may still start a branch beside: leaves, not computed tensors
_STARTS_BESIDE = frozenset({"param", "accumulate", "input", "input_grad", "detached"})
#: ops that only view a weight (``weight.t()`` of a tied head, read far below): no branch of their own
_WEIGHT_VIEWS = frozenset({"TBackward0", "TransposeBackward0", "PermuteBackward0", "ViewBackward0",
                           "ExpandBackward0", "UnsqueezeBackward0", "SqueezeBackward0", "SqueezeBackward1"})


def _weights_first(node: DrawNode) -> tuple[bool, bool]:
    """The order leaves waiting above a node are placed in: weights, a module's others, the rest."""
    return node.kind != "param", node.module is None


#: how far (in events) a streaming run's leaf nobody uses waits before it is drawn anyway
WAIT_EVENTS = 200
#: what a streaming run draws once nobody used it for that long, if the script named it (see Placement._shown_unused)
SHOWN_UNUSED_KINDS = frozenset({"input", "input_grad", "detached"})


def setup_end(run: Run) -> int | None:
    """The event a step script's first step starts at, or a plain script's first call of a
    module: what came before built the model (None: neither happened yet)."""
    if run.steps:
        return run.steps[0]["start"]
    entered = run.module_entered  # (in the order of the calls: the first call is its first value)
    return next(iter(entered.values())) if entered else None


def buffer_module(run: Run, tid: int) -> str | None:
    """The module whose buffer tensor ``tid`` is (``layer1.0.bn1.running_mean`` -> ``layer1.0.bn1``)."""
    info = run.tensors.get(tid) or {}
    if info.get("kind") != "buffer" or not info.get("name"):
        return None
    return info["name"].rpartition(".")[0] or None


def _ran_by(entered: dict[str, int], path: str, late: int) -> str | None:
    """Module ``path`` if it was entered by event ``late``, else the innermost module around it
    that was (see :meth:`Placement._module_that_ran`); the recompute of ``path`` where only that
    ran by then: a weight of a module a reentrant checkpoint runs is first used by its recompute
    in backward (the forward's call made no node: torch ran it under no_grad)."""
    first = entered.get(path)
    if first is not None and first <= late:  # (most leaves: their module ran; 10^4-10^5 in a big drawing)
        return path or None
    if entered.get(path, late + 1) > late and entered.get(f"{RECOMPUTE_MODULE}.{path}", late + 1) <= late:
        return f"{RECOMPUTE_MODULE}.{path}"
    while path and entered.get(path, late + 1) > late:
        path = path.rpartition(".")[0]
    return path or None


def made_without_grad(run: Run, node: DrawNode) -> bool:
    """Whether ``node`` is a tensor an op made from drawn tensors under ``no_grad`` (or
    ``inference_mode``) once the model was built: in a generation loop every node is one, and its
    rows are its module's as an op's are (:meth:`Grid.put`), so module boxes do not overlap there either."""
    if node.kind != "detached" or not node.preds:
        return False
    producer = run.producers.get(node.ref)
    if producer is None or producer.get("mode", "grad") == "grad":
        return False
    end = setup_end(run)
    return end is None or node.born >= end


def _leaf(nodes: dict[str, DrawNode], node: DrawNode) -> bool:
    """Whether ``node`` is a leaf nothing drawn feeds: it goes just above its first user."""
    return node.kind in _DEFERRABLE and not any(p in nodes for p in node.preds)


class _Above:
    """The nodes the end of a run places just above their first user (which waits to be placed
    too) rather than for themselves (see :meth:`Placement.settle`): a leaf nothing drawn feeds (a
    weight, an input), as when an op of a graph reads it; or, under no_grad, a tensor made from
    unnamed ones (``arange``) and weights drawn already: the position ids a generation loop's model
    makes at each call. Placed for themselves, all of them went to the top of the drawing, in the
    rows of the model's first call: its weights in a row above every block, a later call's position
    embedding just below the weight it reads, far from its user."""

    def __init__(self, run: Run, nodes: dict[str, DrawNode], out: dict[str, list[DrawEdge]]) -> None:
        self.run, self.nodes, self.out = run, nodes, out
        self.ids: set[str] = set()
        self.made: set[str] = set()  # of those, unnamed leaves and what is made from them alone

    def __contains__(self, node_id: str) -> bool:
        return node_id in self.ids

    def clear(self) -> None:
        self.ids.clear()
        self.made.clear()

    def take(self, node: DrawNode) -> bool:
        """Whether ``node`` (waiting to be placed at the end) goes above its first user: kept if so."""
        nodes = self.nodes
        if not any(e.target in nodes and not nodes[e.target].placed for e in self.out.get(node.id, ())):
            return False  # no user waits
        preds = [p for p in node.preds if p in nodes]
        if _leaf(nodes, node):
            if unnamed_title(node.title):
                self.made.add(node.id)
        elif not (made_without_grad(self.run, node) and any(p in self.made for p in preds)
                  and all(p in self.made or nodes[p].placed and nodes[p].kind in _DEFERRABLE for p in preds)):
            return False
        else:
            self.made.add(node.id)
        self.ids.add(node.id)
        return True


class Placement:
    """Places the nodes of one drawing on its :class:`Grid`.

    ``nodes`` and ``out`` (node id -> edges leaving it) are the drawing's own tables, shared, not
    copied; ``dead_index`` says when a node stopped being drawn (its cell is free after that)."""

    def __init__(self, run: Run, nodes: dict[str, DrawNode], out: dict[str, list[DrawEdge]],
                 dead_index: Callable[[DrawNode], int | None]) -> None:
        self.run = run
        self.nodes = nodes
        self.out = out
        self.grid = Grid(nodes, dead_index)
        self.order = self.grid.order  # node ids in placement order
        self._deferred: list[str] = []  # leaves (and the like) waiting for their first user
        self._above = _Above(run, nodes, out)  # of those, the ones the end of a run places above their user

    # ------------------------------------------------------------------ entry points
    def arrive(self, node: DrawNode) -> None:
        """A node just drawn, with its edges from what was drawn before it: placed now, or, for
        leaves, their AccumulateGrad and ops fed only by those (``weight.t()``), once its first user is."""
        if self._waits(node):
            self._deferred.append(node.id)
        else:
            self._place(node)

    def meet(self, source: DrawNode, target: DrawNode | None) -> None:
        """An edge from ``source``, not placed yet, to ``target`` is drawn: a leaf seen first as
        a placed op's input goes just above it."""
        if target is not None and target.placed and not self._history(source, target):
            self._place_above(source, target)

    def settle(self, final: bool, patient: bool, now: int) -> None:
        """Place the waiting nodes whose wait is over, at event ``now`` of the run (how far the
        drawing has read it): all of them once the run is ``final``; while it streams, a tensor the
        script named that nobody used for a while (where the script is then). ``patient`` (a trace
        being read, whose end is sure to come): nothing is placed before the end. Unnamed tensors
        nobody uses are not placed (unless something uses them later: then above their user)."""
        horizon = now - WAIT_EVENTS if not patient else -1
        still, users_first = [], []
        for node_id in self._deferred:
            node = self.nodes[node_id]
            if node.placed:
                continue
            if final or node.born < horizon and self._shown_unused(node):
                if self._unused_constant(node) or final and self._scratch(node):
                    continue  # not drawn unless something uses it later (then it goes above its user)
                if self._above.take(node):
                    users_first.append(node)  # goes above its first user, placed below
                    continue
                self._place_chain(node)
            else:
                still.append(node_id)
        for node in users_first:  # (a user that was not placed after all: as before)
            if not node.placed:
                self._place_chain(node)
        self._above.clear()
        self._deferred = still

    # ------------------------------------------------------------------ which nodes wait
    def _shown_unused(self, node: DrawNode) -> bool:
        """Whether a leaf nobody has used for a while is drawn anyway while the run streams (where the
        script is then): a tensor the script made and named (``x = torch.randn(...)``) is news. A model's weights
        and buffers, their AccumulateGrad and ``weight.t()`` wait for their user however long it takes
        (a decoder's weights, made in the constructor, are first used far into the step): drawn early,
        they would sit in the encoder's rows and split every module box around them."""
        if node.kind not in SHOWN_UNUSED_KINDS or not self.run.tensor_name(node.ref):
            return False  # unnamed: maybe a buffer, named at its model's first call, or scratch
        info = self.run.tensors.get(node.ref)
        return info is None or info.get("kind") not in ("buffer", "param")  # (a weight without grad too)

    def _unused_constant(self, node: DrawNode) -> bool:
        """An unnamed tensor nothing recorded uses: the scratch tensors a model's constructor
        makes (``torch.empty`` before it becomes a Parameter, a Parameter that weight tying
        replaced). A real model makes dozens; drawn, they would be a row of noise as wide as
        the model. A parameter of a model, or a tensor in a variable, has a name and stays (the
        name the run has now: a variable is named a few events after its tensor is made, and a
        node made in between kept the title "tensor")."""
        return (node.kind in ("input", "param") and unnamed_title(node.title) and not node.preds
                and not self.out.get(node.id) and not self.run.tensor_name(node.ref))

    def _scratch(self, node: DrawNode) -> bool:
        """An unnamed tensor (or a model's buffer) nothing drawn has used, whose no-grad offspring
        (``.data``, ``pad`` of it) reach no op and no tensor the script named: what a model's
        constructor made and threw away (BERT's bias before weight tying replaced it, a view of a
        weight it zeroed, Llama's ``original_inv_freq``; how it made a buffer that is drawn, see
        :meth:`_history`), and graphview's own read of a step's loss (made outside the script: no
        line). Asked at the run's end, when nothing can use it any more."""
        todo, seen = [node], {node.id}
        while todo:
            current = todo.pop()
            if current.kind in ("op", "accumulate") or len(seen) > 64:
                return False
            if self.run.tensor_name(current.ref) and (self.run.tensors.get(current.ref) or {}).get("kind") != "buffer":
                return False  # named by the script (a buffer nothing reads is the model's, not news)
            if current.line is not None and not self._before_first_step(current.born) and \
                    any(self.nodes[p].placed for p in current.preds if p in self.nodes):
                return False  # made in the script from something drawn: a backward's seed, w.detach() for numpy
            for edge in self.out.get(current.id, ()):
                target = self.nodes.get(edge.target)
                if target is not None and target.id not in seen:
                    if target.placed:
                        if self._history(current, target):
                            continue  # how the constructor made a buffer drawn: not a use
                        return False
                    seen.add(target.id)
                    todo.append(target)
        return True

    def _before_first_step(self, index: int) -> bool:
        """Whether event ``index`` comes before a step script's first step, or a plain script's
        first call of a module: its model being built."""
        end = setup_end(self.run)
        return end is not None and index < end

    def _waits(self, node: DrawNode) -> bool:
        """Leaves, their AccumulateGrad, and ops fed only by those (``weight.t()``) wait for a user;
        so does an unnamed tensor a model's constructor makes (BERT's view of its zeroed padding row):
        drawn only if something uses it (see :meth:`_scratch`)."""
        if node.kind == "accumulate":
            return True
        if node.kind in ("input", "input_grad", "detached") and unnamed_title(node.title) \
                and self._before_first_step(node.born):
            return True
        nodes = self.nodes
        preds = []
        for p in node.preds:
            pred = nodes.get(p)
            if pred is not None:
                if pred.placed:
                    return False
                preds.append(pred)
        if not preds:
            return node.kind in _DEFERRABLE
        return node.kind == "op" and all(p.kind == "accumulate" for p in preds)

    # ------------------------------------------------------------------ where a node goes
    def _name_late(self, node: DrawNode) -> None:
        """A parameter or buffer drawn before it had a name (a model's parameters exist from its constructor,
        and a model that initialises them there is recorded doing it; they are named at the model's
        first call) takes its name, and with it its module, when it is placed: the module box of
        ``bert.encoder.layer.0.attention.self.query`` then holds its weight."""
        if node.module is not None or node.kind not in _NAMED_LATE:
            return
        name = self.run.tensor_name(node.ref)
        if name:
            # unnamed when made: "tensor", "output of uniform_", or "... (v2)" (the canvas may have
            # shown the name already)
            if unnamed_title(node.title):
                node.title = name + (node.title[node.title.index(" (v"):] if " (v" in node.title else "")
            node.module = ((name.rpartition(".")[0] or None) if node.kind == "param"
                           else buffer_module(self.run, node.ref))

    def _module_that_ran(self, node: DrawNode, at: int | None) -> None:
        """A leaf's box is the module its name says (``...out_proj.weight`` is ``...out_proj``'s)
        only if that module has run by ``at``, where the leaf is first used (``None``: by now):
        MultiheadAttention reads ``out_proj.weight`` in its own code and never calls ``out_proj``,
        whose box then held the weight and, drawn around it, the attention ops beside it. The
        leaf goes to the innermost enclosing module that ran (``self_attn``)."""
        path = node.module
        entered = self.run.module_entered
        if path is None or not entered:
            return  # (a run that records no module calls: boxes by name alone)
        node.module = _ran_by(entered, path, len(self.run.events) if at is None else at)

    def _place(self, node: DrawNode) -> None:
        kind = node.kind
        if node.module is None and kind in _NAMED_LATE:
            self._name_late(node)  # its module decides which rows it may take
        if kind in _LEAF_KINDS:
            self._module_that_ran(node, None)  # not used yet: where its module is, if it ran
        nodes = self.nodes
        placed, waiting = [], []
        for p in node.preds:
            pred = nodes.get(p)
            if pred is not None:
                (placed if pred.placed else waiting).append(pred)
        if len(placed) == 1:  # (most nodes: one input drawn)
            layer, want = placed[0].layer + 1, placed[0].slot
        elif placed:
            layer = max(p.layer for p in placed) + 1
            want = round(sum(p.slot for p in placed) / len(placed))
        else:
            layer = 2 if waiting else 0
            want = None  # a new, independent computation: the leftmost column free below
        if waiting:
            layer = max(layer, self._chain_floor(node))  # (a node with no waiting pred has no chain)
        reach = 1 + max(map(self._chain_depth, waiting)) if waiting else 1  # rows it and its leaves take
        # a new, independent computation (nothing drawn before feeds it but weights and inputs) may
        # start a branch beside what holds its rows (Whisper's decoder beside its encoder): asked
        # once, where its rows are another module's
        beside = None
        grid, module, born = self.grid, node.module, node.born
        # (below the drawing's last row nothing is foreign: this ends; a cap on the rows walked left a
        # node that reads a tensor from a thousand rows up inside another module's box)
        while (foreign := grid.foreign_row(layer - reach + 1, layer, module, born)) is not None:
            if beside is None:
                beside = all(p.kind in _STARTS_BESIDE for p in placed) and node.title not in _WEIGHT_VIEWS
            if beside:
                beside = False
                if grid.open_beside(module, layer - reach + 1, layer, born):
                    want = None  # the leftmost column free in its strip
                    continue
            # (every window of rows that holds the foreign row is foreign too: the next to ask starts below it)
            layer = foreign + reach
        if want is None:
            want = grid.free_column(layer, born, module)
        grid.put(node, layer, want, holds_row=kind == "detached" and made_without_grad(self.run, node))
        if waiting:
            for pred in waiting:
                if pred.module is None and pred.kind in _NAMED_LATE:
                    self._name_late(pred)
            # lazily placed leaves (and their AccumulateGrad) go just above: weights first, then the
            # rest of a module's, so that a tensor without grad from another module (or from none)
            # then keeps out of their box (outside_boxes)
            for pred in sorted(waiting, key=_weights_first) if len(waiting) > 1 else waiting:
                self._place_above(pred, node)

    def _chain_floor(self, node: DrawNode) -> int:
        """The highest row ``node`` may take so that every leaf chain waiting above it still sits
        below what is already placed above the chain (the next step's AccumulateGrad goes under
        the parameter drawn in step 1, not beside it).

        Each chain is walked up on its own where it is a chain (a weight, its AccumulateGrad,
        weight.t(): each waits on one other at most); where one branches, :meth:`_branching_floor`
        walks them all. A node already on the path (a cycle, which autograd never makes and the
        trace reader refuses) is not walked again."""
        nodes = self.nodes
        floor = 0
        for first in node.preds:
            current = nodes.get(first)
            if current is None or current.placed or first == node.id \
                    or current.kind in _NO_GRAD_TENSORS and self._history(current, node):
                continue  # (a placed one is no chain: it counts from a node one row up at least)
            depth, path = 1, {node.id, first}
            while current is not None:
                up = None
                for pred_id in current.preds:
                    pred = nodes.get(pred_id)
                    if pred is None:
                        continue
                    if pred.placed:
                        floor = max(floor, pred.layer + depth + 1)
                    elif pred_id not in path and not (pred.kind in _NO_GRAD_TENSORS and self._history(pred, current)):
                        if up is not None:
                            return self._branching_floor(node)
                        up = pred
                current = up
                if up is not None:
                    depth += 1
                    path.add(up.id)
        return floor

    def _branching_floor(self, node: DrawNode) -> int:
        """:meth:`_chain_floor` of chains that branch: a walk up them with a stack of its own (a trace
        decides how long a chain is), each node at each distance walked once, none on the path again."""
        nodes = self.nodes
        floor = 0
        stack = [(node, 0, iter(node.preds))]
        path = {node.id}
        walked = set()
        while stack:
            current, depth, preds = stack[-1]
            for pred_id in preds:
                pred = nodes.get(pred_id)
                if pred is None:
                    continue
                if pred.placed:
                    if depth:
                        floor = max(floor, pred.layer + depth + 1)
                elif pred_id not in path and (pred_id, depth + 1) not in walked \
                        and not (pred.kind in _NO_GRAD_TENSORS and self._history(pred, current)):
                    walked.add((pred_id, depth + 1))
                    path.add(pred_id)
                    stack.append((pred, depth + 1, iter(pred.preds)))
                    break
            else:
                stack.pop()
                path.discard(current.id)
        return floor

    def _chain_depth(self, node: DrawNode) -> int:
        """Rows a waiting leaf chain takes above its user (a leaf, its AccumulateGrad, ``weight.t()``):
        1 and the most of its waiting predecessors'. Walked with a stack of its own, each node once; a
        predecessor already on the path (a cycle) counts nothing."""
        waiting = self._waiting_above
        # a chain (each node waits on one other at most: a leaf, its AccumulateGrad, weight.t()) is
        # counted on the way up; where a node waits on two, the walk below counts them all
        rows, current, on_path = 1, node, {node.id}
        while True:
            preds = waiting(current)
            if not preds or len(preds) == 1 and preds[0].id in on_path:  # (a cycle counts nothing)
                return rows
            if len(preds) > 1:
                break
            current = preds[0]
            on_path.add(current.id)
            rows += 1
        depth: dict[str, int] = {}
        most = {node.id: 0}  # node -> the most rows of its waiting predecessors' chains found so far
        stack = [(node, iter(waiting(node)))]
        while stack:
            current, preds = stack[-1]
            for pred in preds:
                if pred.id in most and pred.id not in depth:
                    continue  # on the path: a cycle
                if pred.id in depth:
                    most[current.id] = max(most[current.id], depth[pred.id])
                    continue
                most[pred.id] = 0
                stack.append((pred, iter(waiting(pred))))
                break
            else:
                stack.pop()
                depth[current.id] = 1 + most[current.id]
                if stack:
                    parent = stack[-1][0].id
                    most[parent] = max(most[parent], depth[current.id])
        return depth[node.id]

    def _waiting_above(self, node: DrawNode) -> list[DrawNode]:
        """The predecessors of ``node`` not placed yet that go above it (not how a constructor made it)."""
        return [pred for pred in map(self.nodes.get, node.preds) if pred is not None and not pred.placed
                and not (pred.kind in _NO_GRAD_TENSORS and self._history(pred, node))]

    def _place_chain(self, node: DrawNode) -> None:
        """``node``, after its predecessors not placed yet (and theirs, first): a walk with a stack of
        its own (a trace decides how long a chain is); a predecessor already on the path (a cycle)
        is not walked again."""
        nodes = self.nodes
        stack = [(node, iter(node.preds))]
        seen = {node.id}
        while stack:
            current, preds = stack[-1]
            for pred_id in preds:
                pred = nodes.get(pred_id)
                if pred is not None and not pred.placed and pred_id not in seen \
                        and pred_id not in self._above and not _leaf(nodes, pred):
                    seen.add(pred_id)
                    stack.append((pred, iter(pred.preds)))
                    break
            else:
                stack.pop()
                if not current.placed:
                    self._place(current)

    def _place_above(self, node: DrawNode, user: DrawNode) -> None:
        """``node`` just above ``user``, then its predecessors not placed yet above it, and theirs
        above them, depth first: a walk with a stack of its own (a trace decides how long a chain is)."""
        if node.placed:
            return
        self._put_above(node, user)
        nodes = self.nodes
        stack = [(node, iter(node.preds))]
        while stack:
            current, preds = stack[-1]
            for pred_id in preds:
                pred = nodes.get(pred_id)
                if pred is not None and not pred.placed \
                        and not (pred.kind in _NO_GRAD_TENSORS and self._history(pred, current)):
                    self._put_above(pred, current)
                    stack.append((pred, iter(pred.preds)))
                    break
            else:
                stack.pop()

    def _put_above(self, node: DrawNode, user: DrawNode) -> None:
        kind = node.kind
        if node.module is None and kind in _NAMED_LATE:
            self._name_late(node)
        if kind in _LEAF_KINDS:
            self._module_that_ran(node, user.born)
        row, slot = user.layer - 1, user.slot
        side = None
        if kind in _NO_GRAD_TENSORS:
            if not node.module:  # outside every module box
                side = user.module  # in its user's strip
                if user.module:  # (the model's own forward, path "", makes a decoder's ids)
                    row = self.grid.above_weights(user, node.born)
                elif not user.module:  # (a model's own forward, path "": GPT-2's loss pads its labels)
                    slot = self.grid.beside_models(row, slot, node.born, node.module)
            slot = self.grid.outside_boxes(row, slot, side if side is not None else node.module, node.module)
        # its rows are its module's only where the end of a run put it above its user (the position ids
        # of a generation loop's call, _Above). Not in a chain walked up from an op that reads a no-grad
        # result (a script that generates under no_grad, then runs its model with grad on what it made):
        # placed upwards row by row, each tensor held its row, and the next, of another module, went
        # beside all of them (outside_boxes), a generation of 3 tokens 42 columns wide
        self.grid.put(node, row, slot, side, node.id in self._above.ids and made_without_grad(self.run, node))

    def _history(self, pred: DrawNode, node: DrawNode) -> bool:
        """Whether ``pred`` is only how a model's constructor made ``node``, a buffer: both tensors
        without grad made before the model's first call, ``pred`` unnamed (Llama's rotary ``inv_freq`` is
        ``1 / base ** (arange(...) / dim)``, BERT's ``position_ids`` an ``arange(...).expand``): not
        drawn above the buffer it made, unless something else uses it. (False for a ``pred`` of any kind
        but :data:`_NO_GRAD_TENSORS`: the walks up a chain, 10^5 steps in a big drawing, test that first.)"""
        return (pred.kind in _NO_GRAD_TENSORS and node.kind in _NO_GRAD_TENSORS and unnamed_title(pred.title)
                and self._before_first_step(node.born)
                and (self.run.tensors.get(node.ref) or {}).get("kind") == "buffer")
