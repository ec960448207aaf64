"""Tensor and node identity: ids for tensors and autograd nodes, names for tensors.

Tensors are tracked through weak references only and get an id (``tid``) the first time a
recorded op touches them; autograd nodes get an id (``vid``) stamped into ``node.metadata``,
with a sentinel whose death reports when autograd destroys the node. Names come from the
script's frames (the variable a tensor was bound to) and from root modules (parameters).
"""

from __future__ import annotations

import weakref

import torch
from torch.nn.parameter import is_lazy

from graphview.capture.state import (ACCUMULATE_GRAD, LIFE_KEY, RECOMPUTE_MODULE, VID_KEY, RecorderState,
                                     _keyed_ref, _Packed, _version)
from graphview.capture.script_names import ContainersSeen, bound, script_scopes
from graphview.capture.summaries import device_name, dtype_name, summarize


class _Life:
    """Put in a node's ``metadata``: it dies when autograd destroys the node, and says so
    (see NOTE [Deaths reported by finalisers] in state.py)."""

    __slots__ = ("rec", "vid")

    def __init__(self, rec, vid: int) -> None:
        self.rec = rec  # a weak reference to the recorder
        self.vid = vid

    def __del__(self) -> None:
        rec = self.rec()
        if rec is not None:
            rec._node_died(self.vid)


class _Stale:
    """A view's node that torch would rebuild if read (see ``TensorIdentity.grad_fn_of``): not read."""

    __slots__ = ("vid",)

    def __init__(self, vid):
        self.vid = vid



class TensorIdentity(RecorderState):
    """Ids and events for tensors and nodes; names for tensors."""

    def _register_pending(self, t: torch.Tensor, tid: int) -> None:
        self._pending_names.append([weakref.ref(t), tid, 0])
        if len(self._pending_names) > 256:
            del self._pending_names[:64]

    def flush_names(self, frame=None) -> None:
        """Give pending tensors the names the script bound them to, looking at script frames
        (see graphview/capture/script_names.py)."""
        pending = self._pending_names
        if not pending:
            return
        # quiet (see RecorderState.quiet), without its object and calls: a look before every op
        tls = self._tls
        depth = getattr(tls, "depth", 0)
        tls.depth = depth + 1
        try:
            if frame is None:
                frame, _ = self.user_frame(2)
            wanted = {}
            for entry in pending:
                t = entry[0]()
                if t is not None:
                    wanted[id(t)] = entry
            found: set[int] = set()
            if wanted:
                scopes = script_scopes(self.script, frame, self.extra_scopes)
                for scope in scopes:  # a variable's name first
                    # (none of its variables holds a tensor looked for: told without a loop in Python)
                    if wanted and not wanted.keys().isdisjoint(map(id, scope.values())):
                        self._emit_names(bound(scope), wanted, found)
                # then ``feats[0]``, only for data (no grad: a batch, a micro-batch): a result the script
                # did not bind waits a few ops for a name, and looking into every list for each is costly
                wanted = {key: entry for key, entry in wanted.items() if (t := entry[0]()) is not None and not t.requires_grad}
                for scope in scopes:
                    if not wanted:
                        break
                    self._emit_names(self._containers.items(scope), wanted, found)
            keep = []
            for entry in pending:
                entry[2] += 1
                if entry[1] not in found and entry[2] < 12 and entry[0]() is not None:
                    keep.append(entry)
            self._pending_names = keep
        finally:
            tls.depth = depth

    def _emit_names(self, named, wanted: dict, found: set) -> None:
        for name, value in named:
            entry = wanted.get(id(value))
            if entry is not None and entry[0]() is value and entry[1] not in found:
                found.add(entry[1])
                self._emit_fn({"ev": "name", "tid": entry[1], "name": name})
                del wanted[id(value)]

    def _kind(self, t: torch.Tensor, is_leaf: bool) -> str:
        if id(t) in self._buffers:
            return "buffer"
        grad_of = self._grad_of.get(id(t))
        if grad_of is not None and grad_of[0]() is t:
            return "grad"  # some leaf's .grad, read by the script
        if isinstance(t, torch.nn.Parameter):
            return "param"
        return "input" if is_leaf else "activation"

    def grad_fn_of(self, t: torch.Tensor):
        """``t.grad_fn``, read only where reading it cannot change or break ``t``.

        Reading ``grad_fn`` of a view whose base was modified in place since the view's node was
        made rebuilds that node, and raises for a view made under no_grad (torch forbids it). Plain
        Python reads it only where autograd needs it, in grad mode; under no_grad a changed view's
        node is left as torch holds it (the one last seen).
        """
        if not t._is_view() or torch.is_grad_enabled() and not torch.is_inference_mode_enabled():
            return t.grad_fn
        entry = self._tensors.get(id(t))
        known = entry is not None and entry[0]() is t
        if known and entry[5] == _version(t):
            return t.grad_fn  # nothing changed since the view's node was last read
        if not t.requires_grad:
            return None
        return _Stale(entry[3] if known else None)

    def tensor_ref(self, t: torch.Tensor, line: int | None, pending: bool = True, summary: dict | None = None) -> list:
        """``[tid, version]`` of ``t``; emits a ``tensor`` event if it is new or changed.

        ``summary``: ``summarize(t, hist=True)`` of ``t`` as it is now, if the caller has it;
        ``{}`` when the caller emits the value in an event right after (the optimizer's ``value``):
        the tensor event then says only what changed, without encoding the values twice."""
        key = id(t)
        entry = self._tensors.get(key)
        version = _version(t)
        if entry is not None and entry[2] == version == entry[5] and entry[0]() is t \
                and entry[4] == t.requires_grad and t.is_leaf == (entry[3] is None):
            # unchanged since it was last read in sync: its node too (torch gives a tensor another
            # node by a write in place, which changes its version, or takes it away, detach_(),
            # which leaves the version as it was but makes the tensor a leaf)
            return [entry[1], version]
        gf = self.grad_fn_of(t)
        if isinstance(gf, _Stale):
            gvid, is_leaf, synced = gf.vid, gf.vid is None, None
        else:
            gvid = self.node_vid(gf, line) if gf is not None else None
            is_leaf, synced = gf is None, version
        requires_grad = t.requires_grad
        if entry is not None and entry[0]() is t:
            if synced is None:
                synced = entry[5]
            if entry[2] == version and entry[3] == gvid and entry[4] == requires_grad:
                entry[5] = synced
                return [entry[1], version]
            entry[2:] = [version, gvid, requires_grad, synced]
            tid = entry[1]
            new = False
        else:
            tid = next(self._tids)
            self._tensors[key] = [self.tensor_ref_to(t), tid, version, gvid, requires_grad, synced]
            new = True
        base = t._base
        base_tid = None
        if base is not None:
            base_entry = self._tensors.get(id(base))
            if base_entry is not None and base_entry[0]() is base:
                base_tid = base_entry[1]
        name = self._names.get(key) if self._name_refs.get(key) is not None and self._name_refs[key]() is t else None
        kind = self._kind(t, is_leaf)
        leafish = kind != "activation"  # parameters, inputs, buffers: also a histogram
        if summary is None or not leafish:
            summary = summarize(t, norm=leafish, hist=leafish, send=True)  # (small: its values, see summarize)
        self._emit_fn(("tensor", tid, version, name, kind, list(t.shape), dtype_name(t.dtype), device_name(t.device),
                       requires_grad, is_leaf, gvid, base_tid, line, summary or None))
        if new and name is None and pending:
            self._register_pending(t, tid)
        return [tid, version]

    def tid_of(self, t: torch.Tensor) -> int | None:
        entry = self._tensors.get(id(t))
        if entry is not None and entry[0]() is t:
            return entry[1]
        return None

    def node_vid(self, fn, line: int | None = None) -> int:
        """The id of autograd node ``fn``; discovers (and emits) it and unknown ancestors."""
        md = fn.metadata
        vid = md.get(VID_KEY)
        if vid is not None and md[LIFE_KEY].rec is self._self_ref:
            return vid
        module = self._module_stack[-1] if self._module_stack else (RECOMPUTE_MODULE if self._recompute else None)
        stack = [(fn, False)]
        mine = self._self_ref
        while stack:
            node, expanded = stack.pop()
            if expanded:
                self._emit_node(node, line, module)
                continue
            md = node.metadata
            if VID_KEY in md and md[LIFE_KEY].rec is mine:
                continue
            # (a node an earlier recording in this process stamped, a parameter's AccumulateGrad:
            # stamped again, this recording's events introduce it)
            vid = md[VID_KEY] = next(self._vids)
            md[LIFE_KEY] = _Life(mine, vid)
            stack.append((node, True))
            for child, _ in node.next_functions:
                if child is not None:
                    cmd = child.metadata
                    if VID_KEY not in cmd or cmd[LIFE_KEY].rec is not mine:
                        stack.append((child, False))
        return fn.metadata[VID_KEY]

    def _emit_node(self, node, line, module) -> None:
        vid = node.metadata[VID_KEY]
        name = node.name()
        leaf = None
        seq = None
        if name == ACCUMULATE_GRAD:
            var = node.variable
            leaf = self.tensor_ref(var, line)[0]
        else:
            seq = node._sequence_nr()
        nxt = [[c.metadata[VID_KEY] if c is not None else None, nr] for c, nr in node.next_functions]
        self._emit_fn(("node", vid, name, nxt, seq, leaf, isinstance(node, torch.autograd.function.BackwardCFunction),
                       line, module))
        for attr, packed in self._saved_of(node):
            if isinstance(packed, _Packed):
                self._emit_fn(("own", packed.sid, vid, attr))
            else:  # torch saves wrapped Python numbers without calling hooks: account for them here
                sid = next(self._sids)
                self._unhooked.setdefault(vid, []).append(sid)
                event = self._saved_event(sid, packed, owner=vid, attr=attr)
                if self._recompute:
                    event["recompute"] = self._recompute[-1]
                    if event["kind"] == "input":  # a recompute's saved tensors come detached: tell them apart
                        event["kind"] = "param" if event["storage"] in self._parameter_storages() else "activation"
                self._emit_fn(event)

    def _parameter_storages(self) -> set[str]:
        """The storages of the named parameters (as ``saved`` events key them), once per backward."""
        bid = self._recompute[-1] if self._recompute else None
        cached = getattr(self, "_param_storage_cache", None)
        if cached is None or cached[0] != bid:
            storages = set()
            for ref in list(self._name_refs.values()):
                obj = ref()
                if isinstance(obj, torch.nn.Parameter) and not is_lazy(obj):  # (a lazy one has no storage yet)
                    storages.add(f"{obj.untyped_storage().data_ptr():x}")
            cached = self._param_storage_cache = (bid, storages)
        return cached[1]

    def _node_died(self, vid: int) -> None:
        if not self._active:
            return
        with self._lock:
            for sid in self._unhooked.pop(vid, ()):
                self._emit_held(("release", sid))
            self._emit_fn(("node_dead", vid))

    def _release_unhooked(self, vid: int) -> None:
        for sid in self._unhooked.pop(vid, ()):
            self._emit_held(("release", sid))

    def _saved_of(self, node):
        cls = type(node)
        attrs = self._saved_attr_cache.get(cls)
        if attrs is None:
            attrs = tuple(a[len("_raw_saved_"):] for a in dir(node) if a.startswith("_raw_saved_"))
            self._saved_attr_cache[cls] = attrs
        for attr in attrs:
            try:
                raw = getattr(node, "_raw_saved_" + attr)
            except Exception:  # noqa: BLE001 - undefined optional saved values
                continue
            items = raw if isinstance(raw, (tuple, list)) else (raw,)
            for i, item in enumerate(items):
                data = getattr(item, "data", None) if item is not None else None
                if isinstance(data, (_Packed, torch.Tensor)):
                    yield (attr if len(items) == 1 and not isinstance(raw, (tuple, list)) else f"{attr}[{i}]"), data
                elif data is not None:
                    self._foreign_saved.add(node.metadata[VID_KEY])

    def _note_grad(self, grad: torch.Tensor, leaf_tid: int) -> None:
        key = id(grad)
        known = self._grad_of.get(key)
        if known is None or known[0]() is not grad:  # its death takes the entry out (a run makes a .grad a step)
            self._grad_of[key] = (_keyed_ref(grad, self._on_grad_gone, key), leaf_tid)
        elif known[1] != leaf_tid:
            self._grad_of[key] = (known[0], leaf_tid)
