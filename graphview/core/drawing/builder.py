"""The drawing of a run: a node for each element of its autograd graph, the edges between them.

:class:`Drawing` reads the run's tables as they grow (:meth:`Drawing.update`), makes a
:class:`~graphview.core.drawing.nodes.DrawNode` for each tensor and autograd node and a
:class:`~graphview.core.drawing.nodes.DrawEdge` for each arrow, and hands each node to its
:class:`~graphview.core.drawing.placement.Placement` (where it goes) and asks its
:class:`~graphview.core.drawing.lifetimes.Lifetimes` when it is shown.

Pure Python, no Qt, no torch.
"""

from __future__ import annotations

import time
from collections import Counter
from itertools import islice
from operator import itemgetter

from graphview.core.drawing.lifetimes import Lifetimes
from graphview.core.drawing.nodes import INPUT_KINDS, DrawEdge, DrawNode
from graphview.core.drawing.placement import Placement, buffer_module
from graphview.core.events import summary_text
from graphview.core.run import ACCUMULATE_GRAD, Run
from graphview.core.queries.names import node_title


class Drawing:
    """Incrementally built drawing of ``run``: call :meth:`update` as the run grows.

    Where a node goes is its :attr:`placement`'s; what is shown at an event, its :attr:`lifetimes`'
    (whose questions the drawing answers too: :meth:`visible`, :meth:`dead_index`, ...)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.nodes: dict[str, DrawNode] = {}
        self.edges: list[DrawEdge] = []
        self._tensor_nodes_seen = 0  # entries of run.tensor_nodes / run.op_nodes looked at so far
        self._ops_seen = 0
        self._output_of_op: dict[int, str] = {}  # vid -> tensor node drawn below it
        self._processed_edges = 0  # entries of run.side_edges looked at so far
        # (born, element) the run had that a time-limited update left for the next (oldest first)
        self._backlog: list[tuple[int, object]] = []
        self.derived: set[str] = set()  # no-grad tensors made from others (detach, ops under no_grad)
        self.inputs: list[str] = []  # inputs (leaves not made from a drawn tensor): they end when torch frees them
        self._out: dict[str, list[DrawEdge]] = {}  # node id -> edges leaving it
        self._shape_texts: dict[tuple, str] = {}  # (dtype, shape) -> what a node of it says under its name
        self.lifetimes = Lifetimes(run, self.nodes, self._out, self.derived, self.inputs)
        self.placement = Placement(run, self.nodes, self._out, self.lifetimes.dead_index)
        self.order: list[str] = self.placement.order  # node ids in placement order
        # the lifetimes' questions, asked of the drawing (bound once: the canvas asks them per node)
        lifetimes = self.lifetimes
        self.visible = lifetimes.visible
        self.dead_index = lifetimes.dead_index
        self.tensor_state = lifetimes.tensor_state
        self.op_state = lifetimes.op_state
        self.failed_roots = lifetimes.failed_roots
        self.saved_bytes = lifetimes.saved_bytes
        self.is_output = lifetimes.is_output
        self.derived_changing = lifetimes.derived_changing
        self.inputs_changing = lifetimes.inputs_changing
        self.path_clear = self.placement.grid.path_clear
        self.bounds = self.placement.grid.bounds
        self.gap_columns = self.placement.grid.strips.gap_columns  # kept empty between branches side by side

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
        # the run's tables only grow, by new keys at their end (it never drops one, and a key given a
        # new value keeps its place): the entries added since the last call are those past the count
        # looked at then; all of them are not looked at again (a big trace streams in over hundreds of calls)
        for tnode in islice(run.tensor_nodes.values(), self._tensor_nodes_seen, None):
            if tnode.info.get("kind") != "grad":  # a leaf's .grad the script read: shown on the leaf
                fresh.append((tnode.born, tnode))
        self._tensor_nodes_seen = len(run.tensor_nodes)
        fresh.extend((op.born, op) for op in islice(run.op_nodes.values(), self._ops_seen, None))
        self._ops_seen = len(run.op_nodes)
        fresh.sort(key=_BORN)
        if self._backlog:  # older than anything new: first
            fresh = self._backlog + fresh
            self._backlog = []
        created: list[str] = []
        nodes = self.nodes
        # (bound once: a big trace draws 10^5 nodes here)
        make, connect, arrive, inputs = self._make_node, self._connect, self.placement.arrive, self.inputs
        deadline = None if seconds is None else time.perf_counter() + seconds
        for done, (_, element) in enumerate(fresh):
            if deadline is not None and done & 63 == 63 and time.perf_counter() > deadline:
                self._backlog = fresh[done:]
                break
            node = make(element)
            node_id = node.id
            nodes[node_id] = node
            created.append(node_id)
            if node.kind in INPUT_KINDS:
                inputs.append(node_id)
            connect(node, element)
            arrive(node)
        # the run as far as this call placed it: up to the first element left for the next call
        frontier = self._backlog[0][0] if self._backlog else None
        self._extra_edges(frontier)
        if frontier is not None:
            final = False
        # what nobody has used yet: show it where the script is now (sources first)
        self.placement.settle(final, patient, len(run.events) if frontier is None else frontier)
        return created

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
            return DrawNode(op.id, "op", node_title(op.name), sub, op.born, op.vid, op.module, op.line)
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
            module = buffer_module(self.run, tnode.tid)
            if module is None:
                producer_op = run.producers.get(tnode.tid)
                module = producer_op.get("module") if producer_op is not None else None
        return DrawNode(tnode.id, draw_kind, name, self._shape_text(info), tnode.born, tnode.tid, module,
                        info.get("line"))

    def _shape_text(self, info: dict) -> str:
        """:func:`shape_text` of a tensor's latest event, worked out once for each shape and dtype (a
        one-element tensor's says its value: each its own)."""
        values = info.get("values")
        if values is not None and len(values) == 1:
            return shape_text(info)
        try:
            key = (info.get("dtype", ""), tuple(info.get("shape") or ()))
            text = self._shape_texts.get(key)
        except TypeError:  # (no shape of sizes: said as it is)
            return shape_text(info)
        if text is None:
            text = self._shape_texts[key] = shape_text(info)
        return text

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
            # for each: drawn as one arrow marked "×2", not as arrows on top of each other (the only
            # arrow a node could be given twice: each node is connected once, when it is made)
            entries = op.next
            times = drawn = None
            if len(entries) > 1 and len({child for child, _ in entries}) < len(entries):  # a child twice
                drawn = set()
                times = Counter(entries) if len(set(entries)) < len(entries) else None
            for child, input_nr in entries:
                if child is None:
                    continue
                src = output_of.get(child)
                if src is None:
                    src = f"op{child}"
                if src in nodes:
                    if drawn is not None:
                        if src in drawn:
                            continue
                        drawn.add(src)
                    count = times[(child, input_nr)] if times is not None else 1
                    self._edge(src, node.id, "flow", op.born, f"×{count}" if count > 1 else "")
        elif node.kind in ("intermediate",):
            producer = f"op{element.grad_fn}"
            if producer in self.nodes:
                self._edge(producer, node.id, "flow", node.born)
                self._output_of_op.setdefault(element.grad_fn, node.id)

    def _extra_edges(self, frontier: int | None = None) -> None:
        """Edges the run knows besides the autograd structure: inputs, detach, no-grad ops (those
        born before ``frontier``, when an update left the run's elements from there for later)."""
        run = self.run
        edges = run.side_edges[self._processed_edges:]
        if frontier is not None:
            taken = 0
            for edge in edges:  # in the order of the run: born grows
                if edge.born >= frontier:
                    break
                taken += 1
            edges = edges[:taken]
        for edge in edges:
            if edge.source in self.nodes and edge.target in self.nodes:
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
        if source_node is not None and not source_node.placed:
            self.placement.meet(source_node, target_node)  # a leaf seen first as this op's input
        # (no two calls give one source, target and kind: a node's arrows are drawn when it is made,
        # the run's side edges are each the run's once)
        edge = DrawEdge(source, target, kind, born, label)
        self.edges.append(edge)
        out = self._out.get(source)
        if out is None:
            self._out[source] = [edge]
        else:
            out.append(edge)
        if target_node is not None:
            preds = target_node.preds
            if source not in preds:
                preds.append(source)


#: the ``born`` of a ``(born, element)`` pair
_BORN = itemgetter(0)


def shape_text(info: dict) -> str:
    """A tensor's shape and dtype (``2×4 float32``), or its value where it has one (``scalar = 0.5``)."""
    shape = info.get("shape") or []
    dims = "×".join(map(str, shape)) if shape else "scalar"
    values = info.get("values")
    if values is not None and len(values) == 1:
        return f"{dims} = {summary_text({'shape': [], 'values': values})}"
    return f"{dims} {info.get('dtype', '')}".strip()
