"""The recorder: watches autograd while a script runs and emits plain events.

Mechanisms (see docs/capture.md for why each was chosen):

* a ``TorchFunctionMode`` sees every user-level torch call (op name, source line, inputs,
  outputs and the grad_fn the output got);
* ``saved_tensors_hooks`` see every tensor autograd saves for backward and, through a
  ``weakref.finalize`` on the packed handle, the moment autograd drops it. The pack hook keeps
  ``t.detach()`` (keeping ``t`` would leak saved outputs through a C++ cycle) and the unpack hook
  re-implements torch's in-place version check, which torch skips when hooks are installed;
* a wrapper around ``torch.autograd._engine_run_backward`` (the one function both
  ``Tensor.backward`` and ``torch.autograd.grad`` go through) installs a pre-hook and a hook on
  every node of the graph for the duration of one backward, so the engine's real execution
  order, the gradients in and out of every node and every accumulation into a leaf's ``.grad``
  are recorded;
* global module forward hooks give module paths (``encoder.layers.0.linear1``) and parameter
  names; global optimizer step hooks give optimizer steps; ``zero_grad`` is wrapped.

Rules that keep the measurement honest: events hold no tensor and no autograd node; nodes are
identified by an integer stamped into ``node.metadata``; tensors are tracked through weak
references only; every hook returns ``None``; every handle is removed on exit.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
import threading
import weakref
from typing import Any, Callable

import torch
import torch.autograd.graph as autograd_graph
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.overrides import TorchFunctionMode

from graphview.capture.summaries import dtype_name, summarize
from graphview.core.options import RunOptions, parse_detach_spec

VID_KEY = "graphview_vid"
TOKEN_KEY = "graphview_token"
LIFE_KEY = "graphview_life"
ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"
RECOMPUTE_MODULE = "checkpoint recompute"  # the module box of ops a checkpoint recomputes in backward
_REENTRANT_CHECKPOINT = "CheckpointFunctionBackward"

# torch calls that say nothing about the graph: answered without recording
_IGNORED = frozenset(
    {
        "dim", "size", "stride", "numel", "nelement", "is_contiguous", "__len__", "__format__",
        "__repr__", "__str__", "data_ptr", "untyped_storage", "storage", "element_size",
        "__hash__", "is_floating_point", "is_complex", "__reduce_ex__", "__deepcopy__",
        "__array__", "__iter__", "get_device", "storage_offset", "__index__", "__int__",
        "__float__", "__bool__", "has_names", "_is_view", "is_set_to", "__dlpack__",
        "_set_grad_enabled", "is_grad_enabled", "is_inference", "register_hook",
        "register_post_accumulate_grad_hook", "_backward_hooks", "__setstate__", "__contains__",
    }
)
# tensor properties whose ``__get__`` is a real op worth a node
_PROPERTY_OPS = frozenset({"T", "mT", "H", "mH", "data", "real", "imag"})
# calls with no tensor output that still matter (they cut the graph)
_NOTABLE_NON_TENSOR = frozenset({"item", "tolist", "numpy"})
_BACKWARD_CALLS = frozenset({"backward", "grad"})
_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_TORCH_OPTIM_DIR = os.path.join(_TORCH_DIR, "optim") + os.sep
_INTERNAL_FUNCTIONS = frozenset({"__init__", "reset_parameters", "_reset_parameters"})


class _Packed:
    """What autograd holds instead of a saved tensor while the recorder is on."""

    __slots__ = ("t", "sid", "version", "token", "output_nr", "gf_name", "source", "__weakref__")

    def __init__(self, t, sid, version, token, output_nr, gf_name, source):
        self.t = t
        self.sid = sid
        self.version = version
        self.token = token
        self.output_nr = output_nr
        self.gf_name = gf_name
        self.source = source  # weakref to the tensor autograd passed in


class _Life:
    """Put in a node's ``metadata``: its finalizer fires when autograd destroys the node."""

    __slots__ = ("__weakref__",)


class _Stale:
    """A view's node that torch would rebuild if read (see ``Recorder.grad_fn_of``): not read."""

    __slots__ = ("vid",)

    def __init__(self, vid):
        self.vid = vid


class _OpMode(TorchFunctionMode):
    def __init__(self, recorder: "Recorder") -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return self.recorder._on_torch_function(func, args, kwargs or {})


_RECORDING_TORCH_FUNCTION = _OpMode.__torch_function__




class Recorder:
    """Record everything autograd does while active (use as a context manager).

    Ops are recorded in the thread that entered the recorder (torch function modes are
    per thread); backward calls are recorded from any thread.

    ``emit`` receives each event dict. ``script`` is the path of the user's script: source
    lines, variable names and tracebacks are taken from frames of that file.
    """

    def __init__(self, emit: Callable[[dict], None], script: str, options: RunOptions | None = None,
                 sample_cuda: bool | None = None) -> None:
        self._emit_fn = emit
        self.script = os.path.abspath(script)
        self.options = options or RunOptions()
        self._lock = threading.RLock()
        self._tls = threading.local()  # per thread: is the recorder itself at work (ignore torch calls)?
        self._tids = itertools.count(1)
        self._vids = itertools.count(1)
        self._sids = itertools.count(1)
        self._oids = itertools.count(1)
        self._bids = itertools.count(1)
        self._tokens = itertools.count(1)
        # id(t) -> [ref, tid, version, grad_fn vid, requires_grad, version when grad_fn was last read]
        self._tensors: dict[int, list] = {}
        self._pending_names: list[list] = []  # [ref, tid, tries]
        self._names: dict[int, str] = {}  # module/param id -> qualified name (+ refs below)
        self._name_refs: dict[int, weakref.ref] = {}
        self._buffers: set[int] = set()
        self._roots: dict[int, weakref.ref] = {}
        self._module_stack: list[str] = []
        self._mode_state = "grad"
        self._retained: dict[int, weakref.ref] = {}
        self._retained_state: dict[int, tuple] = {}
        self._op_inputs: set | None = None  # ids of the tensors passed to the op running now
        self._grad_of: dict[int, tuple] = {}  # id(grad tensor) -> (ref, leaf tid)
        self._saved_attr_cache: dict[type, tuple] = {}
        self._bw_current: list[int | None] = []
        self._unhooked: dict[int, list[int]] = {}  # vid -> sids of saved tensors torch kept without hooks
        # nodes whose saved values other saved-tensor hooks manage (non-reentrant checkpoint): their
        # backward unpacks them, which recomputes the checkpointed forward
        self._foreign_saved: set[int] = set()
        self._recompute: list[int] = []  # bids of the backward calls whose checkpoint recompute is running
        self._handles: list[Any] = []
        self._module_hooks: list[Any] = []
        self._compile_noted = False  # said once per run that torch.compile'd code runs op by op
        self._detach_ops: set[int] = set()
        self._detach_lines: set[int] = set()
        self._detach_modules: set[str] = set()
        for spec in self.options.detach_at:
            kind, value = parse_detach_spec(spec)
            {"op": self._detach_ops, "line": self._detach_lines, "module": self._detach_modules}[kind].add(value)
        self._cuda = torch.cuda.is_available() if sample_cuda is None else sample_cuda
        self._alloc_last: int | None = None
        self._active = False
        self.extra_scopes: list[dict] = []  # namespaces searched for names after the frames (module globals)
        self.op_count = 0
        self.backward_count = 0
        self.detach_hits = 0
        self.optimizer_step_count = 0

    # ------------------------------------------------------------------ plumbing
    @property
    def _suspend(self) -> int:
        return getattr(self._tls, "depth", 0)

    @_suspend.setter
    def _suspend(self, value: int) -> None:
        self._tls.depth = value

    def emit(self, event: dict) -> None:
        with self._lock:
            self._emit_fn(event)
            if self._cuda and event["ev"] in ("op", "bw_node_done", "backward_end", "release"):
                self._sample_cuda()

    def _sample_cuda(self) -> None:
        try:
            device = torch.cuda.current_device()
            allocated = torch.cuda.memory_allocated(device)
        except Exception:  # noqa: BLE001 - a broken CUDA context must not break the run
            self._cuda = False
            return
        if allocated != self._alloc_last:
            self._alloc_last = allocated
            self._emit_fn({"ev": "alloc", "device": f"cuda:{device}", "bytes": allocated})

    class _Quiet:
        __slots__ = ("rec",)

        def __init__(self, rec):
            self.rec = rec

        def __enter__(self):
            self.rec._suspend += 1

        def __exit__(self, *exc):
            self.rec._suspend -= 1

    def quiet(self) -> "_Quiet":
        """Inside this block the recorder ignores torch calls (its own work, optimizer internals)."""
        return Recorder._Quiet(self)

    def __enter__(self) -> "Recorder":
        self._install()
        return self

    def __exit__(self, *exc: object) -> None:
        self._uninstall()

    def _install(self) -> None:
        self._mode = _OpMode(self)
        self._saved_hooks = autograd_graph.saved_tensors_hooks(self._pack, self._unpack)
        self._saved_hooks.__enter__()
        self._mode.__enter__()
        self._orig_engine = torch.autograd.graph._engine_run_backward
        torch.autograd.graph._engine_run_backward = self._engine_run_backward
        torch.autograd._engine_run_backward = self._engine_run_backward
        mm = torch.nn.modules.module
        self._module_hooks = [mm.register_module_forward_pre_hook(self._module_pre),
                              mm.register_module_forward_hook(self._module_post, always_call=True)]
        self._handles.append(register_optimizer_step_pre_hook(self._optimizer_pre))
        self._handles.append(register_optimizer_step_post_hook(self._optimizer_post))
        self._orig_opt_zero = torch.optim.Optimizer.zero_grad
        self._orig_mod_zero = torch.nn.Module.zero_grad
        torch.optim.Optimizer.zero_grad = self._wrap_zero_grad(self._orig_opt_zero, "optimizer")
        torch.nn.Module.zero_grad = self._wrap_zero_grad(self._orig_mod_zero, "module")
        self._orig_module_train = torch.nn.Module.train
        torch.nn.Module.train = self._wrap_train(self._orig_module_train)
        if "torch._dynamo" in sys.modules:  # something may have compiled code before the recording began
            self._compile_safe()
        self._orig_compile = torch.compile
        torch.compile = self._wrap_compile(self._orig_compile)
        self._orig_function_apply = torch.autograd.Function.__dict__["apply"]
        torch.autograd.Function.apply = classmethod(self._wrap_function_apply(self._orig_function_apply.__func__))
        self._active = True

    def _uninstall(self) -> None:
        if not self._active:
            return
        self._active = False
        self.flush_names()
        for handle in self._handles + self._module_hooks:
            handle.remove()
        self._handles.clear()
        self._module_hooks.clear()
        torch.optim.Optimizer.zero_grad = self._orig_opt_zero
        torch.nn.Module.zero_grad = self._orig_mod_zero
        torch.autograd.Function.apply = self._orig_function_apply
        torch.compile = self._orig_compile
        _OpMode.__torch_function__ = _RECORDING_TORCH_FUNCTION
        torch.nn.Module.train = self._orig_module_train
        torch.autograd.graph._engine_run_backward = self._orig_engine
        torch.autograd._engine_run_backward = self._orig_engine
        self._mode.__exit__(None, None, None)
        self._saved_hooks.__exit__(None, None, None)

    # ------------------------------------------------------------------ frames and names
    def user_frame(self, start: int = 2):
        """The innermost frame of the user's script, and whether the call is torch-internal.

        Internal: module construction (parameter initialisation) and optimizer steps, which
        run torch calls of their own that are not the script's computation.
        """
        f = sys._getframe(start)
        script = self.script
        while f is not None:
            code = f.f_code
            filename = code.co_filename
            if filename == script:
                return f, False
            if filename.startswith(_TORCH_DIR) and (
                    code.co_name in _INTERNAL_FUNCTIONS or filename.startswith(_TORCH_OPTIM_DIR)):
                return None, True
            f = f.f_back
        return None, False

    def _register_pending(self, t: torch.Tensor, tid: int) -> None:
        self._pending_names.append([weakref.ref(t), tid, 0])
        if len(self._pending_names) > 256:
            del self._pending_names[:64]

    def flush_names(self, frame=None) -> None:
        """Give pending tensors the names the script bound them to, looking at script frames."""
        if not self._pending_names:
            return
        with self.quiet():
            if frame is None:
                frame, _ = self.user_frame(2)
            wanted = {}
            for entry in self._pending_names:
                t = entry[0]()
                if t is not None:
                    wanted[id(t)] = entry
            found: set[int] = set()
            scopes = []
            f, depth = frame, 0
            while f is not None and depth < 16:
                if f.f_code.co_filename == self.script:
                    try:
                        scopes.append(f.f_locals)
                    except Exception:  # noqa: BLE001 - exotic frames
                        pass
                f = f.f_back
                depth += 1
            # outermost first: the caller's variable (`inp`) wins over a callee's parameter (`t`)
            scopes.reverse()
            scopes = list(self.extra_scopes) + scopes
            for scope in scopes:
                if not wanted:
                    break
                for name, value in list(scope.items()):
                    if isinstance(value, torch.Tensor) and not name.startswith("__"):
                        entry = wanted.get(id(value))
                        if entry is not None and entry[0]() is value and entry[1] not in found:
                            found.add(entry[1])
                            self._emit_fn({"ev": "name", "tid": entry[1], "name": name})
                            del wanted[id(value)]
            keep = []
            for entry in self._pending_names:
                entry[2] += 1
                if entry[1] not in found and entry[2] < 12 and entry[0]() is not None:
                    keep.append(entry)
            self._pending_names = keep

    # ------------------------------------------------------------------ tensors and nodes
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

    def tensor_ref(self, t: torch.Tensor, line: int | None, pending: bool = True) -> list:
        """``[tid, version]`` of ``t``; emits a ``tensor`` event if it is new or changed."""
        key = id(t)
        entry = self._tensors.get(key)
        version = _version(t)
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
            self._tensors[key] = [weakref.ref(t, self._forget_tensor(key, tid)), tid, version, gvid, requires_grad, synced]
            new = True
        base = t._base
        base_tid = None
        if base is not None:
            base_entry = self._tensors.get(id(base))
            if base_entry is not None and base_entry[0]() is base:
                base_tid = base_entry[1]
        name = self._names.get(key) if self._name_refs.get(key) is not None and self._name_refs[key]() is t else None
        event = {
            "ev": "tensor", "tid": tid, "version": version, "name": name, "kind": self._kind(t, is_leaf),
            "shape": list(t.shape), "dtype": dtype_name(t.dtype), "device": str(t.device),
            "requires_grad": requires_grad, "is_leaf": is_leaf, "grad_fn": gvid, "base": base_tid,
            "line": line, "new": new,
        }
        leafish = event["kind"] != "activation"  # parameters, inputs, buffers: also a histogram
        event.update(summarize(t, norm=leafish, hist=leafish) or {})
        self._emit_fn(event)
        if new and name is None and pending:
            self._register_pending(t, tid)
        return [tid, version]

    def _forget_tensor(self, key: int, tid: int):
        tensors = self._tensors

        def forget(_ref):
            entry = tensors.get(key)
            if entry is not None and entry[1] == tid:
                del tensors[key]

        return forget

    def tid_of(self, t: torch.Tensor) -> int | None:
        entry = self._tensors.get(id(t))
        if entry is not None and entry[0]() is t:
            return entry[1]
        return None

    def node_vid(self, fn, line: int | None = None) -> int:
        """The id of autograd node ``fn``; discovers (and emits) it and unknown ancestors."""
        vid = fn.metadata.get(VID_KEY)
        if vid is not None:
            return vid
        module = self._module_stack[-1] if self._module_stack else (RECOMPUTE_MODULE if self._recompute else None)
        stack = [(fn, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                self._emit_node(node, line, module)
                continue
            md = node.metadata
            if VID_KEY in md:
                continue
            vid = md[VID_KEY] = next(self._vids)
            life = md[LIFE_KEY] = _Life()
            weakref.finalize(life, self._node_died, vid).atexit = False
            stack.append((node, True))
            for child, _ in node.next_functions:
                if child is not None and VID_KEY not in child.metadata:
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
        self._emit_fn({
            "ev": "node", "vid": vid, "name": name, "next": nxt, "seq": seq, "leaf": leaf,
            "custom": isinstance(node, torch.autograd.function.BackwardCFunction),
            "line": line, "module": module,
        })
        for attr, packed in self._saved_of(node):
            if isinstance(packed, _Packed):
                self._emit_fn({"ev": "own", "sid": packed.sid, "owner": vid, "attr": attr})
            else:  # torch saves wrapped Python numbers without calling hooks: account for them here
                sid = next(self._sids)
                self._unhooked.setdefault(vid, []).append(sid)
                event = self._saved_event(sid, packed, owner=vid, attr=attr)
                if self._recompute:
                    event["recompute"] = self._recompute[-1]
                self._emit_fn(event)

    def _node_died(self, vid: int) -> None:
        if not self._active:
            return
        with self._lock:
            for sid in self._unhooked.pop(vid, ()):
                self.emit({"ev": "release", "sid": sid})
            self._emit_fn({"ev": "node_dead", "vid": vid})

    def _release_unhooked(self, vid: int) -> None:
        for sid in self._unhooked.pop(vid, ()):
            self.emit({"ev": "release", "sid": sid})

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

    # ------------------------------------------------------------------ grad mode
    @staticmethod
    def current_mode() -> str:
        if torch.is_inference_mode_enabled():
            return "inference_mode"
        return "grad" if torch.is_grad_enabled() else "no_grad"

    def _check_mode(self, line: int | None) -> str:
        mode = self.current_mode()
        if mode != self._mode_state:
            self._mode_state = mode
            self._emit_fn({"ev": "mode", "mode": mode, "line": line})
        return mode

    # ------------------------------------------------------------------ ops
    def _on_torch_function(self, func, args, kwargs):
        if self._suspend:
            return func(*args, **kwargs)
        name = getattr(func, "__name__", None) or type(func).__name__
        if name in _IGNORED:
            return func(*args, **kwargs)
        if name == "__get__" or name == "__set__":
            return self._on_descriptor(func, name, args, kwargs)
        if name in _BACKWARD_CALLS or tracing():
            return func(*args, **kwargs)
        frame, internal = self.user_frame(3)
        if internal:
            return func(*args, **kwargs)
        with self._lock:
            self._suspend += 1
            try:
                self.flush_names(frame)
            finally:
                self._suspend -= 1
        self._op_inputs = _tensor_ids(args, kwargs)
        try:
            out = func(*args, **kwargs)
        finally:
            self._op_inputs = None
        with self._lock:
            self._suspend += 1
            try:
                return self._record_op(name, args, kwargs, out, frame)
            finally:
                self._suspend -= 1

    def _on_descriptor(self, func, name, args, kwargs):
        owner = getattr(func, "__self__", None)
        attr = getattr(owner, "__name__", "")
        out = func(*args, **kwargs)
        if attr == "grad" and args and isinstance(args[0], torch.Tensor):
            frame, internal = self.user_frame(3)
            if internal:
                return out
            with self._lock, self.quiet():
                line = frame.f_lineno if frame else None
                tid = self.tensor_ref(args[0], line)[0]
                if name == "__get__":
                    self._emit_fn({"ev": "grad_read", "tid": tid, "none": out is None, "line": line})
                else:
                    value = args[1] if len(args) > 1 else None
                    if value is None:
                        self._emit_fn({"ev": "grad_reset", "tids": [tid], "how": "assign_none", "line": line, "source": "assign"})
                    else:
                        self._note_grad(value, tid)
                        self._emit_fn({"ev": "grad_reset", "tids": [tid], "how": "assign", "line": line,
                                       "source": "assign", "value": summarize(value)})
            return out
        if name == "__get__" and attr in _PROPERTY_OPS and isinstance(out, torch.Tensor):
            frame, internal = self.user_frame(3)
            if internal:
                return out
            with self._lock, self.quiet():
                return self._record_op(attr, args[:1], {}, out, frame)
        if name == "__set__" and attr in ("requires_grad", "data") and args and isinstance(args[0], torch.Tensor):
            with self._lock, self.quiet():
                frame, _ = self.user_frame(3)
                self.tensor_ref(args[0], frame.f_lineno if frame else None)
        return out

    def _note_grad(self, grad: torch.Tensor, leaf_tid: int) -> None:
        self._grad_of[id(grad)] = (weakref.ref(grad), leaf_tid)

    def _record_op(self, name, args, kwargs, out, frame):
        line = frame.f_lineno if frame is not None else None
        mode = self._check_mode(line)
        inputs = []
        for a in itertools.chain(args, kwargs.values()):
            if isinstance(a, torch.Tensor):
                inputs.append(a)
            elif isinstance(a, (list, tuple)):
                inputs.extend(x for x in a if isinstance(x, torch.Tensor))
        outputs = _flatten_tensors(out)
        if not outputs and name not in _NOTABLE_NON_TENSOR and name != "retain_grad":
            return out
        oid = next(self._oids)
        self.op_count = oid
        inplace = name.endswith("_") and not name.startswith("_") or name.startswith("__i")
        # a grad buffer changed in place (``p.grad.zero_()``): that is a grad reset
        if inplace and inputs:
            g = self._grad_of.get(id(inputs[0]))
            if g is not None and g[0]() is inputs[0]:
                how = "zero" if name == "zero_" else "assign"
                event = {"ev": "grad_reset", "tids": [g[1]], "how": how, "line": line, "source": name}
                if how == "assign":
                    event["value"] = summarize(inputs[0])
                self._emit_fn(event)
        in_refs = [self.tensor_ref(t, line) for t in inputs]
        out_refs = [self.tensor_ref(t, line) for t in outputs]
        grad_fn = None
        for t in outputs:
            gf = self.grad_fn_of(t)
            if isinstance(gf, _Stale):
                continue
            if gf is not None:
                grad_fn = gf.metadata.get(VID_KEY)
                break
        module = self._module_stack[-1] if self._module_stack else (RECOMPUTE_MODULE if self._recompute else None)
        event = {
            "ev": "op", "oid": oid, "op": name, "line": line, "module": module,
            "inputs": in_refs, "outputs": out_refs, "grad_fn": grad_fn, "mode": mode, "inplace": inplace,
        }
        if self._recompute:
            event["recompute"] = self._recompute[-1]
        self.emit(event)
        if name in ("detach", "detach_", "data") and inputs and outputs:
            self._emit_fn({"ev": "detach", "src": in_refs[0][0], "dst": out_refs[0][0], "line": line, "forced": False})
        elif name == "retain_grad" and inputs:
            self._retained[in_refs[0][0]] = weakref.ref(inputs[0])
            self._emit_fn({"ev": "retain_grad", "tid": in_refs[0][0], "line": line})
        if oid in self._detach_ops or (line is not None and line in self._detach_lines):
            out = self._force_detach(out, line)
        return out

    def _force_detach(self, out, line):
        """The ``--detach-at`` toggle: hand the script a detached result instead."""
        self.detach_hits += 1

        def detach_one(t):
            if isinstance(t, torch.Tensor) and t.requires_grad:
                d = t.detach()
                src = self.tensor_ref(t, line)[0]
                dst = self.tensor_ref(d, line)[0]
                self._emit_fn({"ev": "detach", "src": src, "dst": dst, "line": line, "forced": True})
                return d
            return t
        if isinstance(out, torch.Tensor):
            return detach_one(out)
        if isinstance(out, tuple):
            items = [detach_one(t) for t in out]
            if hasattr(out, "_fields"):  # a namedtuple
                return type(out)(*items)
            if type(out) is not tuple:  # torch.return_types (a structseq)
                return type(out)(items)
            return tuple(items)
        if isinstance(out, list):
            return [detach_one(t) for t in out]
        return out

    # ------------------------------------------------------------------ modules
    def _register_root(self, root: torch.nn.Module) -> None:
        key = id(root)
        ref = self._roots.get(key)
        if ref is not None and ref() is root:
            return
        self._roots[key] = weakref.ref(root)
        # a bare layer used as a model (fc1 = nn.Linear(...)): name its parameters fc1.weight, not weight
        prefix = ""
        if next(root.children(), None) is None:
            variable = self._variable_holding(root)
            prefix = f"{variable}." if variable else ""
        for qual, m in root.named_modules():
            self._name_once(m, qual)
        new_tensors = [p for qual, p in root.named_parameters() if self._name_once(p, prefix + qual)]
        for qual, b in root.named_buffers():
            if self._name_once(b, prefix + qual):
                self._buffers.add(id(b))
                new_tensors.append(b)
        frame, _ = self.user_frame(3)
        line = frame.f_lineno if frame else None
        for t in new_tensors:
            self.tensor_ref(t, line, pending=False)

    def _name_once(self, obj, name: str) -> bool:
        """Give ``obj`` its qualified name unless it has one already (the first root wins)."""
        ref = self._name_refs.get(id(obj))
        if ref is not None and ref() is obj:
            return False
        self._names[id(obj)] = name
        self._name_refs[id(obj)] = weakref.ref(obj)
        return True

    def _variable_holding(self, obj) -> str | None:
        """The script variable bound to ``obj`` (its frames, outermost first, then its module)."""
        scopes = list(self.extra_scopes)
        f = sys._getframe(1)
        frames = []
        while f is not None:
            if f.f_code.co_filename == self.script:
                frames.append(f)
            f = f.f_back
        for frame in reversed(frames):
            try:
                scopes.append(frame.f_locals)
            except Exception:  # noqa: BLE001 - exotic frames
                pass
        direct = None
        for scope in scopes:
            for name, value in list(scope.items()):
                if name.startswith("_"):
                    continue
                if isinstance(value, (list, tuple)) and len(value) < 10000:
                    for i, item in enumerate(value):
                        if item is obj:  # layers = [nn.Linear(...) ...]: layers[3], not the loop variable
                            return f"{name}[{i}]"
                if value is obj and direct is None:
                    direct = name
        return direct

    def _module_path(self, module: torch.nn.Module) -> str:
        key = id(module)
        ref = self._name_refs.get(key)
        if ref is not None and ref() is module:
            name = self._names[key]
            if self._recompute:
                return f"{RECOMPUTE_MODULE}.{name}" if name else RECOMPUTE_MODULE
            return name
        parent = self._module_stack[-1] if self._module_stack else ""
        return f"{parent}.{type(module).__name__}" if parent else type(module).__name__

    def _module_pre(self, module, args):
        if self._suspend or not self._active:
            return None
        with self._lock, self.quiet():
            if not self._module_stack:
                self._register_root(module)
            path = self._module_path(module)
            self._module_stack.append(path)
            self._emit_fn({"ev": "module_enter", "path": path, "type": type(module).__name__})
        return None

    def _module_post(self, module, args, output):
        if self._suspend or not self._active or not self._module_stack:
            return None
        with self._lock, self.quiet():
            path = self._module_stack.pop()
            self._emit_fn({"ev": "module_exit", "path": path})
            if path in self._detach_modules:
                frame, _ = self.user_frame(3)
                return self._force_detach(output, frame.f_lineno if frame else None)
        return None

    # ------------------------------------------------------------------ optimizer and zero_grad
    def _optimizer_pre(self, optimizer, args, kwargs):
        return None  # ops inside step() are skipped by user_frame (torch/optim frames)

    def _optimizer_post(self, optimizer, args, kwargs):
        self.optimizer_step_count += 1
        if self._suspend or not self._active:
            return
        with self._lock, self.quiet():
            frame, _ = self.user_frame(3)
            line = frame.f_lineno if frame else None
            tids = []
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    ref = self.tensor_ref(p, line, pending=False)
                    tids.append(ref[0])
                    self._emit_fn({"ev": "value", "tid": ref[0], "version": _version(p), "reason": "optimizer", **(summarize(p, hist=True) or {})})
            self._emit_fn({"ev": "optimizer_step", "optimizer": type(optimizer).__name__, "tids": tids, "line": line})

    def _wrap_zero_grad(self, original, source):
        recorder = self

        def zero_grad(obj, *args, **kwargs):
            if recorder._suspend or not recorder._active:
                return original(obj, *args, **kwargs)
            set_to_none = kwargs.get("set_to_none", args[0] if args else True)
            with recorder._lock, recorder.quiet():
                params = (p for g in obj.param_groups for p in g["params"]) if source == "optimizer" else obj.parameters()
                tids = [recorder.tensor_ref(p, None, pending=False)[0] for p in params if p.grad is not None]
                result = original(obj, *args, **kwargs)
                frame, _ = recorder.user_frame(2)
                recorder._emit_fn({"ev": "grad_reset", "tids": tids, "how": "set_to_none" if set_to_none else "zero",
                                   "line": frame.f_lineno if frame else None, "source": f"{source}.zero_grad"})
            return result

        zero_grad.__wrapped__ = original
        zero_grad.__doc__ = original.__doc__
        return zero_grad

    def _wrap_train(self, original):
        """``model.train()`` / ``model.eval()``: recorded, since eval() is often mistaken for no_grad."""
        recorder = self

        def train(module, mode=True):
            result = original(module, mode)
            if recorder._active and not recorder._suspend:
                frame, internal = recorder.user_frame(2)
                if frame is not None and not internal:
                    with recorder._lock, recorder.quiet():
                        recorder._emit_fn({"ev": "module_mode", "type": type(module).__name__, "training": bool(mode),
                                           "line": frame.f_lineno})
            return result

        train.__wrapped__ = original
        return train

    def _compile_safe(self) -> None:
        """Once a script uses torch.compile: Dynamo must run the recorder's code, not trace into it
        (it cannot trace sys._getframe, and fails). Not done up front: importing Dynamo takes
        seconds and its wrapper costs about 0.7 µs a call."""
        if _OpMode.__torch_function__ is not _RECORDING_TORCH_FUNCTION:
            return
        _OpMode.__torch_function__ = torch.compiler.disable(_RECORDING_TORCH_FUNCTION)
        for handle in self._module_hooks:
            handle.remove()
        mm = torch.nn.modules.module
        self._module_hooks = [mm.register_module_forward_pre_hook(torch.compiler.disable(self._module_pre)),
                              mm.register_module_forward_hook(torch.compiler.disable(self._module_post), always_call=True)]

    def _wrap_compile(self, original):
        recorder = self

        def compile(*args, **kwargs):
            if not recorder._compile_noted:
                recorder._compile_noted = True
                frame, _ = recorder.user_frame(2)
                where = f"line {frame.f_lineno}: " if frame is not None else ""
                recorder._emit_fn({"ev": "stderr", "text": (
                    f"graphview: {where}torch.compile'd code runs op by op while graphview records it "
                    "(Dynamo cannot trace the recorder): the graph shows its ops one by one, not the "
                    "CompiledFunctionBackward node a plain run can have; values and gradients are eager mode's\n")})
            recorder._compile_safe()
            return original(*args, **kwargs)

        compile.__wrapped__ = original
        compile.__doc__ = original.__doc__
        return compile

    def _wrap_function_apply(self, original):
        """Custom ``autograd.Function.apply`` is invisible to the mode: record it as one op."""
        recorder = self

        def apply(cls, *args, **kwargs):
            if recorder._suspend or not recorder._active:
                return original(cls, *args, **kwargs)
            frame, _ = recorder.user_frame(2)
            with recorder._lock, recorder.quiet():
                recorder.flush_names(frame)
            recorder._op_inputs = _tensor_ids(args, kwargs)
            try:
                with recorder.quiet():
                    out = original(cls, *args, **kwargs)
            finally:
                recorder._op_inputs = None
            with recorder._lock, recorder.quiet():
                return recorder._record_op(f"{cls.__name__}.apply", args, kwargs, out, frame)

        return apply

    # ------------------------------------------------------------------ saved tensors
    def _pack(self, t: torch.Tensor):
        if tracing():
            return t.detach()  # a fake tensor of a compile trace: nothing to count
        with self._lock:
            sid = next(self._sids)
            event = self._saved_event(sid, t, op_inputs=self._op_inputs)
            if self._recompute:
                event["recompute"] = self._recompute[-1]
            gf = t.grad_fn
            token = gf.metadata.setdefault(TOKEN_KEY, next(self._tokens)) if gf is not None else None
            packed = _Packed(t.detach(), sid, t._version, token, t.output_nr,
                             gf.name() if gf is not None else None, weakref.ref(t))
            finalizer = weakref.finalize(packed, self._release, sid)
            finalizer.atexit = False
            self._emit_fn(event)
            return packed

    @staticmethod
    def _saved_event(sid: int, t: torch.Tensor, owner: int | None = None, attr: str | None = None,
                     op_inputs: set | None = None) -> dict:
        try:
            if t.layout == torch.sparse_coo:  # values and indices are two storages
                values, indices = t._values(), t._indices()
                nbytes = values.untyped_storage().nbytes() + indices.untyped_storage().nbytes()
                key = f"{values.untyped_storage().data_ptr():x}"
            else:
                storage = t.untyped_storage()
                nbytes = storage.nbytes()
                key = f"{storage.data_ptr():x}"
        except (RuntimeError, NotImplementedError):  # other storage-less tensors
            nbytes = t.numel() * t.element_size()
            key = f"sid{sid}"
        base = t._base
        if t.is_leaf or (base is not None and base.is_leaf):
            kind = "param" if (t.requires_grad or (base is not None and base.requires_grad)) else "input"
            # a result the op made for itself (BatchNorm's batch statistics, max-pool indices)
            if kind == "input" and op_inputs is not None and id(t) not in op_inputs and (base is None or id(base) not in op_inputs):
                kind = "activation"
        else:
            kind = "activation"
        return {
            "ev": "saved", "sid": sid, "bytes": nbytes, "storage": key, "device": str(t.device), "kind": kind,
            "shape": list(t.shape), "dtype": dtype_name(t.dtype), "owner": owner, "attr": attr,
        }

    def _release(self, sid: int) -> None:
        if self._active:  # after the run, the script's leftovers die with its module: not events
            with self._lock:
                self.emit({"ev": "release", "sid": sid})

    def _unpack(self, packed):
        if not isinstance(packed, _Packed):  # packed before the recorder started
            return packed
        current = packed.t._version
        if current != packed.version:
            raise RuntimeError(self._version_message(packed, current))
        return packed.t

    @staticmethod
    def _version_message(packed: _Packed, current: int) -> str:
        """torch's own message for a saved tensor modified in place (torch skips the check under hooks)."""
        t = packed.t
        node = torch._C._current_autograd_node()
        is_output = node is not None and packed.token is not None and node.metadata.get(TOKEN_KEY) == packed.token
        gf_name, output_nr = None, packed.output_nr
        if is_output:
            gf_name = packed.gf_name
        else:
            source = packed.source()
            if source is not None:
                gf = source.grad_fn
                gf_name = gf.name() if gf is not None else None
                output_nr = source.output_nr
            else:
                gf_name = packed.gf_name
        message = (
            "one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [{t.type()} {list(t.shape)}]"
        )
        if gf_name:
            message += f", which is output {output_nr} of {_BACKWARD_SUFFIX.sub('', gf_name)},"
        message += f" is at version {current}; expected version {packed.version} instead."
        if torch.is_anomaly_enabled():
            message += (" Hint: the backtrace further above shows the operation that failed to compute "
                        "its gradient. The variable in question was changed in there or anywhere later. Good luck!")
        else:
            message += (" Hint: enable anomaly detection to find the operation that failed to compute its "
                        "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
        return message

    # ------------------------------------------------------------------ backward
    def _engine_run_backward(self, t_outputs, *args, **kwargs):
        original = self._orig_engine
        if self._suspend or not self._active or tracing():
            return original(t_outputs, *args, **kwargs)
        args = list(args)
        while len(args) < 4:
            args.append(None)
        grad_tensors, retain_graph, create_graph, inputs = args[:4]
        forced = []
        if self.options.create_graph and not create_graph:
            args[2] = create_graph = True
            forced.append("create_graph")
        if self.options.retain_graph and not retain_graph:
            args[1] = retain_graph = True
            forced.append("retain_graph")
        api = "backward" if kwargs.get("accumulate_grad", True) else "grad"
        bid = next(self._bids)
        self.backward_count += 1
        handles = []
        with self._lock, self.quiet():
            frame, _ = self.user_frame(2)
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
            # Walk the graph once: every node gets a pre-hook and a hook for this call. A node fed by
            # exactly one edge receives exactly what that edge sent: its incoming gradient is not
            # summarized twice (the event names the edge instead).
            nodes: dict[int, Any] = {}
            feeders: dict[int, list] = {}
            stack = [t.grad_fn if isinstance(t, torch.Tensor) else t.node for t in t_outputs]
            root_vids = set()
            for node in stack:
                if node is not None:
                    root_vids.add(self.node_vid(node, line))
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
                        feeders.setdefault(self.node_vid(child, line), []).append([vid, index])
                        stack.append(child)
            sent: dict[tuple, tuple] = {}  # (consumer vid, index) -> (data_ptr, version) of the grad it sent
            for vid, node in nodes.items():
                fed = feeders.get(vid, [])
                from_edge = fed[0] if len(fed) == 1 and vid not in root_vids else None
                handles.append(node.register_prehook(self._make_prehook(bid, vid, from_edge, sent)))
                if node.name() == ACCUMULATE_GRAD:
                    leaf = node.variable
                    state = {"was_none": True}
                    handles.append(node.register_prehook(self._make_accumulate_prehook(weakref.ref(leaf), state)))
                    handles.append(node.register_hook(
                        self._make_accumulate_hook(bid, vid, weakref.ref(leaf), self.tensor_ref(leaf, line)[0], state)))
                else:
                    handles.append(node.register_hook(self._make_hook(bid, vid, not retain_graph, sent)))
                if vid in self._foreign_saved or node.name() == _REENTRANT_CHECKPOINT:
                    handles.extend(self._watch_recompute(node, bid))
            del nodes, stack
        self._bw_current.append(None)
        ok = False
        try:
            result = original(t_outputs, *args, **kwargs)
            ok = True
            return result
        except BaseException as exc:
            failed_vid = self._bw_current[-1]
            setattr(exc, "_graphview_vid", failed_vid)
            setattr(exc, "_graphview_bid", bid)
            raise
        finally:
            self._bw_current.pop()
            for handle in handles:
                handle.remove()
            with self._lock, self.quiet():
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
                self.emit({"ev": "backward_end", "bid": bid, "ok": ok, "freed": ok and not retain_graph})

    def _watch_recompute(self, node, bid: int) -> list:
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

        return [node.register_prehook(enter), node.register_hook(leave)]

    def _make_prehook(self, bid: int, vid: int, from_edge: list | None, sent: dict):
        recorder = self
        edge_key = tuple(from_edge) if from_edge is not None else None

        def prehook(grad_outputs):
            with recorder._lock, recorder.quiet():
                if recorder._bw_current:
                    recorder._bw_current[-1] = vid
                event = {"ev": "bw_node", "bid": bid, "vid": vid}
                # the gradient arriving is the very tensor the single feeding edge sent, unchanged
                # (a user's tensor hook may have replaced or modified it: then summarize it again)
                if (edge_key is not None and len(grad_outputs) == 1 and grad_outputs[0] is not None
                        and sent.get(edge_key) == _identity(grad_outputs[0])):
                    event["grads_in"] = None
                    event["from_edge"] = from_edge  # [consumer vid, index]: its grads_out[index]
                else:
                    event["grads_in"] = [summarize(g, light=True) for g in grad_outputs]
                recorder._emit_fn(event)
            return None

        return prehook

    def _make_hook(self, bid: int, vid: int, releases: bool, sent: dict):
        recorder = self

        def hook(grad_inputs, grad_outputs):
            with recorder._lock, recorder.quiet():
                for index, g in enumerate(grad_inputs):
                    if g is not None:
                        sent[(vid, index)] = _identity(g)
                if releases:  # the engine releases the node's saved variables right after it runs
                    recorder._release_unhooked(vid)
                recorder.emit({"ev": "bw_node_done", "bid": bid, "vid": vid, "grads_out": [summarize(g, light=True) for g in grad_inputs]})
            return None

        return hook

    def _make_accumulate_prehook(self, leaf_ref, state: dict):
        recorder = self

        def prehook(grad_outputs):
            with recorder.quiet():
                leaf = leaf_ref()
                state["was_none"] = leaf is None or leaf.grad is None
            return None

        return prehook

    def _make_accumulate_hook(self, bid: int, vid: int, leaf_ref, tid: int, state: dict):
        recorder = self

        def hook(grad_inputs, grad_outputs):
            with recorder._lock, recorder.quiet():
                leaf = leaf_ref()
                increment = summarize(grad_outputs[0], light=True) if grad_outputs else None
                grad = leaf.grad if leaf is not None else None
                if grad is not None:
                    recorder._note_grad(grad, tid)
                recorder._emit_fn({"ev": "accumulate", "bid": bid, "tid": tid, "vid": vid, "increment": increment,
                                   "grad": summarize(grad, hist=True), "first": state["was_none"]})
                recorder.emit({"ev": "bw_node_done", "bid": bid, "vid": vid, "grads_out": []})
            return None

        return hook


_FAKE = torch._C._TorchDispatchModeKey.FAKE
_PROXY = torch._C._TorchDispatchModeKey.PROXY


def tracing() -> bool:
    """Whether torch.compile (AOT autograd, make_fx) is tracing with fake tensors, or a torch.func
    transform runs, right now: its tensors are wrappers with no data of their own to read."""
    return (torch._C._get_dispatch_mode(_FAKE) is not None or torch._C._get_dispatch_mode(_PROXY) is not None
            or torch._C._functorch.peek_interpreter_stack() is not None)


def _tensor_ids(args, kwargs) -> set:
    ids = set()
    for a in itertools.chain(args, kwargs.values()):
        if isinstance(a, torch.Tensor):
            ids.add(id(a))
        elif isinstance(a, (list, tuple)):
            ids.update(id(x) for x in a if isinstance(x, torch.Tensor))
    return ids


def _identity(t: torch.Tensor) -> tuple:
    """Which buffer, in which state: equal for the same unmodified gradient tensor."""
    try:
        return (t.data_ptr(), t._version, tuple(t.shape))
    except RuntimeError:
        return (id(t), -1, ())


def _version(t: torch.Tensor) -> int:
    """``t._version``; inference tensors have no version counter (0)."""
    try:
        return t._version
    except RuntimeError:
        return 0


def _flatten_tensors(out, depth: int = 0) -> list:
    if isinstance(out, torch.Tensor):
        return [out]
    if depth < 3 and isinstance(out, (tuple, list)):
        result = []
        for item in out:
            result.extend(_flatten_tensors(item, depth + 1))
        return result
    return []
