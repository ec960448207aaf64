"""The run model: a run's events turned into graph, memory and gradient history.

:class:`Run` consumes events one at a time (live, while a runner streams them, or all at once
from a trace file) and keeps, for every element of the autograd picture, the event index at
which it appeared and the index at which it was freed or released. The state at any index of
the timeline is then a filter, not a replay, which keeps scrubbing cheap.

Graph element ids (strings, stable within a run):

``op<vid>``            an autograd node (grad_fn or AccumulateGrad)
``t<tid>``             a tensor; ``t<tid>v<version>`` when an in-place op gave it a new grad_fn
``s<sid>``             a saved tensor
"""

from __future__ import annotations

import gc
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import count
from typing import Callable, Iterable, Iterator

# (ACCUMULATE_GRAD, BackwardCall and GradEntry are read from here too: they are the run's)
from graphview.core.backward_intake import ACCUMULATE_GRAD, BackwardCall, BackwardIntake, GradEntry
from graphview.core.event_log import EventLog
from graphview.core.memory_arrays import MemoryArrays
from graphview.core.queries.gradients import GradientLedger
from graphview.core.queries.info import run_info
from graphview.core.queries.memory import MemoryQueries
from graphview.core.queries.names import NameQueries
from graphview.core.queries.outcome import Outcome
from graphview.core.queries.reachability import Reachability
from graphview.core.queries.values import ValueQueries
from graphview.core.run_edges import Edge, RunEdges
from graphview.core.saved_bytes import SavedBytes


def _lean(ev: dict, keys: tuple) -> dict:
    """``ev`` with the short strings of ``keys`` interned: what the run keeps of an event shares
    ``"float32"``, ``"cpu"``, an op's or a module's name with every other event that has it, not
    a copy of its own (a string JSON decodes is new each time)."""
    get = ev.get
    for key in keys:
        value = get(key)
        if type(value) is str and len(value) <= 80:
            ev[key] = _intern(value)
    return ev


_intern = sys.intern


# the strings of each kind of event that the run keeps (in a kept event, or copied into its model)
_TENSOR_STRINGS = ("name", "kind", "dtype", "device")
_NODE_STRINGS = ("name", "module")
_OP_STRINGS = ("op", "module", "module_type", "mode")
_SAVED_STRINGS = ("storage", "device", "kind", "dtype", "attr")


@dataclass(slots=True)
class TensorNode:
    """One tensor as it appears in the graph (a tensor object, or a new grad_fn state of it)."""

    id: str
    tid: int
    version: int
    born: int
    grad_fn: int | None
    info: dict  # the latest ``tensor`` event for this state


@dataclass(slots=True)
class OpNode:
    id: str
    vid: int
    name: str
    born: int
    next: list  # [[vid | None, input_nr], ...]
    seq: int | None
    leaf: int | None  # tid of the leaf an AccumulateGrad feeds
    custom: bool
    line: int | None = None
    module: str | None = None
    op: str | None = None  # the script-level op that created it (e.g. "mul", "linear")
    freed: int | None = None  # index at which a backward without retain_graph consumed it
    dead: int | None = None  # index at which autograd destroyed it (nothing referenced it)
    executed: list = field(default_factory=list)  # [(bid, index), ...]


@dataclass(slots=True)
class SavedNode:
    id: str
    sid: int
    born: int
    bytes: int
    storage: str
    device: str
    kind: str
    shape: list
    dtype: str
    owner: int | None
    attr: str | None
    released: int | None = None
    src: int | None = None  # the autograd node that made it (None: a leaf, or the owner's own result)

    def held_at(self, index: int) -> bool:
        """Whether autograd holds it after event ``index``: saved by then, not released yet."""
        return self.born <= index and (self.released is None or self.released > index)


class Run(BackwardIntake, Outcome, NameQueries, ValueQueries, GradientLedger, Reachability, MemoryQueries):
    """All that is known about one run, built from its events.

    The class takes the events in (:meth:`add`, :meth:`extend`: each goes to the handler of its
    kind, ``_on_<kind>``, found in :data:`_HANDLERS`; backward's handlers are its part
    :class:`~graphview.core.backward_intake.BackwardIntake`) and keeps the tables; the questions
    asked of them are its parts in :mod:`graphview.core.queries`, one module per kind of question
    (how the run went, names, values and versions, the gradient ledger, reachability, memory), and
    :meth:`info` is built from those."""

    def __init__(self, events: Iterable[dict] = ()) -> None:
        self.events = EventLog()  # reads like a list of the event dicts; compact for a big run
        self.start: dict | None = None
        self.end: dict | None = None
        self.tensors: dict[int, dict] = {}  # tid -> latest tensor event (+ "name")
        self.aliases: dict[int, list[str]] = {}  # tid -> the model's other names for it (a tied weight's)
        self.values: dict[int, list[tuple[int, dict]]] = {}  # tid -> [(index, value summary)]
        self.tensor_nodes: dict[str, TensorNode] = {}
        self._current_tensor_node: dict[int, str] = {}
        self._tensor_nodes_of: dict[int, list[TensorNode]] = {}
        self.op_nodes: dict[int, OpNode] = {}
        self.saved: dict[int, SavedNode] = {}
        self.saved_by_owner: dict[int, list[SavedNode]] = {}  # vid -> saved tensors it holds
        # (device, storage) -> the saved tensors of it that a node holds (the memory queries' owners_of)
        self.owned_by_storage: dict[tuple, list[SavedNode]] = {}
        # saved by no node graphview sees, not by a checkpoint's recompute (what a non-reentrant
        # checkpoint keeps for its recompute, graphview.core.checkpoint_kept), in the order saved
        self.unowned_saved: list[SavedNode] = []
        # the graph's edges (read as .edges; autograd's own made into Edges only when first read)
        self._edges = RunEdges()
        self._note_edge = self._edges.note
        self.ops: list[tuple[int, dict]] = []  # (index, op event)
        self.producers: dict[int, dict] = {}  # tid -> the last op event that output it
        self.made_by: dict[int, dict] = {}  # tid -> the first op event that output it (none: made unseen)
        # tid -> the line of its first event: where it was made, or where the script first used a
        # tensor made unseen (a layer's weight: later events carry the optimizer's line)
        self.first_line: dict[int, int] = {}
        self.tensor_dead: dict[int, int] = {}  # tid -> when torch freed the tensor
        self.first_root_at: dict[int, int] = {}  # tid -> index of the first backward started from it
        self._last_op = -1
        self.steps: list[dict] = []  # {"step", "start", "end"}
        self.backwards: dict[int, BackwardCall] = {}
        self.grads: dict[int, list[GradEntry]] = {}
        self.errors: list[tuple[int, dict]] = []
        self.optimizer_steps: list[tuple[int, dict]] = []
        self.stdout: list[tuple[int, str, str]] = []
        self.devices: set[str] = set()
        # memory: storage refcounts and the change points of live saved bytes
        self._saved_bytes = SavedBytes()
        self.memory_points: list[tuple[int, str, int, int, int]] = []  # (index, device, act, param, input)
        self.alloc_points: list[tuple[int, str, int]] = []
        self._points_by_device: dict[str, list] = {}
        self._allocs_by_device: dict[str, list] = {}
        self._series: dict[str, MemoryArrays] = {}
        self._step: int | None = None
        self._reachable_cache: dict[int, tuple] = {}
        self._tensor_nodes_with_grad_fn: dict[int, list[TensorNode]] = {}
        self.module_types: dict[str, str] = {}  # module path -> class name (``Linear``)
        self.module_entered: dict[str, int] = {}  # module path -> the index of its first call
        self.none_grad_reads: dict[int, int] = {}  # tid -> where the script first read its .grad and got None
        self._versions: dict[int, list[tuple[int, int]]] = {}  # tid -> (index, version) as it changed
        self.extend(events)

    # ------------------------------------------------------------------ ingest
    def add(self, event: dict, line: bytes | None = None) -> int:
        """Take in the next event (``line``: its JSON text, when it was read from a trace)."""
        index = len(self.events)
        self.events.append(event, line)
        kind = event.get("ev")
        handler = _HANDLERS.get(kind) if type(kind) is str else None
        if handler is not None:
            handler(self, index, event)
        return index

    def extend(self, events: Iterable[dict]) -> None:
        """Take in events in order; a :class:`~graphview.core.event_log.Piece` brings its lines.

        The same as :meth:`add` of each in turn: the events go into the log together, then each is
        handled (a handler reads earlier events only, and those are in the log already)."""
        lines = getattr(events, "lines", None)
        if not isinstance(events, list):
            events = list(events)
        # a big list (a whole trace) a chunk at a time: each chunk's events are still in the
        # processor's cache when their handlers read them again (the same as one call for all)
        for start in range(0, len(events), _CHUNK):
            self._extend(events[start:start + _CHUNK], lines[start:start + _CHUNK] if lines is not None else None)

    def _extend(self, events: list[dict], lines: list | None) -> None:
        first = len(self.events)
        kinds = self.events.extend(events, lines)
        try:
            handlers = list(map(_HANDLERS.get, kinds))  # (in C; None for a kind without a handler)
        except TypeError:  # a kind that cannot be a key (an odd event)
            handlers = [_HANDLERS.get(kind) if type(kind) is str else None for kind in kinds]
        for index, event, handler in zip(count(first), events, handlers):
            if handler is not None:
                handler(self, index, event)

    def __len__(self) -> int:
        return len(self.events)

    @property
    def edges(self) -> list[Edge]:
        """Every edge of the graph, in the order the run made them (see :mod:`graphview.core.run_edges`)."""
        return self._edges.all()

    @edges.setter
    def edges(self, edges: list[Edge]) -> None:
        """The edges so far replaced by ``edges`` (a test's run model that lost some)."""
        self._edges.replace(edges)

    @property
    def side_edges(self) -> list[Edge]:
        """The edges besides autograd's own structure: an op's input without grad, a detach, an op
        under no_grad (:data:`~graphview.core.run_edges.SIDE_KINDS`), in the order the run made them."""
        return self._edges.side

    def _on_run_start(self, index: int, ev: dict) -> None:
        self.start = ev
        for device in ev.get("devices") or ():
            self.devices.add(device)

    def _on_run_end(self, index: int, ev: dict) -> None:
        self.end = ev
        if self.steps and self.steps[-1]["end"] is None:
            self.steps[-1]["end"] = index

    def _on_module_enter(self, index: int, ev: dict) -> None:
        self.module_entered.setdefault(ev["path"], index)
        if ev.get("type"):
            self.module_types.setdefault(ev["path"], ev["type"])

    def _on_step_start(self, index: int, ev: dict) -> None:
        self._step = ev["step"]
        self.steps.append({"step": ev["step"], "start": index, "end": None})

    def _on_step_end(self, index: int, ev: dict) -> None:
        if self.steps:
            self.steps[-1]["end"] = index
            if "seconds" in ev:
                self.steps[-1]["seconds"] = ev["seconds"]

    def _on_stdout(self, index: int, ev: dict) -> None:
        self.stdout.append((index, "stdout", ev.get("text", "")))

    def _on_stderr(self, index: int, ev: dict) -> None:
        self.stdout.append((index, "stderr", ev.get("text", "")))

    def _on_tensor(self, index: int, ev: dict) -> None:
        tid = ev["tid"]
        tensors = self.tensors
        previous = tensors.get(tid)
        info = dict(ev)
        info["ev"] = "tensor"  # equal to the decoded one (it is this handler's kind), and shared
        _lean(info, _TENSOR_STRINGS)
        if previous is not None:
            if info.get("name") is None:
                info["name"] = previous.get("name")
        elif info.get("line") is not None:
            self.first_line[tid] = info["line"]
        tensors[tid] = info
        self._note_value(tid, index, ev)
        version = ev.get("version")
        if version is not None:  # (_note_version, inline: every tensor event has one)
            history = self._versions.get(tid)
            if history is None:
                self._versions[tid] = [(index, version)]
            elif history[-1][1] != version:
                history.append((index, version))
        self.devices.add(ev.get("device", "cpu"))
        node_id = self._current_tensor_node.get(tid)
        node = self.tensor_nodes.get(node_id) if node_id else None
        grad_fn = ev.get("grad_fn")
        if node is None or node.grad_fn != grad_fn:
            self._new_tensor_node(index, ev, tid, info, node is None)
        else:
            node.version = ev.get("version", 0)
            node.info = info

    def _new_tensor_node(self, index: int, ev: dict, tid: int, info: dict, first: bool) -> None:
        """A node for a tensor first seen, or for a new grad_fn state of one (``first``: not seen before)."""
        node_id = f"t{tid}" if first else f"t{tid}v{ev.get('version', 0)}"
        node = TensorNode(node_id, tid, ev.get("version", 0), index, ev.get("grad_fn"), info)
        self.tensor_nodes[node_id] = node
        of = self._tensor_nodes_of.get(tid)
        if of is None:
            self._tensor_nodes_of[tid] = [node]
        else:
            of.append(node)
        current = self._current_tensor_node
        current[tid] = node_id
        if node.grad_fn is not None:
            self._note_edge(("grad_fn", node_id, node.grad_fn, index))
            self._tensor_nodes_with_grad_fn.setdefault(node.grad_fn, []).append(node)
        base = ev.get("base")
        if base is not None and base in current:
            self._note_edge(("view", node_id, current[base], index))

    def _on_name(self, index: int, ev: dict) -> None:
        info = self.tensors.get(ev["tid"])
        if info is not None and not info.get("name"):
            info["name"] = ev["name"]
            for node in self._tensor_nodes_of.get(ev["tid"], ()):
                node.info["name"] = ev["name"]
        if ev.get("also"):  # a tied weight: lm_head.weight is transformer.wte.weight
            self.aliases[ev["tid"]] = list(ev["also"])
        if info is not None and ev.get("kind"):  # a model's buffer, known before its model was first called
            info["kind"] = ev["kind"]
            for node in self._tensor_nodes_of.get(ev["tid"], ()):
                node.info["kind"] = ev["kind"]

    def _note_value(self, tid: int, index: int, ev: dict) -> None:
        if "values" in ev:
            key = "values"
        elif "stats" in ev:
            key = "stats"
        else:
            return
        # (the tensor's shape looked up only where the event has none: a value event may not)
        summary = {"shape": ev["shape"] if "shape" in ev else self.tensors.get(tid, {}).get("shape"), key: ev[key]}
        history = self.values.get(tid)
        if history is None:
            self.values[tid] = [(index, summary)]
        elif history[-1][1] != summary:
            history.append((index, summary))

    def _note_version(self, tid: int, index: int, ev: dict) -> None:
        version = ev.get("version")
        if version is not None:
            history = self._versions.setdefault(tid, [])
            if not history or history[-1][1] != version:
                history.append((index, version))

    def _on_value(self, index: int, ev: dict) -> None:
        self._note_value(ev["tid"], index, ev)
        self._note_version(ev["tid"], index, ev)
        info = self.tensors.get(ev["tid"])
        if info is not None:
            for key in ("values", "stats"):
                info.pop(key, None)
            for key in ("values", "stats", "version"):
                if key in ev:
                    info[key] = ev[key]

    def _on_node(self, index: int, ev: dict) -> None:
        vid = ev["vid"]
        _lean(ev, _NODE_STRINGS)
        get = ev.get
        node_id = f"op{vid}"
        # (id, vid, name, born, next, seq, leaf, custom, line, module): by position, a big run makes 10^5
        node = OpNode(node_id, vid, ev["name"], index, list(map(tuple, get("next") or ())), get("seq"),
                      get("leaf"), bool(get("custom")), get("line"), get("module"))
        self.op_nodes[vid] = node
        note = self._note_edge
        for position, (child, input_nr) in enumerate(node.next):
            if child is not None:
                note(("next", node_id, child, index, input_nr, position))
        if node.leaf is not None:
            leaf_node = self._current_tensor_node.get(node.leaf)
            if leaf_node is not None:
                note(("accumulate", node_id, leaf_node, index))

    def _on_node_dead(self, index: int, ev: dict) -> None:
        node = self.op_nodes.get(ev["vid"])
        if node is not None:
            node.dead = index

    def _on_tensor_dead(self, index: int, ev: dict) -> None:
        self.tensor_dead[ev["tid"]] = index

    def _on_op(self, index: int, ev: dict) -> None:
        ev["ev"] = "op"  # equal to the decoded one (it is this handler's kind), and shared
        self.ops.append((index, _lean(ev, _OP_STRINGS)))
        vid = ev.get("grad_fn")
        node = self.op_nodes.get(vid) if vid is not None else None
        if node is not None and node.op is None and node.born >= self._last_op:
            node.op = ev["op"]
            node.line = ev.get("line", node.line)
            node.module = ev.get("module", node.module)
        inputs = [self._current_tensor_node.get(tid) for tid, _ in ev.get("inputs") or ()]
        outputs = [self._current_tensor_node.get(tid) for tid, _ in ev.get("outputs") or ()]
        if node is not None:
            for tid_version, src in zip(ev.get("inputs") or (), inputs):
                info = self.tensors.get(tid_version[0])
                if src and info is not None and not info.get("requires_grad"):
                    self._edges.add_side(src, node.id, "input", index)
        elif ev.get("op") not in ("detach", "detach_"):
            for src in inputs:
                for dst in outputs:
                    if src and dst and src != dst:
                        self._edges.add_side(src, dst, "no_grad_op", index, (("op", ev.get("op")),))
        self._last_op = index
        made_by = self.made_by
        for tid, _ in ev.get("outputs") or ():
            self.producers[tid] = ev
            if tid not in made_by:
                made_by[tid] = ev

    def _on_detach(self, index: int, ev: dict) -> None:
        src = self._current_tensor_node.get(ev["src"])
        dst = self._current_tensor_node.get(ev["dst"])
        if src and dst:
            self._edges.add_side(src, dst, "detach", index, (("forced", bool(ev.get("forced"))),))

    def _on_saved(self, index: int, ev: dict) -> None:
        _lean(ev, _SAVED_STRINGS)
        sid = ev["sid"]
        get = ev.get
        # (id, sid, born, bytes, storage, device, kind, shape, dtype, owner, attr), by position
        node = SavedNode(f"s{sid}", sid, index, ev["bytes"], ev["storage"], ev["device"], ev["kind"],
                         get("shape") or [], get("dtype", ""), get("owner"), get("attr"), src=get("src"))
        self.saved[sid] = node
        if node.owner is not None:
            self.saved_by_owner.setdefault(node.owner, []).append(node)
            self.owned_by_storage.setdefault((node.device, node.storage), []).append(node)
            self._note_edge(("saved", node.owner, node.id, index, node.attr))
        elif get("recompute") is None:
            self.unowned_saved.append(node)
        if self._saved_bytes.save(node.device, node.storage, node.kind, node.bytes):
            self._memory_point(index, node.device)

    def _on_own(self, index: int, ev: dict) -> None:
        node = self.saved.get(ev["sid"])
        if node is not None and node.owner is None:
            node.owner = ev["owner"]
            node.attr = ev.get("attr")
            self.saved_by_owner.setdefault(node.owner, []).append(node)
            self.owned_by_storage.setdefault((node.device, node.storage), []).append(node)
            self._note_edge(("saved", node.owner, node.id, node.born, node.attr))

    def _on_release(self, index: int, ev: dict) -> None:
        node = self.saved.get(ev["sid"])
        if node is None or node.released is not None:
            return
        node.released = index
        if self._saved_bytes.release(node.device, node.storage):
            self._memory_point(index, node.device)

    def _memory_point(self, index: int, device: str) -> None:
        self.devices.add(device)
        point = (index, device, *self._saved_bytes.by_kind(device))
        self.memory_points.append(point)
        self._points_by_device.setdefault(device, []).append(point)

    def _on_alloc(self, index: int, ev: dict) -> None:
        point = (index, ev["device"], ev["bytes"])
        self.alloc_points.append(point)
        self._allocs_by_device.setdefault(ev["device"], []).append(point)
        self.devices.add(ev["device"])

    def _on_optimizer_step(self, index: int, ev: dict) -> None:
        self.optimizer_steps.append((index, ev))

    def _on_error(self, index: int, ev: dict) -> None:
        self.errors.append((index, ev))

    # ------------------------------------------------------------------ queries
    def info(self) -> dict:
        """The summary ``graphview info`` prints (:func:`graphview.core.queries.info.run_info`)."""
        return run_info(self)


#: events :meth:`Run.extend` puts into the log at once before handling them (a few hundred kilobytes of dicts)
_CHUNK = 256
#: kind -> the method of :class:`Run` that takes in an event of that kind (``_on_<kind>``)
_HANDLERS: dict[str, Callable] = {name[4:]: getattr(Run, name) for name in dir(Run) if name.startswith("_on_")}


@contextmanager
def bulk_load() -> Iterator[None]:
    """Building a big run creates ~10^5 objects that all live on: pause the cyclic collector
    (whose full passes would re-scan them again and again, doubling load time), then freeze
    what was built so later collections skip it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
        gc.freeze()
