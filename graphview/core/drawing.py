"""What the canvas draws, and where: a layered drawing of a run's autograd graph.

The drawing reads forward, top to bottom: leaf tensors, then the ops that use them, down to
the loss. Arrows follow the forward data flow (the reverse of ``next_functions``), so backward
runs bottom to top along them.

Positions are **stable**: a node is placed once, when it first appears, and never moves when
later nodes arrive. Its layer is one below its lowest placed predecessor; its slot is the free
slot nearest to its predecessors' mean. Leaves (parameters, inputs) and their AccumulateGrad are
placed lazily, just above their first user, so a parameter sits next to the op that reads it
instead of in a row at the top of a deep model.

Module boxes never overlap: a node goes no higher than the rows where another module's live
nodes sit (a module that is neither its own, an ancestor nor a descendant), together with the
leaves that wait above it. So ``norm1`` ends before ``linear1`` begins, and the boxes drawn
around each module's nodes are stacked, not interleaved.

Pure Python, no Qt, no torch: the Qt canvas and the headless exporter both draw from this.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections import Counter
from itertools import islice
from dataclasses import dataclass, field

from graphview.core.events import summary_text
from graphview.core.run import ACCUMULATE_GRAD, Run

LAYER_HEIGHT = 96.0
SLOT_WIDTH = 200.0

#: every kind of drawn node, with what the legend calls it
NODE_KINDS = {
    "param": "leaf parameter",
    "input_grad": "leaf input that requires grad",
    "input": "input (no grad)",
    "intermediate": "intermediate tensor",
    "output": "output / loss",
    "op": "grad_fn node",
    "accumulate": "AccumulateGrad",
    "detached": "detached / no-grad tensor",
}
#: what is drawn above its first user, in its module's box by its name
_LEAF_KINDS = frozenset({"param", "accumulate", "input"})
#: leaves that outlive a step's graph: the next step's graph is drawn around them again
_LASTING = frozenset({"param", "input", "input_grad"})
#: tensors the script (or a model's forward) made without grad_fn from nothing drawn: they end when freed
_INPUT_KINDS = frozenset({"input", "input_grad"})
#: how many rows above its own :meth:`Drawing._beside_models` looks at for the models' columns
_BESIDE_ROWS = 40
#: tensors drawn without a grad_fn of their own: leaves and tensors cut from a graph
_NO_GRAD_TENSORS = frozenset({"input", "input_grad", "detached"})
#: nodes a row of the layout counts as its module's (see Drawing._put), and a module's weights
_ROW_KINDS = frozenset({"op", "intermediate"})
_WEIGHT_KINDS = frozenset({"param", "accumulate"})
#: every kind of drawn edge
EDGE_KINDS = ("flow", "accumulate", "input", "detach", "no_grad_op")


def unnamed_title(title: str) -> bool:
    """Whether a tensor's title says it had no name when drawn ("tensor", "output of pow", and
    their later states "tensor (v2)")."""
    return title == "tensor" or title.startswith(("tensor (v", "output of "))


@dataclass(slots=True)  # a big drawing holds ~10^5 of them
class DrawNode:
    id: str  # the graph id (``op5``, ``t3``, ``t3v1``), shared with exports and the inspector
    kind: str
    title: str
    subtitle: str
    born: int
    ref: int  # tid for tensors, vid for ops
    module: str | None = None  # nn.Module call path (for leaves: their name's prefix), boxes group by it
    line: int | None = None
    layer: int = 0
    slot: int = 0
    placed: bool = False
    preds: list = field(default_factory=list)

    @property
    def x(self) -> float:
        return self.slot * SLOT_WIDTH

    @property
    def y(self) -> float:
        return self.layer * LAYER_HEIGHT


@dataclass(slots=True)
class DrawEdge:
    source: str
    target: str
    kind: str
    born: int
    label: str = ""


class Drawing:
    """Incrementally built drawing of ``run``: call :meth:`update` as the run grows."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.nodes: dict[str, DrawNode] = {}
        self.edges: list[DrawEdge] = []
        self.order: list[str] = []  # node ids in placement order
        self._edge_keys: set = set()
        self._occupied: dict[int, dict[int, str]] = {}  # layer -> slot -> node id
        self._seen_tensor_nodes: set[str] = set()
        self._seen_ops: set[int] = set()
        self._tensor_nodes_seen = 0  # entries of run.tensor_nodes / run.op_nodes looked at so far
        self._ops_seen = 0
        self._output_of_op: dict[int, str] = {}  # vid -> tensor node drawn below it
        self._deferred: list[str] = []
        self._processed_edges = 0
        # (born, element) the run had that a time-limited update left for the next (oldest first)
        self._backlog: list[tuple[int, object]] = []
        self._extent: list[int] | None = None  # the placed nodes' least and greatest slot and layer
        self.derived: set[str] = set()  # no-grad tensors made from others (detach, ops under no_grad)
        self.inputs: list[str] = []  # inputs (leaves not made from a drawn tensor): they end when torch frees them
        self._out: dict[str, list[DrawEdge]] = {}  # node id -> edges leaving it
        self._deaths: dict[str, int] = {}  # derived node id -> when it stopped mattering (once known)
        self._row_modules: dict[int, dict[str, list[str]]] = {}  # layer -> module path -> node ids
        self._model_weights: dict[str, list[str]] = {}  # a model's name (``teacher``) -> its weights' node ids


    # ------------------------------------------------------------------ building
    @property
    def behind(self) -> bool:
        """Whether a time-limited :meth:`update` left elements of the run for the next one."""
        return bool(self._backlog)

    def update(self, final: bool = True, patient: bool = False, seconds: float | None = None) -> list[str]:
        """Place every element the run has gained since the last call. Returns new node ids.

        While a run is still streaming (``final=False``), a leaf nobody has used yet waits a
        little for its user, which is usually a few events away: placed now, it would land
        far from it. ``patient`` (a trace being read, whose end is sure to come): it waits for
        its user however far away, so the drawing is the one the whole trace at once gives.

        ``seconds``: stop after about that long (the window's event loop waits meanwhile); the
        elements left, the run's newest, are placed by the next calls, oldest first (:attr:`behind`).
        Until then the drawing is the one the run up to the first of them gives: the edges the run
        knows besides the autograd structure wait for it too, and no call is ``final``."""
        run = self.run
        fresh: list[tuple[int, object]] = []
        # the run's tables only grow (new keys at their end): look at the entries added since the
        # last call, not at all of them again (a big trace streams in over hundreds of calls)
        seen_tensors, seen_ops = self._seen_tensor_nodes, self._seen_ops
        for tnode in islice(run.tensor_nodes.values(), self._tensor_nodes_seen, None):
            if tnode.id not in seen_tensors:
                seen_tensors.add(tnode.id)
                if tnode.info.get("kind") != "grad":  # a leaf's .grad the script read: shown on the leaf
                    fresh.append((tnode.born, tnode))
        self._tensor_nodes_seen = len(run.tensor_nodes)
        for op in islice(run.op_nodes.values(), self._ops_seen, None):
            if op.vid not in seen_ops:
                seen_ops.add(op.vid)
                fresh.append((op.born, op))
        self._ops_seen = len(run.op_nodes)
        fresh.sort(key=_born)
        if self._backlog:  # older than anything new: first
            fresh = self._backlog + fresh
            self._backlog = []
        created: list[str] = []
        nodes, deferred = self.nodes, self._deferred
        deadline = None if seconds is None else time.perf_counter() + seconds
        for done, (_, element) in enumerate(fresh):
            if deadline is not None and done & 63 == 63 and time.perf_counter() > deadline:
                self._backlog = fresh[done:]
                break
            node = self._make_node(element)
            nodes[node.id] = node
            created.append(node.id)
            if node.kind in _INPUT_KINDS:
                self.inputs.append(node.id)
            self._connect(node, element)
            # leaves, their AccumulateGrad and ops fed only by those (weight.t()) wait for their
            # first user, then sit just above it
            if self._waits(node):
                deferred.append(node.id)
            else:
                self._place(node)
        # the run as far as this call placed it: up to the first element left for the next call
        frontier = self._backlog[0][0] if self._backlog else None
        self._extra_edges(frontier)
        if frontier is not None:
            final = False
        # what nobody has used yet: show it where the script is now (sources first)
        horizon = (len(self.run.events) if frontier is None else frontier) - 200 if not patient else -1
        still = []
        for node_id in self._deferred:
            node = self.nodes[node_id]
            if node.placed:
                continue
            if final or node.born < horizon and self._shown_unused(node):
                if self._unused_constant(node) or final and self._scratch(node):
                    continue  # not drawn unless something uses it later (then it goes above its user)
                self._place_chain(node)
            else:
                still.append(node_id)
        self._deferred = still
        return created

    def _shown_unused(self, node: DrawNode) -> bool:
        """Whether a leaf nobody has used for a while is drawn anyway while the run streams (where the
        script is then): a tensor the script made and named (``x = torch.randn(...)``) is news. A model's weights
        and buffers, their AccumulateGrad and ``weight.t()`` wait for their user however long it takes
        (a decoder's weights, made in the constructor, are first used far into the step): drawn early,
        they would sit in the encoder's rows and split every module box around them."""
        if node.kind not in ("input", "input_grad", "detached") or not self.run.tensor_name(node.ref):
            return False  # unnamed: maybe a buffer, named at its model's first call, or scratch
        info = self.run.tensors.get(node.ref)
        return info is None or info.get("kind") != "buffer"

    def _unused_constant(self, node: DrawNode) -> bool:
        """An unnamed tensor nothing recorded uses: the scratch tensors a model's constructor
        makes (``torch.empty`` before it becomes a Parameter, a Parameter that weight tying
        replaced). A real model makes dozens; drawn, they would be a row of noise as wide as
        the model. A parameter of a model, or a tensor in a variable, has a name and stays."""
        return (node.kind in ("input", "param") and unnamed_title(node.title) and not node.preds
                and not self._out.get(node.id))

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
            for edge in self._out.get(current.id, ()):
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
        steps = self.run.steps
        if steps:
            return index < steps[0]["start"]
        entered = self.run.module_entered  # (in the order of the calls: the first call is its first value)
        return bool(entered) and index < next(iter(entered.values()))

    def _deferrable(self, node: DrawNode) -> bool:
        return node.kind in ("param", "input_grad", "input", "accumulate")

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
        preds = [nodes[p] for p in node.preds if p in nodes]
        for p in preds:
            if p.placed:
                return False
        if not preds:
            return self._deferrable(node)
        return node.kind == "op" and all(p.kind == "accumulate" for p in preds)

    def _make_node(self, element) -> DrawNode:
        run = self.run
        if hasattr(element, "vid"):  # an op node
            op = element
            if op.name == ACCUMULATE_GRAD:
                leaf_name = run.tensor_name(op.leaf) or "leaf"
                leaf_info = run.tensors.get(op.leaf)
                module = op.module
                if module is None and leaf_info is not None and leaf_info.get("kind") == "param":
                    module = leaf_name.rpartition(".")[0] or None
                return DrawNode(op.id, "accumulate", "AccumulateGrad", f"into {leaf_name}.grad", op.born, op.vid,
                                module, op.line)
            sub = op.op or ""
            if op.line is not None:
                sub = f"{sub} · line {op.line}" if sub else f"line {op.line}"
            return DrawNode(op.id, "op", op.name, sub, op.born, op.vid, op.module, op.line)
        tnode = element
        info = tnode.info
        kind = info.get("kind")
        if tnode.grad_fn is not None:
            draw_kind = "intermediate"
        elif kind in ("param", "buffer"):
            draw_kind = "param" if info.get("requires_grad") else "input"
        elif info.get("requires_grad"):
            draw_kind = "input_grad"
        else:
            draw_kind = "input"
        name = run.tensor_title(tnode.tid, tnode.grad_fn)  # "x", "output of linear", "tensor"
        if "v" in tnode.id[1:]:  # a new state of the tensor after an in-place op
            name += f" (v{tnode.version})"
        if tnode.grad_fn is not None:
            producer = run.op_nodes.get(tnode.grad_fn)
            module = producer.module if producer is not None else None
        elif draw_kind == "param":
            module = name.rpartition(".")[0] or None
        else:  # a model's buffer (running_mean) is in its module's box; made without grad inside a
            # module (an attention mask): that module's, else none
            module = self._buffer_module(tnode.tid)
            if module is None:
                producer_op = run.producers.get(tnode.tid)
                module = producer_op.get("module") if producer_op is not None else None
        return DrawNode(tnode.id, draw_kind, name, _shape_text(info), tnode.born, tnode.tid, module, info.get("line"))

    def _connect(self, node: DrawNode, element) -> None:
        run = self.run
        if node.kind in ("op", "accumulate"):
            op = element
            if node.kind == "accumulate" and op.leaf is not None:
                leaf_id = run._current_tensor_node.get(op.leaf)
                if leaf_id in self.nodes:
                    self._edge(leaf_id, node.id, "accumulate", op.born)
            output_of, nodes = self._output_of_op, self.nodes
            # an op given one tensor in several arguments (``w * w``) has an entry of next_functions
            # for each: drawn as one arrow marked "×2", not as arrows on top of each other
            entries = op.next
            times = Counter(entries) if len(entries) > 1 and len(set(entries)) < len(entries) else None
            for child, input_nr in entries:
                if child is None:
                    continue
                src = output_of.get(child)
                if src is None:
                    src = f"op{child}"
                if src in nodes:
                    count = times[(child, input_nr)] if times is not None else 1
                    self._edge(src, node.id, "flow", op.born, f"×{count}" if count > 1 else "")
        elif node.kind in ("intermediate",):
            producer = f"op{element.grad_fn}"
            if producer in self.nodes:
                self._edge(producer, node.id, "flow", node.born)
                self._output_of_op.setdefault(element.grad_fn, node.id)
                # the tensor now stands between its producer and any later consumer

    def _extra_edges(self, frontier: int | None = None) -> None:
        """Edges the run knows besides the autograd structure: inputs, detach, no-grad ops (those
        born before ``frontier``, when an update left the run's elements from there for later)."""
        run = self.run
        edges = run.edges[self._processed_edges:]
        if frontier is not None:
            taken = 0
            for edge in edges:  # in the order of the run: born grows
                if edge.born >= frontier:
                    break
                taken += 1
            edges = edges[:taken]
        for edge in edges:
            if edge.kind in ("input", "detach", "no_grad_op") and edge.source in self.nodes and edge.target in self.nodes:
                label = edge.attrs.get("op", "") if edge.kind == "no_grad_op" else ("detach" if edge.kind == "detach" else "")
                self._edge(edge.source, edge.target, edge.kind, edge.born, label)
                target = self.nodes[edge.target]
                if edge.kind in ("detach", "no_grad_op") and target.kind in ("input", "detached"):
                    target.kind = "detached"  # cut from a graph: drawn apart from plain inputs
                    self.derived.add(target.id)
        self._processed_edges += len(edges)

    def _edge(self, source: str, target: str, kind: str, born: int, label: str = "") -> None:
        nodes = self.nodes
        source_node = nodes.get(source)
        target_node = nodes.get(target)
        if source_node is not None and not source_node.placed and target_node is not None and target_node.placed \
                and not self._history(source_node, target_node):
            self._place_above(source_node, target_node)  # a leaf seen first as this op's input
        key = (source, target, kind)
        keys = self._edge_keys
        if key in keys:
            return
        keys.add(key)
        edge = DrawEdge(source, target, kind, born, label)
        self.edges.append(edge)
        out = self._out.get(source)
        if out is None:
            self._out[source] = [edge]
        else:
            out.append(edge)
        if target_node is not None and source not in target_node.preds:
            target_node.preds.append(source)

    # ------------------------------------------------------------------ placement
    def _name_late(self, node: DrawNode) -> None:
        """A parameter or buffer drawn before it had a name (a model's parameters exist from its constructor,
        and a model that initialises them there is recorded doing it; they are named at the model's
        first call) takes its name, and with it its module, when it is placed: the module box of
        ``bert.encoder.layer.0.attention.self.query`` then holds its weight."""
        if node.module is not None or node.kind not in ("param", "input"):
            return
        name = self.run.tensor_name(node.ref)
        if name:
            # unnamed when made: "tensor", "output of uniform_", or "... (v2)" (the canvas may have
            # shown the name already)
            if unnamed_title(node.title):
                node.title = name + (node.title[node.title.index(" (v"):] if " (v" in node.title else "")
            node.module = (name.rpartition(".")[0] or None) if node.kind == "param" else self._buffer_module(node.ref)

    def _buffer_module(self, tid: int) -> str | None:
        """The module whose buffer tensor ``tid`` is (``layer1.0.bn1.running_mean`` -> ``layer1.0.bn1``)."""
        info = self.run.tensors.get(tid) or {}
        if info.get("kind") != "buffer" or not info.get("name"):
            return None
        return info["name"].rpartition(".")[0] or None

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
        late = len(self.run.events) if at is None else at
        while path and entered.get(path, late + 1) > late:
            path = path.rpartition(".")[0]
        node.module = path or None

    def _place(self, node: DrawNode) -> None:
        self._name_late(node)  # its module decides which rows it may take
        if node.kind in _LEAF_KINDS:
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
        # (below the drawing's last row nothing is foreign: this ends; a cap on the rows walked left a
        # node that reads a tensor from a thousand rows up inside another module's box)
        while self._foreign_rows(layer - reach + 1, layer, node.module, node.born):
            layer += 1
        if want is None:
            want = self._free_column(layer, node.born)
        self._put(node, layer, want)
        for pred in waiting:  # lazily placed leaves (and their AccumulateGrad) go just above
            self._place_above(pred, node)

    def _free_column(self, layer: int, born: int) -> int:
        """The leftmost slot (from 0) with no live node in ``layer`` or any row below it: where
        the next training step's graph goes once the last one is destroyed, so repeated steps
        draw in the same place instead of drifting right."""
        rows = [(k, taken) for k, taken in self._occupied.items() if k >= layer]
        nodes = self.nodes
        for slot in range(0, 100000):
            # a leaf (a parameter, an input) lives on from step to step just above where its user
            # was and will be again: below this row it keeps no column from the next step's graph
            # (which went two columns right at each step, past the second layer's weights)
            if all(self._free(taken, slot, born) or (k > layer and nodes[taken[slot]].kind in _LASTING)
                   for k, taken in rows):
                return slot
        return 0

    def _chain_floor(self, node: DrawNode) -> int:
        """The highest row ``node`` may take so that every leaf chain waiting above it still sits
        below what is already placed above the chain (the next step's AccumulateGrad goes under
        the parameter drawn in step 1, not beside it).

        A walk up the waiting chains with a stack of its own (a trace decides how long a chain is),
        each node at each distance walked once; a node already on the path (a cycle, which autograd
        never makes and the trace reader refuses) is not walked again."""
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
                elif pred_id not in path and (pred_id, depth + 1) not in walked and not self._history(pred, current):
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
        nodes = self.nodes

        def waiting(n: DrawNode) -> list:
            return [nodes[p] for p in n.preds if p in nodes and not nodes[p].placed and not self._history(nodes[p], n)]

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

    def _foreign_rows(self, top: int, bottom: int, module: str | None, born: int) -> bool:
        """Whether rows ``top..bottom`` hold live nodes of another module than ``module``.

        A box is drawn around its nodes: a node of any other module in one of its rows would look
        inside it (a residual ``add`` of a transformer layer inside its LayerNorm's box, when the
        norm's weights went in the add's row), so each row holds one module's nodes (or nodes
        outside every module). Which nodes a row counts is in :meth:`_put`. Live means not
        destroyed before ``born``; a row of a model whose weights live stays its own after its
        graph is freed: its next call comes back there (a distillation's student, drawn in the
        rows of the teacher's freed graph, sat inside the teacher's box at the next step)."""
        for layer in range(top, bottom + 1):
            row = self._row_modules.get(layer)
            if not row:
                continue
            for path, ids in list(row.items()):
                if module == path:
                    continue
                live = [i for i in ids if not self._gone(i, born)]
                if live:
                    if len(live) != len(ids):
                        row[path] = live
                    return True
                if self._model_lives(path, module, born):
                    return True
                del row[path]
        return False

    def _model_lives(self, path: str | None, module: str | None, born: int) -> bool:
        """Whether ``path`` belongs to another model than ``module`` (its first name) whose weights
        are alive at ``born`` (the modules of one model take each other's freed rows, as a
        mixture of experts' routed experts do)."""
        if not path:
            return False
        root = path.partition(".")[0]
        if module is not None and module.partition(".")[0] == root:
            return False
        return any(not self._gone(i, born) for i in self._model_weights.get(root, ()))

    def _gone(self, node_id: str, born: int) -> bool:
        dead = self.dead_index(self.nodes[node_id])
        return dead is not None and dead <= born

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
                if pred is not None and not pred.placed and pred_id not in seen:
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
                if pred is not None and not pred.placed and not self._history(pred, current):
                    self._put_above(pred, current)
                    stack.append((pred, iter(pred.preds)))
                    break
            else:
                stack.pop()

    def _put_above(self, node: DrawNode, user: DrawNode) -> None:
        self._name_late(node)
        if node.kind in _LEAF_KINDS:
            self._module_that_ran(node, user.born)
        row, slot = user.layer - 1, user.slot
        if node.kind in _NO_GRAD_TENSORS and not node.module:  # outside every module box
            if node.module is None and user.module is not None:
                row = self._above_weights(user, node.born)
            elif not user.module:  # (a model's own forward, path "": GPT-2's loss pads its labels)
                slot = self._beside_models(row, slot, node.born, node.module)
        self._put(node, row, slot)

    def _beside_models(self, row: int, slot: int, born: int, module: str | None = None) -> int:
        """The column for a tensor without grad from outside every module box (``module``: None, or
        ``""``, a model's own forward), in ``row`` above an op outside every box (a distillation's
        detached target above its loss, GPT-2's padded labels above its loss): right of the models
        whose nodes share the row (and the rows just above), whose boxes would hold it."""
        roots = {path.partition(".")[0] for path, ids in self._row_modules.get(row, {}).items()
                 if path is not None and path != module and any(not self._gone(i, born) for i in ids)}
        if not roots:
            return slot
        right = slot - 1
        for r in range(row - _BESIDE_ROWS, row + 1):
            for path, ids in self._row_modules.get(r, {}).items():
                if path is not None and path != module and path.partition(".")[0] in roots:
                    right = max([right] + [self.nodes[i].slot for i in ids if not self._gone(i, born)])
        return max(slot, right + 1)

    def _above_weights(self, user: DrawNode, born: int) -> int:
        """The row for a tensor without grad from outside every module that ``user`` reads: above
        the rows just above it that hold only weights of ``user``'s model (the batch a model's first
        conv reads, BERT's ids into the word embeddings), where the model's boxes, drawn around
        those weights, do not hold it. Just above ``user`` where the model has ops there."""
        root = user.module.partition(".")[0]
        row = user.layer - 1
        for _ in range(4):
            live = [i for path, ids in self._row_modules.get(row, {}).items()
                    if path is not None and (path == root or path.startswith(root + ".")) for i in ids
                    if not self._gone(i, born)]
            if not live:
                return row
            if any(self.nodes[i].kind not in _WEIGHT_KINDS for i in live):
                break
            row -= 1
        return user.layer - 1

    def _history(self, pred: DrawNode, node: DrawNode) -> bool:
        """Whether ``pred`` is only how a model's constructor made ``node``, a buffer: both tensors
        without grad made before the model's first call, ``pred`` unnamed (Llama's rotary ``inv_freq`` is
        ``1 / base ** (arange(...) / dim)``, BERT's ``position_ids`` an ``arange(...).expand``): not
        drawn above the buffer it made, unless something else uses it."""
        return (pred.kind in _NO_GRAD_TENSORS and node.kind in _NO_GRAD_TENSORS and unnamed_title(pred.title)
                and self._before_first_step(node.born)
                and (self.run.tensors.get(node.ref) or {}).get("kind") == "buffer")

    def _free(self, taken: dict[int, str], slot: int, born: int) -> bool:
        """A slot is free if nobody had it, or its node was destroyed before ``born``."""
        occupant = taken.get(slot)
        if occupant is None:
            return True
        dead = self.dead_index(self.nodes[occupant])
        return dead is not None and dead <= born

    def _put(self, node: DrawNode, layer: int, want: int) -> None:
        taken = self._occupied.get(layer)
        if taken is None:
            taken = self._occupied[layer] = {}
        slot = want
        if want in taken:
            for distance in range(0, 100000):
                if self._free(taken, want + distance, node.born):
                    slot = want + distance
                    break
                if distance and self._free(taken, want - distance, node.born):
                    slot = want - distance
                    break
        taken[slot] = node.id
        node.layer, node.slot, node.placed = layer, slot, True
        extent = self._extent
        if extent is None:
            self._extent = [slot, layer, slot, layer]
        else:
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
        # layout depend on how the run was read
        if node.kind in _ROW_KINDS or node.module is not None and node.kind in _WEIGHT_KINDS:
            self._row_modules.setdefault(layer, {}).setdefault(node.module, []).append(node.id)
            if node.kind == "param":
                self._model_weights.setdefault(node.module.partition(".")[0], []).append(node.id)
        self.order.append(node.id)

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

    # ------------------------------------------------------------------ state at a cursor
    def dead_index(self, node: DrawNode) -> int | None:
        """When autograd destroyed this part of the graph (an op, or a tensor through its grad_fn);
        an input, when it was freed (the last iteration's ``images`` once the script binds the
        name to the next batch)."""
        if node.kind in ("op", "accumulate"):
            op = self.run.op_nodes.get(node.ref)
            return op.dead if op is not None else None
        tnode = self.run.tensor_nodes.get(node.id)
        if tnode is not None and tnode.grad_fn is not None:
            op = self.run.op_nodes.get(tnode.grad_fn)
            return op.dead if op is not None else None
        if node.id in self.derived:
            return self._derived_death(node)
        if node.kind in _INPUT_KINDS:
            return self._input_death(node)
        return None

    def _input_death(self, node: DrawNode) -> int | None:
        """When torch freed an input, or later, when the last op it feeds is gone: the recorder's
        saved copy of a batch outlives the script's tensor (``model(torch.randn(...))`` frees the
        tensor at the end of the forward, while the conv holds its copy until backward)."""
        end = self.run.tensor_dead.get(node.ref)
        if end is None:
            return None
        nodes = self.nodes
        for edge in self._out.get(node.id, ()):
            user = nodes.get(edge.target)
            if user is not None and user.kind in ("op", "accumulate"):
                op = self.run.op_nodes.get(user.ref)
                if op is None or op.dead is None:
                    return None
                end = max(end, op.dead)
        return end

    def inputs_changing(self, low: int, high: int) -> list[str]:
        """Inputs that may disappear between events ``low`` and ``high`` (as :meth:`derived_changing`)."""
        return self._ending(self.inputs, low, high)

    def _derived_death(self, node: DrawNode) -> int | None:
        """A tensor made without grad from another (``targets.reshape(-1)``, ``out.detach()``,
        what ``loss.item()`` makes) has no graph that autograd destroys, yet leaving it on the
        canvas forever would add a column per training step. It goes with what it feeds: when
        every op and derived tensor it fed is gone; if it fed nothing, at the end of its step.

        Worked out without recursion: a no-grad chain may be thousands of tensors long
        (``h = h * 0.999`` in a loop under no_grad). An in-place op on a no-grad tensor fed by what
        was made from it (``shifted.masked_fill_(shifted == -100, 0)``) closes a loop: a tensor on
        the way is not asked again, and an answer that skipped one is not kept (asked from
        elsewhere, it may differ)."""
        known = self._deaths.get(node.id)
        if known is not None:
            return known
        nodes, derived, deaths = self.nodes, self.derived, self._deaths
        asking = {node.id}
        # a frame: the tensor, its users still to ask, their deaths, whether one is unknown,
        # how many users counted, whether a loop was cut below it
        frames = [[node, iter(self._out.get(node.id, ())), [], False, 0, False]]
        death = None
        while frames:
            frame = frames[-1]
            edge = next(frame[1], None)
            if edge is not None:
                user = nodes.get(edge.target)
                if user is None or not (user.kind in ("op", "accumulate") or user.id in derived):
                    continue
                if user.id in asking:
                    frame[5] = True  # a loop: not asked again
                    continue
                frame[4] += 1
                if user.id in derived:
                    user_death = deaths.get(user.id)
                    if user_death is None:
                        asking.add(user.id)
                        frames.append([user, iter(self._out.get(user.id, ())), [], False, 0, False])
                        continue
                else:
                    user_death = self.dead_index(user)
                if user_death is None:
                    frame[3] = True
                else:
                    frame[2].append(user_death)
                continue
            frames.pop()
            current, _, found, unknown, counted, cut = frame
            asking.discard(current.id)
            if not counted:
                death = self._step_end(current.born)
            else:
                death = None if unknown else max(found)
            if death is not None and not cut:
                deaths[current.id] = death
            if frames:
                parent = frames[-1]
                parent[5] = parent[5] or cut
                if death is None:
                    parent[3] = True
                else:
                    parent[2].append(death)
        return death

    def derived_changing(self, low: int, high: int) -> list[str]:
        """Derived tensors that may appear or disappear between events ``low`` and ``high``: those
        whose end falls in that span, and those whose end is not known yet."""
        return self._ending(self.derived, low, high)

    def _ending(self, node_ids, low: int, high: int) -> list[str]:
        """Those of ``node_ids`` whose end falls between ``low`` and ``high``, or is not known yet."""
        changing = []
        for node_id in node_ids:
            death = self.dead_index(self.nodes[node_id])
            if death is None or low <= death <= high:
                changing.append(node_id)
        return changing

    def _step_end(self, index: int) -> int | None:
        steps = self.run.steps
        at = bisect_right(steps, index, key=lambda step: step["start"]) - 1
        if at < 0:
            return None
        end = steps[at]["end"]
        return end if end is not None and end >= index else None

    def visible(self, node: DrawNode, index: int) -> bool:
        """The graph as it exists at ``index``: born, and not yet destroyed by autograd."""
        if node.born > index:
            return False
        dead = self.dead_index(node)
        return dead is None or dead > index

    def tensor_state(self, node: DrawNode, index: int) -> str:
        """``freed`` for a result whose node backward freed and whose tensor torch freed too (a
        ReLU's output inside a model's forward, once backward is done: drawn as solid as the loss
        the script still holds, it looked alive); else ``live``."""
        if node.kind == "intermediate":
            dead = self.run.tensor_dead.get(node.ref)
            if dead is not None and dead <= index:
                tnode = self.run.tensor_nodes.get(node.id)
                op = self.run.op_nodes.get(tnode.grad_fn) if tnode is not None else None
                if op is not None and op.freed is not None and op.freed <= index:
                    return "freed"
        return "live"

    def op_state(self, vid: int, index: int) -> str:
        """``live`` | ``running`` (executing at this event) | ``done`` | ``freed`` | ``error`` |
        ``unreachable`` (alive, but on no path from the next backward's roots)."""
        op = self.run.op_nodes.get(vid)
        if op is None:
            return "live"
        ev = self.run.events[index] if 0 <= index < len(self.run.events) else None
        if ev is not None and ev.get("ev") in ("bw_node", "bw_node_done", "accumulate") and ev.get("vid") == vid:
            return "running"
        if any(err.get("vid") == vid and i <= index for i, err in self.run.errors):
            return "error"
        if op.freed is not None and op.freed <= index and op.name != ACCUMULATE_GRAD:
            return "freed"  # AccumulateGrad holds nothing: the next graph reuses it
        if any(i <= index for _, i in op.executed):
            return "done"
        if self.run.unreachable_reason(vid, index) is not None:
            return "unreachable"
        return "live"

    def failed_roots(self, index: int) -> set[int]:
        """Tensors whose backward call failed by event ``index`` before reaching any node (e.g.
        backward on a tensor that has no grad_fn): where that error happened."""
        tids: set[int] = set()
        for i, err in self.run.errors:
            call = self.run.backwards.get(err.get("bid"))
            if i <= index and err.get("vid") is None and call is not None:
                tids.update(call.roots_tensors)
        return tids

    def saved_bytes(self, vid: int, index: int) -> int:
        """Bytes node ``vid`` holds in saved tensors after event ``index`` (each storage once, as
        the memory chart counts them: ``x * x`` saves x twice, one storage)."""
        return self.run.saved_bytes_held_by((vid,), index)

    def is_output(self, tid: int, index: int) -> bool:
        """Whether tensor ``tid`` is the root of a backward call started by event ``index``."""
        first = self.run.first_root_at.get(tid)
        return first is not None and first <= index

    def bounds(self) -> tuple[float, float, float, float]:
        """Left, top, right, bottom of every placed node's centre (kept up to date as nodes are placed)."""
        extent = self._extent
        if extent is None:
            return 0.0, 0.0, 0.0, 0.0
        return extent[0] * SLOT_WIDTH, extent[1] * LAYER_HEIGHT, extent[2] * SLOT_WIDTH, extent[3] * LAYER_HEIGHT


def _born(item: tuple) -> int:
    return item[0]


def _shape_text(info: dict) -> str:
    shape = info.get("shape") or []
    dims = "×".join(map(str, shape)) if shape else "scalar"
    values = info.get("values")
    if values is not None and len(values) == 1:
        return f"{dims} = {summary_text({'shape': [], 'values': values})}"
    return f"{dims} {info.get('dtype', '')}".strip()
