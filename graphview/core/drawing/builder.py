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
from collections import Counter, deque
from itertools import islice
from operator import attrgetter, itemgetter

from graphview.core.drawing.lifetimes import Lifetimes
from graphview.core.drawing.nodes import INPUT_KINDS, DrawEdge, DrawNode
from graphview.core.drawing.placement import SHOWN_UNUSED_KINDS, WAIT_EVENTS, Placement, buffer_module
from graphview.core.events import summary_text
from graphview.core.run import ACCUMULATE_GRAD, OpNode, Run, TensorNode
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
        # elements of the run (tensor and autograd nodes) that a time-limited update left for the next (oldest first)
        self._backlog: list = []
        self._held: list = []  # the newest elements, whose events the run has not all yet (see _incomplete)
        # the run streams in: the drawing began on a run without events (a runner's, a trace being read),
        # or an update came before the run's end; a run drawn whole at once is not
        self._streamed = not run.events
        self._due: deque[DrawNode] = deque()  # tensors waiting for a user a streaming run may draw unused (born order)
        self.derived: set[str] = set()  # no-grad tensors made from others (detach, ops under no_grad)
        self.inputs: list[str] = []  # inputs (leaves not made from a drawn tensor): they end when torch frees them
        self._out: dict[str, list[DrawEdge]] = {}  # node id -> edges leaving it
        self._shape_texts: dict[tuple, str] = {}  # (dtype, shape) -> what a node of it says under its name
        self._titles: dict[str, str] = {}  # an autograd node's name -> its node's title
        self._subtitles: dict[tuple, str] = {}  # (op, line) -> what an autograd node's node says under its title
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

    def update(self, final: bool = True, patient: bool = False, seconds: float | None = None,
               over: bool = False) -> list[str]:
        """Place every element the run has gained since the last call. Returns new node ids.

        While a run is still streaming (``final=False``), a leaf nobody has used yet waits a
        little for its user, which is usually a few events away: placed now, it would land
        far from it. ``patient`` (a trace being read, whose end is sure to come): it waits for
        its user however far away, so the drawing is the one the whole trace at once gives.

        ``seconds``: stop after about that long (the window's event loop waits meanwhile); the
        elements left, the run's newest, are placed by the next calls, oldest first (:attr:`behind`).
        Until then the drawing is the one the run up to the first of them gives: the edges the run
        knows besides the autograd structure wait for it too, and no call is ``final``.

        Until the run is ``final`` (or ``over``: no more events will come, a run cut off), its newest
        tensors wait for the event of the op that made them (:meth:`_incomplete`). So where the
        calls fall does not move a node: two recordings of a script, whose events come in batches
        as the window's timer takes them, are drawn alike."""
        run = self.run
        # the run's tables only grow, by new keys at their end (it never drops one, and a key given a
        # new value keeps its place): the entries added since the last call are those past the count
        # looked at then; all of them are not looked at again (a big trace streams in over hundreds of calls)
        fresh: list = [tnode for tnode in islice(run.tensor_nodes.values(), self._tensor_nodes_seen, None)
                       if tnode.info.get("kind") != "grad"]  # (a leaf's .grad the script read: shown on the leaf)
        self._tensor_nodes_seen = len(run.tensor_nodes)
        fresh.extend(islice(run.op_nodes.values(), self._ops_seen, None))
        self._ops_seen = len(run.op_nodes)
        fresh.sort(key=_BORN)  # (each born at an event of its own)
        if self._backlog or self._held:  # older than anything new: first
            fresh = self._backlog + self._held + fresh
            self._backlog = []
        self._held = self._incomplete(fresh) if not (final or over) else []
        self._streamed = self._streamed or not final
        # (a run drawn whole at once has no leaf wait for a horizon)
        created = self._take(fresh, None if seconds is None else time.perf_counter() + seconds,
                             patient or not self._streamed)
        # the run as far as this call placed it: up to the first element left for the next call
        left = self._backlog or self._held
        frontier = left[0].born if left else None
        self._extra_edges(frontier)
        if frontier is not None:
            final = False
        # what nobody has used yet: show it where the script is now (sources first)
        self.placement.settle(final, patient, len(run.events) if frontier is None else frontier)
        return created

    def _incomplete(self, fresh: list) -> list:
        """The elements at the end of ``fresh`` (taken out of it) whose events the run has not
        all yet: a tensor's event comes before the event of the op that made it (its producer,
        its module, what it is called), so the tensors the run ends with wait for it. Taken without
        it, a mask T5's attention makes was "tensor" outside every module box, or "output of add"
        inside one, as the window's batches of events fell."""
        events = self.run.events
        complete = len(events)
        while complete and events.kind(complete - 1) == "tensor":
            complete -= 1
        cut = len(fresh)
        while cut and fresh[cut - 1].born >= complete:
            cut -= 1
        held = fresh[cut:]
        del fresh[cut:]
        return held

    def _take(self, fresh: list, deadline: float | None, patient: bool = False) -> list[str]:
        """Draw and place the run's elements ``fresh`` (oldest first) until ``deadline`` (those left
        wait in the backlog), each after the side edges made before it and, unless ``patient``, the
        leaves whose wait for a user is over by then (:meth:`Placement.settle_due`): what calls the
        run came in does not move a node. Returns the ids of the nodes made."""
        created: list[str] = []
        # (bound once: a big trace draws 10^5 nodes here)
        take_op, take_tensor, arrive = self._take_op, self._take_tensor, self.placement.arrive
        settle_due = (lambda born: None) if patient else self._settle_due
        due = self._due
        # the run's side edges go in among its elements, in the order the run made them (both ends
        # are born by the edge's event): taken at the end of each call, they met the elements of
        # that call already placed, and where the calls fell (how the events came in) moved nodes
        # (a run drawn whole at once meets them after all its elements)
        side = self.run.side_edges
        taken = self._processed_edges
        next_edge = side[taken].born if self._streamed and taken < len(side) else None
        if deadline is None and next_edge is None and patient:  # (a run drawn whole: 10^5 elements)
            return self._take_all(fresh)
        for done, element in enumerate(fresh):
            if deadline is not None and done & 63 == 63 and time.perf_counter() > deadline:
                self._backlog = fresh[done:]
                break
            if next_edge is not None and next_edge < element.born:
                self._extra_edges(element.born)
                next_edge = side[self._processed_edges].born if self._processed_edges < len(side) else None
            settle_due(element.born)
            node = take_op(element) if type(element) is OpNode else take_tensor(element)
            created.append(node.id)
            arrive(node)
            if not node.placed and node.kind in SHOWN_UNUSED_KINDS:  # (it waits for a user)
                due.append(node)
        return created

    def _take_all(self, fresh: list) -> list[str]:
        """:meth:`_take` of every element of ``fresh`` with nothing to wait for: no deadline, no side
        edge among them, no leaf's wait to settle (a trace opened whole: a big one draws 10^5 here)."""
        created: list[str] = []
        take_op, take_tensor, arrive, due = self._take_op, self._take_tensor, self.placement.arrive, self._due
        for element in fresh:
            node = take_op(element) if type(element) is OpNode else take_tensor(element)
            created.append(node.id)
            arrive(node)
            if not node.placed and node.kind in SHOWN_UNUSED_KINDS:  # (it waits for a user)
                due.append(node)
        return created

    def _settle_due(self, now: int) -> None:
        """Before the element born at event ``now`` of a streaming run: :meth:`Placement.settle` if a
        tensor waiting for its user (:data:`SHOWN_UNUSED_KINDS`) has waited :data:`WAIT_EVENTS` by
        then. So it is drawn at that point of the run whichever calls the events came in: settled
        only at the end of each call, it went where the script was at the end of that call."""
        due, horizon = self._due, now - WAIT_EVENTS
        waited = False
        while due and due[0].born < horizon:
            waited = not due.popleft().placed or waited
        if waited:
            self.placement.settle(False, False, now)

    def _take_op(self, op: OpNode) -> DrawNode:
        """The node of autograd node ``op``, drawn with its arrows from the nodes drawn before it."""
        nodes = self.nodes
        if op.name == ACCUMULATE_GRAD:
            node = self._accumulate_node(op)
            nodes[node.id] = node
            leaf_node = nodes.get(self.run._current_tensor_node.get(op.leaf)) if op.leaf is not None else None
            if leaf_node is not None:
                self._arrow(leaf_node, node, "accumulate", op.born)
        else:
            title = self._titles.get(op.name)
            if title is None:
                title = self._titles[op.name] = node_title(op.name)
            key = (op.op, op.line)
            sub = self._subtitles.get(key)
            if sub is None:
                sub = op.op or ""
                if op.line is not None:
                    sub = f"{sub} · line {op.line}" if sub else f"line {op.line}"
                self._subtitles[key] = sub
            node = DrawNode(op.id, "op", title, sub, op.born, op.vid, op.module, op.line)
            nodes[node.id] = node
        entries = op.next
        if not entries:
            return node
        # an op given one tensor in several arguments (``w * w``) has an entry of next_functions
        # for each: drawn as one arrow marked "×2", not as arrows on top of each other (the only
        # arrow a node could be given twice: each node is connected once, when it is made)
        times = drawn = None
        if len(entries) > 1 and len(set(map(_FIRST, entries))) < len(entries):  # a child twice
            drawn = set()
            times = Counter(entries) if len(set(entries)) < len(entries) else None
        output_of, op_nodes, arrow, born = self._output_of_op, self.run.op_nodes, self._arrow, op.born
        for child, input_nr in entries:
            if child is None:
                continue
            src = output_of.get(child)
            if src is None:  # (an autograd node's id is op<vid>)
                child_op = op_nodes.get(child)
                src = child_op.id if child_op is not None else None
            source = nodes.get(src)
            if source is not None:
                if drawn is not None:
                    if src in drawn:
                        continue
                    drawn.add(src)
                count = times[(child, input_nr)] if times is not None else 1
                arrow(source, node, "flow", born, f"×{count}" if count > 1 else "")
        return node

    def _accumulate_node(self, op: OpNode) -> DrawNode:
        tensors = self.run.tensors
        leaf_info = tensors.get(op.leaf) if op.leaf is not None else None
        leaf_name = (leaf_info.get("name") if leaf_info else None) or "leaf"
        module = op.module
        if module is None and leaf_info is not None and leaf_info.get("kind") == "param":
            module = leaf_name.rpartition(".")[0] or None
        return DrawNode(op.id, "accumulate", "AccumulateGrad", f"into {leaf_name}.grad", op.born, op.vid,
                        module, op.line)

    def _take_tensor(self, tnode: TensorNode) -> DrawNode:
        """The node of tensor ``tnode``, drawn with the arrow from the autograd node that made it."""
        run = self.run
        info = tnode.info
        grad_fn = tnode.grad_fn
        producer = run.op_nodes.get(grad_fn) if grad_fn is not None else None
        named = run.tensors.get(tnode.tid)  # (tensor_title, its most common answer first: the script's name)
        name = named.get("name") if named else None
        if not name:
            name = run.tensor_title(tnode.tid, grad_fn)  # "output of linear", "tensor"
        if "v" in tnode.id:  # a new state of the tensor after an in-place op (t<tid>v<version>)
            name += f" (v{tnode.version})"
        if grad_fn is not None:
            draw_kind = "intermediate"
            module = producer.module if producer is not None else None
        else:
            kind = info.get("kind")
            if kind in ("param", "buffer"):
                draw_kind = "param" if info.get("requires_grad") else "input"
            else:
                draw_kind = "input_grad" if info.get("requires_grad") else "input"
            if draw_kind == "param":
                module = name.rpartition(".")[0] or None
            else:  # a model's buffer (running_mean) is in its module's box; made without grad inside a
                # module (an attention mask): that module's, else none
                module = buffer_module(run, tnode.tid)
                if module is None:
                    producer_op = run.producers.get(tnode.tid)
                    module = producer_op.get("module") if producer_op is not None else None
        node = DrawNode(tnode.id, draw_kind, name, self._shape_text(info), tnode.born, tnode.tid, module,
                        info.get("line"))
        self.nodes[node.id] = node
        if draw_kind in INPUT_KINDS:
            self.inputs.append(node.id)
        elif producer is not None:  # (an autograd node's id is op<vid>)
            source = self.nodes.get(producer.id)
            if source is not None:
                self._arrow(source, node, "flow", node.born)
                self._output_of_op.setdefault(grad_fn, node.id)
        return node

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
        """An arrow between two drawn nodes, the source possibly not placed yet (a leaf seen first as
        this op's input: the placement meets it). No two calls give one source, target and kind: a
        node's arrows are drawn when it is made, the run's side edges are each the run's once."""
        source_node, target_node = self.nodes[source], self.nodes[target]
        if not source_node.placed:
            self.placement.meet(source_node, target_node)
        self._arrow(source_node, target_node, kind, born, label)

    def _arrow(self, source: DrawNode, target: DrawNode, kind: str, born: int, label: str = "") -> None:
        """An arrow from a drawn node to one just made (not placed yet: nothing to tell the placement)."""
        source_id = source.id
        edge = DrawEdge(source_id, target.id, kind, born, label)
        self.edges.append(edge)
        out = self._out.get(source_id)
        if out is None:
            self._out[source_id] = [edge]
        else:
            out.append(edge)
        preds = target.preds
        if source_id not in preds:
            preds.append(source_id)


#: when an element of the run was born (the index of the event that made it)
_BORN = attrgetter("born")
#: the child of an entry of an autograd node's next_functions ``(child, input_nr)``
_FIRST = itemgetter(0)


def shape_text(info: dict) -> str:
    """A tensor's shape and dtype (``2×4 float32``), or its value where it has one (``scalar = 0.5``)."""
    shape = info.get("shape") or []
    dims = "×".join(map(str, shape)) if shape else "scalar"
    values = info.get("values")
    if values is not None and len(values) == 1:
        return f"{dims} = {summary_text({'shape': [], 'values': values})}"
    return f"{dims} {info.get('dtype', '')}".strip()
