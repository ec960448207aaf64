"""Backward: a wrapper around ``torch.autograd._engine_run_backward``, the one function both
``Tensor.backward`` and ``torch.autograd.grad`` go through.

For the duration of one call it puts a pre-hook and a hook on every node of the graph, so the
engine's real execution order, the gradients in and out of every node and every accumulation
into a leaf's ``.grad`` are recorded. A checkpoint's recompute inside backward is recorded too:
the ops mechanism's mode is pushed while the node that recomputes runs.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections import OrderedDict
from contextlib import ExitStack
from functools import partial
from typing import Any

import torch

from graphview.capture.hooks.ops import _OpMode
from graphview.capture.identity import TensorIdentity
from graphview.capture.state import _identity, tracing
from graphview.capture.summaries import LightSummaries, summarize
from graphview.core.events import FULL_VALUES_MAX

_REENTRANT_CHECKPOINT = "CheckpointFunctionBackward"
#: a node's event carries the values of at most this many of its gradients, to be summarized by the
#: channel's reader (see NOTE [Values sent to be summarized] in graphview/core/value_stats.py): at most
#: 768 KiB, within a batch of the channel (PICKLE_CAP); a node of more gradients has them summarized here
SENT_PER_EVENT = 6
_ACCUMULATE_GRAD_TYPE = torch._C._functions.AccumulateGrad  # a leaf's node (its name() is state.ACCUMULATE_GRAD)
_NO_EDGES: frozenset = frozenset()


class BackwardHooks(TensorIdentity):
    """The backward mechanism."""

    def install_backward(self, stack: ExitStack) -> None:
        self._orig_engine = torch.autograd.graph._engine_run_backward
        self.patch(stack, torch.autograd.graph, "_engine_run_backward", self._engine_run_backward)
        self.patch(stack, torch.autograd, "_engine_run_backward", self._engine_run_backward)
        register = torch.Tensor.register_post_accumulate_grad_hook
        self.patch(stack, torch.Tensor, "register_post_accumulate_grad_hook",
                   self._accumulated_first(register))

    def _accumulated_first(self, register):
        """A script's post-accumulate-grad hook (an optimizer step fused into backward) runs inside
        the leaf's AccumulateGrad, before the node's own hooks: the ``accumulate`` event came after
        the step and ``zero_grad`` it made (the gradient read None). Registered while recording,
        it first lets the accumulation be told, as it was."""
        recorder_ref = self._self_ref

        def register_post_accumulate_grad_hook(tensor, hook):
            def told_first(leaf):
                recorder = recorder_ref()
                if recorder is not None:
                    recorder._accumulated_now(leaf)
                return hook(leaf)

            return register(tensor, told_first)

        return register_post_accumulate_grad_hook

    def _engine_run_backward(self, t_outputs, *args, **kwargs):
        original = self._orig_engine
        if self._suspend or not self._active or tracing():
            return original(t_outputs, *args, **kwargs)
        args = list(args)
        while len(args) < 4:
            args.append(None)
        forced = []
        if self.options.create_graph and not args[2]:
            args[2] = True
            forced.append("create_graph")
        if self.options.retain_graph and not args[1]:
            args[1] = True
            forced.append("retain_graph")
        api = "backward" if kwargs.get("accumulate_grad", True) else "grad"
        bid = next(self._bids)
        self.backward_count += 1
        with self.at_work():
            input_tids, line = self._backward_started(bid, api, t_outputs, args, forced)
            hooks = self._hook_graph(bid, t_outputs, line, retain_graph=bool(args[1]))
        self._bw_current.append(None)
        ok, result = False, None
        try:
            result = original(t_outputs, *args, **kwargs)
            ok = True
            return result
        except BaseException as exc:
            setattr(exc, "_graphview_vid", self._bw_current[-1])
            setattr(exc, "_graphview_bid", bid)
            raise
        finally:
            self._bw_current.pop()
            hooks.remove()
            if self._accumulating:  # (an AccumulateGrad that failed before its hook ran)
                for key, pending in list(self._accumulating.items()):
                    if pending[0].bid == bid:
                        del self._accumulating[key]
            with self.at_work():
                self._backward_finished(bid, api, ok, result, input_tids, retain_graph=bool(args[1]))

    def _backward_started(self, bid: int, api: str, t_outputs, args: list, forced: list) -> tuple[list, int | None]:
        """The ``backward_start`` event: roots, seeds, inputs, options. Returns (input tids, line)."""
        grad_tensors, retain_graph, create_graph, inputs = args[:4]
        frame, _ = self.user_frame(3)
        line = frame.f_lineno if frame else None
        self.flush_names(frame)
        self._check_mode(line)
        roots, root_tids = [], []
        for t in t_outputs:
            if isinstance(t, torch.Tensor):
                root_tids.append(self.tensor_ref(t, line)[0])
                fn = t.grad_fn
            else:  # GradientEdge
                fn = t.node
            roots.append(self.node_vid(fn, line) if fn is not None else None)
        seeds = [summarize(g) for g in (grad_tensors or ())]
        input_tids = [self.tensor_ref(t, line)[0] for t in (inputs or ()) if isinstance(t, torch.Tensor)]
        self._emit_fn({
            "ev": "backward_start", "bid": bid, "api": api, "roots": roots, "root_tensors": root_tids,
            "seeds": seeds, "retain_graph": bool(retain_graph), "create_graph": bool(create_graph),
            "inputs": input_tids, "forced": forced, "line": line,
        })
        return input_tids, line

    def _hook_graph(self, bid: int, t_outputs, line: int | None, retain_graph: bool) -> "_NodeHooks":
        """Walk the graph once: every node gets a pre-hook and a hook for this call (removed
        together by the returned :class:`_NodeHooks`). A node fed by exactly one edge receives
        exactly what that edge sent: its incoming gradient is not summarized twice (the event
        names the edge instead).

        The hooks are ``functools.partial`` objects over one :class:`_BackwardCall`: a graph of
        thousands of nodes gets few long-lived Python objects (closures and their cells made
        the collector scan the whole heap twice more per backward)."""
        nodes: dict[int, Any] = {}
        feeder: dict[int, tuple] = {}  # vid -> (consumer vid, index) of the one edge feeding it
        # vid -> indices of its edges into a leaf's AccumulateGrad, or into a node that only
        # passes the gradient on to one (the weight.t() of a linear layer)
        into_leaf: dict[int, set] = {}
        fed_more: set[int] = set()  # vids fed by more than one edge
        stack = [t.grad_fn if isinstance(t, torch.Tensor) else t.node for t in t_outputs]
        root_vids = {self.node_vid(node, line) for node in stack if node is not None}
        while stack:
            node = stack.pop()
            if node is None:
                continue
            vid = self.node_vid(node, line)
            if vid in nodes:
                continue
            nodes[vid] = node
            for index, (child, _) in enumerate(node.next_functions):
                if child is not None:
                    child_vid = self.node_vid(child, line)
                    if type(child) is _ACCUMULATE_GRAD_TYPE or _feeds_only_a_leaf(child):
                        into_leaf.setdefault(vid, set()).add(index)
                    if child_vid in feeder:
                        fed_more.add(child_vid)
                    else:
                        feeder[child_vid] = (vid, index)
                    stack.append(child)
        call = _BackwardCall(bid, releases=not retain_graph)
        # bound once: the partials share them (a bound method each was 10,000 more objects)
        prehook, hook = self._bw_prehook, self._bw_hook
        accumulate_prehook, accumulate_hook = self._bw_accumulate_prehook, self._bw_accumulate_hook
        with _NodeHooks() as hooks:
            for vid, node in nodes.items():
                from_edge = feeder.get(vid) if vid not in fed_more and vid not in root_vids else None
                if type(node) is _ACCUMULATE_GRAD_TYPE:
                    leaf = node.variable
                    leaf_ref = weakref.ref(leaf)
                    tid = self.tensor_ref(leaf, line)[0]
                    node.register_prehook(partial(accumulate_prehook, call, vid, from_edge, leaf_ref, tid))
                    node.register_hook(partial(accumulate_hook, call, vid, leaf_ref, tid))
                else:
                    # its edges into a leaf's AccumulateGrad are summarized exactly, as the leaf's .grad is
                    node.register_prehook(partial(prehook, call, vid, from_edge))
                    node.register_hook(partial(hook, call, vid, into_leaf.get(vid, _NO_EDGES)))
                if vid in self._foreign_saved or node.name() == _REENTRANT_CHECKPOINT:
                    self._watch_recompute(node, bid)
        return hooks

    def _backward_finished(self, bid: int, api: str, ok: bool, result, input_tids: list, retain_graph: bool) -> None:
        """``grad_result`` for ``autograd.grad``, ``tensor_grad`` for retained grads it changed, ``backward_end``."""
        if ok and api == "grad":
            for tid, g in zip(input_tids, result):
                self._emit_fn({"ev": "grad_result", "bid": bid, "tid": tid, "grad": summarize(g, hist=True)})
        if ok:
            for tid, ref in list(self._retained.items()):
                t = ref()
                if t is None:
                    del self._retained[tid]
                elif t.grad is not None:
                    state = _identity(t.grad)
                    if self._retained_state.get(tid) != state:  # this backward changed it
                        self._retained_state[tid] = state
                        self._emit_fn({"ev": "tensor_grad", "bid": bid, "tid": tid, "grad": summarize(t.grad, hist=True)})
        self._emit_held({"ev": "backward_end", "bid": bid, "ok": ok, "freed": ok and not retain_graph})

    def _watch_recompute(self, node, bid: int) -> None:
        """Record the ops a checkpoint's recompute runs inside this node's backward.

        torch runs backward with no torch function mode active, so the recompute (reentrant: in
        the checkpoint node's own backward; non-reentrant: when a node unpacks the saved values
        checkpoint manages) is invisible to the recording mode: push it for the node's run."""
        recorder = self
        entered: list = []

        def enter(grad_outputs):
            mode = _OpMode(recorder)
            mode.__enter__()
            entered.append(mode)
            recorder._recompute.append(bid)
            return None

        def leave(grad_inputs, grad_outputs):
            if entered:
                entered.pop().__exit__(None, None, None)
                recorder._recompute.pop()
            return None

        node.register_prehook(enter)
        node.register_hook(leave)

    def _bw_prehook(self, call: "_BackwardCall", vid: int, from_edge: tuple | None, grad_outputs) -> None:
        with self.at_work():
            self._node_starts(call, vid, from_edge, grad_outputs, exact=False)
        return None

    def _node_starts(self, call: "_BackwardCall", vid: int, from_edge: tuple | None, grad_outputs, exact: bool) -> None:
        """The ``bw_node`` event: node ``vid`` is about to run on ``grad_outputs`` (at work already)."""
        if self._bw_current:
            self._bw_current[-1] = vid
        # the gradient arriving is the very tensor the single feeding edge sent, unchanged
        # (a user's tensor hook may have replaced or modified it: then summarize it again)
        if (from_edge is not None and len(grad_outputs) == 1 and grad_outputs[0] is not None
                and call.sent.get(from_edge) == _identity(grad_outputs[0])):
            # grads_in None, from_edge [consumer vid, index]: its grads_out[index]
            self._emit_fn(("bw_node", call.bid, vid, None, list(from_edge)))
        else:
            send = len(grad_outputs) <= SENT_PER_EVENT
            self._emit_fn(("bw_node", call.bid, vid, [call.light.summary(g, exact, send) for g in grad_outputs], None))

    def _bw_hook(self, call: "_BackwardCall", vid: int, into_leaf: set, grad_inputs, grad_outputs) -> None:
        with self.at_work():
            sent = call.sent
            for index, g in enumerate(grad_inputs):
                if g is not None:
                    sent[(vid, index)] = _identity(g)
            if call.releases:  # the engine releases the node's saved variables right after it runs
                self._release_unhooked(vid)
            light, send = call.light.summary, len(grad_inputs) <= SENT_PER_EVENT
            self._emit_held(("bw_node_done", call.bid, vid,
                             [light(g, index in into_leaf, send) for index, g in enumerate(grad_inputs)]))
        return None

    def _bw_accumulate_prehook(self, call: "_BackwardCall", vid: int, from_edge: tuple | None, leaf_ref,
                               tid: int, grad_outputs) -> None:
        with self.at_work():
            self._node_starts(call, vid, from_edge, grad_outputs, exact=True)  # what goes into .grad: exact, as .grad
            leaf = leaf_ref()
            call.grad_was_none[vid] = leaf is None or leaf.grad is None
            incoming = grad_outputs[0] if len(grad_outputs) == 1 else None
            if incoming is not None:
                call.arrived[vid] = _identity(incoming)
            if leaf is not None and incoming is not None and leaf._post_accumulate_grad_hooks:
                # (see _accumulated_first) not the gradient itself: held, torch would copy it into
                # .grad instead of taking it
                self._accumulating[id(leaf)] = (call, vid, leaf_ref, tid, _identity(incoming), incoming.numel())
        return None

    def _accumulated_now(self, leaf) -> None:
        """The ``accumulate`` event of ``leaf``'s AccumulateGrad, told from inside it (a script's
        post-accumulate-grad hook is about to run)."""
        pending = self._accumulating.pop(id(leaf), None)
        if pending is not None and pending[2]() is leaf:
            call, vid, leaf_ref, tid, incoming, numel = pending
            self._accumulated(call, vid, leaf_ref, tid, incoming, numel, None)
            call.told.add(vid)

    def _bw_accumulate_hook(self, call: "_BackwardCall", vid: int, leaf_ref, tid: int, grad_inputs,
                            grad_outputs) -> None:
        """The ``accumulate`` event. Its increment is the gradient the node's ``bw_node`` event
        showed arriving (the same tensor, unchanged): then the event leaves ``increment`` out and
        readers take the node's incoming gradient. When ``.grad`` was None and is now that very
        tensor (autograd stole it), a small one's values are the increment's: ``grad`` is left
        out too. Each is still written in full whenever anything could have changed it."""
        with self.at_work():
            if vid in call.told:  # told already, before a script's hook changed .grad
                call.told.discard(vid)
            else:
                leaf = leaf_ref()
                if leaf is not None:
                    self._accumulating.pop(id(leaf), None)
                incoming = grad_outputs[0] if len(grad_outputs) == 1 else None
                self._tell_accumulated(call, vid, leaf_ref, tid, _identity(incoming) if incoming is not None else None,
                                       incoming.numel() if incoming is not None else 0, grad_outputs)
            self._emit_held(("bw_node_done", call.bid, vid, []))
        return None

    def _accumulated(self, call: "_BackwardCall", vid: int, leaf_ref, tid: int, incoming: tuple | None,
                     numel: int, grad_outputs) -> None:
        """The ``accumulate`` event of AccumulateGrad ``vid`` (see :meth:`_bw_accumulate_hook`):
        ``incoming`` is the ``_identity`` of the gradient it received (``numel`` values), and
        ``grad_outputs`` that gradient (None where it is the one the node's bw_node showed)."""
        with self.at_work():
            self._tell_accumulated(call, vid, leaf_ref, tid, incoming, numel, grad_outputs)

    def _tell_accumulated(self, call: "_BackwardCall", vid: int, leaf_ref, tid: int, incoming: tuple | None,
                          numel: int, grad_outputs) -> None:
        """:meth:`_accumulated`, at work already."""
        leaf = leaf_ref()
        first = call.grad_was_none.get(vid, True)
        increment = shown = False  # (False: left out of the event, see compact_events)
        same_as_arrived = incoming is not None and call.arrived.pop(vid, None) == incoming
        if not same_as_arrived:  # what goes into .grad: exact, as .grad is (see summaries.py)
            increment = call.light.summary(grad_outputs[0], True, True) if grad_outputs else None
        grad = leaf.grad if leaf is not None else None
        if grad is not None:
            self._note_grad(grad, tid)
        if (first and same_as_arrived and grad is not None and numel <= FULL_VALUES_MAX
                and _identity(grad) == incoming):
            pass  # .grad is the increment itself: its full values are the increment's
        else:  # (its norm, when its bw_node read the same memory a moment ago: not read again)
            shown = summarize(grad, hist=True, known_norm=call.light.known_norm(grad), send=True)
        self._emit_fn(("accumulate", call.bid, tid, vid, first, increment, shown))


#: nodes that pass a gradient on with the same values, rearranged (or cast): fed into a leaf, what
#: they receive is the leaf's gradient on its way
_REARRANGING = frozenset({"TBackward0", "TransposeBackward0", "TransposeBackward1", "PermuteBackward0",
                          "ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0", "SqueezeBackward0",
                          "SqueezeBackward1", "SqueezeBackward2", "UnsqueezeBackward0", "ToCopyBackward0",
                          "AliasBackward0"})


def _feeds_only_a_leaf(node) -> bool:
    """Whether ``node`` only rearranges a leaf's gradient on its way into the leaf's AccumulateGrad
    (``weight.t()`` in a linear layer, a view of a parameter): what it receives is then summarized
    exactly, as the .grad it becomes is (the two would otherwise differ by a sample's error). Not an
    embedding lookup or an expand: what they receive is not the leaf's gradient."""
    nexts = node.next_functions
    return len(nexts) == 1 and type(nexts[0][0]) is _ACCUMULATE_GRAD_TYPE and node.name() in _REARRANGING


_FUNCTION = torch.autograd.function.Function
_KEYS = itertools.count(-1, -1)  # (a RemovableHandle's id is never negative: no key of the script's is one of these)


class _NodeHooks:
    """The hooks one backward call puts on its graph's nodes, registered at about 40% of what
    ``node.register_hook`` costs, and removed together.

    torch keeps a node's Python hooks in a dict it asks ``Function._register_hook`` to fill,
    which also makes a ``RemovableHandle`` (a weak reference, a global id) per hook: two of them
    for each of a 256-layer MLP's 1,286 nodes, 5-6 ms a backward, where the hooks alone are 2 ms.
    Inside this context the script's thread's registrations store the hook under a negative key
    of graphview's own (torch's handles count up from 0: a script's hook on the same node keeps
    its place and its key) in the same kind of dict torch makes (an ``OrderedDict``, which a
    handle the script takes later can refer to weakly); any other thread registers as torch does.
    ``node.register_hook`` returns None in here: :meth:`remove` takes every hook out again.
    Leaving the context restores ``Function._register_hook`` whatever happened inside it."""

    __slots__ = ("_added", "_thread", "_original", "_own")

    def __init__(self) -> None:
        self._added: list[tuple[dict, int]] = []
        self._thread = threading.get_ident()
        self._original = _FUNCTION._register_hook  # (a staticmethod: the plain function)
        self._own = _FUNCTION.__dict__.get("_register_hook")  # (None: inherited from _HookMixin)

    def __enter__(self) -> "_NodeHooks":
        _FUNCTION._register_hook = staticmethod(self._register)
        return self

    def __exit__(self, *exc) -> None:
        if self._own is None:
            del _FUNCTION._register_hook
        else:
            _FUNCTION._register_hook = self._own

    def _register(self, hooks: dict | None, hook):
        if threading.get_ident() != self._thread:
            return self._original(hooks, hook)
        if hooks is None:
            hooks = OrderedDict()
        key = next(_KEYS)
        hooks[key] = hook
        self._added.append((hooks, key))
        return hooks, None

    def remove(self) -> None:
        for hooks, key in self._added:
            hooks.pop(key, None)
        self._added = []


class _BackwardCall:
    """What the hooks of one backward call share."""

    __slots__ = ("bid", "releases", "sent", "grad_was_none", "arrived", "light", "told")

    def __init__(self, bid: int, releases: bool) -> None:
        self.bid = bid
        self.releases = releases  # no retain_graph: each node frees its saved values once it ran
        self.sent: dict[tuple, tuple] = {}  # (consumer vid, index) -> _identity of the grad it sent
        self.grad_was_none: dict[int, bool] = {}  # AccumulateGrad vid -> its leaf had no .grad before
        self.arrived: dict[int, tuple] = {}  # AccumulateGrad vid -> _identity of the gradient its bw_node showed
        self.light = LightSummaries()  # the gradients' light summaries, once per run of memory
        self.told: set[int] = set()  # AccumulateGrad vids whose accumulate event came before a script's hook
