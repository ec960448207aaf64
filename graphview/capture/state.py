"""The state every recording mechanism shares, and the plumbing they all use.

A :class:`~graphview.capture.recorder.Recorder` is one object built from the mechanisms in
``graphview/capture/hooks/`` (ops, saved tensors, backward, modules) over this state and the
tensor and node identities of :mod:`graphview.capture.identity`. Everything a mechanism keeps
between calls is set in :meth:`RecorderState.__init__` (and the two small methods it calls),
with what it holds.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import threading
import weakref
from typing import Any, Callable

import torch

from graphview.capture.script_names import ContainersSeen
from graphview.capture.summaries import device_name, dtype_name
from graphview.core.compact_events import expanding
from graphview.core.options import RunOptions, parse_detach_spec

VID_KEY = "graphview_vid"
TOKEN_KEY = "graphview_token"
LIFE_KEY = "graphview_life"
ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"
RECOMPUTE_MODULE = "checkpoint recompute"  # the module box of ops a checkpoint recomputes in backward
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_TORCH_OPTIM_DIR = os.path.join(_TORCH_DIR, "optim") + os.sep
# (a lazy module's parameters are made at its first call: ``_infer_parameters`` runs its
# ``initialize_parameters``, which calls each one's ``materialize``; torch's initialisation too)
_INTERNAL_FUNCTIONS = frozenset({"__init__", "reset_parameters", "_reset_parameters", "_infer_parameters",
                                 "materialize"})
_FAKE = torch._C._TorchDispatchModeKey.FAKE
_DisableTorchFunction = torch._C.DisableTorchFunction
_PROXY = torch._C._TorchDispatchModeKey.PROXY
_PARAMETER_TYPE = torch.nn.Parameter


class KeyedRef(weakref.ref):
    """A weak reference that carries a key (``weakref.KeyedRef`` without its Python ``__new__``
    and ``__init__``: made thousands of times a step, they cost more than the rest of it)."""

    __slots__ = ("key",)


def _keyed_ref(obj, callback, key) -> KeyedRef:
    ref = KeyedRef(obj, callback)
    ref.key = key
    return ref


class _Packed:
    """What autograd holds instead of a saved tensor while the recorder is on."""

    __slots__ = ("t", "sid", "version", "token", "output_nr", "gf_name", "source", "inner", "rec")

    def __init__(self, t, sid, version, token, output_nr, gf_name, source, inner=None, rec=None):
        self.t = t
        self.sid = sid
        self.version = version
        self.token = token
        self.output_nr = output_nr
        self.gf_name = gf_name
        self.source = source  # weakref to the tensor autograd passed in
        self.inner = inner  # what a script's own pack hook (save_on_cpu) made of it, if one runs inside ours
        self.rec = rec  # a weak reference to the recorder, told when autograd drops this (see NOTE below)

    def __del__(self) -> None:
        rec = self.rec() if self.rec is not None else None
        if rec is not None:
            rec._release(self.sid)


# NOTE [Deaths reported by finalisers]
# A node's death (its sentinel in ``node.metadata``) and a saved tensor's release (its ``_Packed``)
# are reported by the object's own ``__del__``, which runs at the moment its last reference goes,
# as a weak reference's callback would: one object each, where a keyed weak reference and its
# entry in a set cost two more objects that the cyclic collector keeps scanning, thousands a step.
# They hold the recorder weakly: a graph that outlives the recording keeps nothing of it alive.



def tracing(_get_mode=torch._C._get_dispatch_mode, _functorch=torch._C._are_functorch_transforms_active) -> bool:
    """Whether torch.compile (AOT autograd, make_fx) is tracing with fake tensors, or a torch.func
    transform runs, right now: its tensors are wrappers with no data of their own to read."""
    return _functorch() or _get_mode(_FAKE) is not None or _get_mode(_PROXY) is not None


# NOTE [The recorder's own torch calls]
# Every torch call made while a TorchFunctionMode is on the stack enters it first, property reads
# (``t.shape``, ``t.grad_fn``) included: about 2 µs each, more than most small ops cost. The
# recorder's own reads (in module and optimizer hooks, backward hooks, value summaries) run under
# ``torch._C.DisableTorchFunction`` (``RecorderState.at_work``): neither the recording mode nor a
# script's own modes or tensor subclasses see them. Only reads go there: anything handed back to
# torch or to the script (the detached tensor a pack hook keeps, a ``--detach-at`` result) and any
# of the script's code the recorder runs (``zero_grad``, ``Function.apply``) keeps torch function
# handling as it is, so a subclass keeps its type and a script's mode sees its calls.


class RecorderState:
    """What the recording mechanisms share: ids, the tensors and nodes seen, the module stack,
    the backward calls running, and the plumbing (``emit``, ``quiet``, ``user_frame``)."""

    #: whether installing the recorder registers its global optimizer-step hooks; ``False`` where
    #: the caller registered one of its own that calls ``_optimizer_post`` (graphview.record():
    #: a recording window opens and closes inside torch's loop over those hooks, which must not
    #: change size while it runs)
    own_optimizer_hooks = True

    def __init__(self, emit: Callable[[dict], None], script: str, options: RunOptions | None = None,
                 sample_cuda: bool | None = None) -> None:
        # the kinds a step makes by the thousand are made as tuples (graphview/core/compact_events.py),
        # for an emitter that says it takes them (the runner's pipe, whose reader makes them dicts);
        # any other gets each as its dict
        self._emit_fn = emit if getattr(emit, "takes_compact", False) else expanding(emit)
        # the emitter's "write what you hold": called where control goes back to the script (an
        # op returned), so a crash in the script's next line loses nothing (see runner.EventPipe)
        self.handover: Callable[[], None] = getattr(emit, "handover", None) or _nothing
        self.script = os.path.abspath(script)
        self.options = options or RunOptions()
        self._lock = threading.RLock()
        self._tls = threading.local()  # per thread: is the recorder itself at work (ignore torch calls)?
        self._at_work = RecorderState._AtWork(self)
        self._start_id_counters()
        # id(t) -> [ref, tid, version, grad_fn vid, requires_grad, version when grad_fn was last read]
        self._tensors: dict[int, list] = {}
        self._pending_names: list[list] = []  # [ref, tid, tries]
        self._containers = ContainersSeen()  # the script's lists and dicts looked into for names
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
        # id(leaf) -> what its AccumulateGrad's accumulate event needs, while a script's
        # post-accumulate-grad hook may run (see BackwardHooks._accumulated_first)
        self._accumulating: dict[int, tuple] = {}
        self._switching_mode = False  # inside a module's train() / eval() (see ModuleHooks._wrap_train)
        self._recomputed_refs: dict[int, weakref.ref] = {}  # sid -> what a checkpoint's recompute keeps
        self._saved_attr_cache: dict[type, tuple] = {}
        self._bw_current: list[int | None] = []
        self._unhooked: dict[int, list[int]] = {}  # vid -> sids of saved tensors torch kept without hooks
        # nodes whose saved values other saved-tensor hooks manage (non-reentrant checkpoint): their
        # backward unpacks them, which recomputes the checkpointed forward
        self._foreign_saved: set[int] = set()
        self.saved_devices: set[str] = set()  # device types of the tensors saved through a script's hooks
        self._recompute: list[int] = []  # bids of the backward calls whose checkpoint recompute is running
        self._module_hooks: list[Any] = []  # the global module hooks' handles (replaced under torch.compile)
        self._unobserved_steps: dict[type, Any] = {}  # optimizer classes looked at -> torch's step they replaced (None: kept)
        self._compile_safe_on = False  # torch.compile is in use: hooks run under Dynamo, not traced
        self._compile_noted = False  # said once per run that torch.compile'd code runs op by op
        self._read_detach_points()
        self._cuda = torch.cuda.is_available() if sample_cuda is None else sample_cuda
        self._alloc_last: int | None = None
        self._active = False
        self._self_ref = weakref.ref(self)  # what node sentinels and saved handles hold (NOTE above)
        self._on_tensor_gone = self._tensor_gone  # bound once: every reference shares it
        self._on_grad_gone = self._grad_gone
        self.extra_scopes: list[dict] = []  # namespaces searched for names after the frames (module globals)
        self.op_count = 0
        self.backward_count = 0
        self.detach_hits = 0
        self.optimizer_step_count = 0

    def _start_id_counters(self) -> None:
        """The counters the ids of a run come from (see graphview/core/events.py), each from 1: tensors,
        nodes, saved tensors, ops, backward calls, and the tokens that tie a saved tensor to the node
        that made it (see SavedTensorHooks)."""
        self._tids = itertools.count(1)
        self._vids = itertools.count(1)
        self._sids = itertools.count(1)
        self._oids = itertools.count(1)
        self._bids = itertools.count(1)
        self._tokens = itertools.count(1)

    def _read_detach_points(self) -> None:
        """Where ``--detach-at`` cuts the graph, by kind: op numbers, lines of the script, module paths."""
        self._detach_ops: set[int] = set()
        self._detach_lines: set[int] = set()
        self._detach_modules: set[str] = set()
        for spec in self.options.detach_at:
            kind, value = parse_detach_spec(spec)
            {"op": self._detach_ops, "line": self._detach_lines, "module": self._detach_modules}[kind].add(value)

    def tensor_ref_to(self, t: torch.Tensor) -> KeyedRef:
        """A weak reference to ``t`` whose death removes its entry from ``_tensors``."""
        return _keyed_ref(t, self._on_tensor_gone, id(t))

    def _tensor_gone(self, ref: KeyedRef) -> None:
        entry = self._tensors.get(ref.key)
        if entry is not None and entry[0] is ref:
            del self._tensors[ref.key]
            if self._active:  # (an input the script binds anew; an activation once backward freed its copy)
                with self._lock:
                    self._emit_fn(("tensor_dead", entry[1]))

    def _grad_gone(self, ref: KeyedRef) -> None:
        known = self._grad_of.get(ref.key)
        if known is not None and known[0] is ref:
            del self._grad_of[ref.key]

    @property
    def _suspend(self) -> int:
        return getattr(self._tls, "depth", 0)

    @_suspend.setter
    def _suspend(self, value: int) -> None:
        self._tls.depth = value

    @staticmethod
    def patch(stack, owner, name: str, value) -> None:
        """Set ``owner.name`` to ``value`` until ``stack`` closes (a class attribute as its descriptor)."""
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        stack.callback(setattr, owner, name, original)  # the undo first: it holds whatever fails next
        setattr(owner, name, value)

    def emit(self, event: dict | tuple) -> None:
        with self._lock:
            self._emit_held(event)

    def _emit_held(self, event: dict | tuple) -> None:
        """:meth:`emit` by a caller that holds the lock already (inside :meth:`at_work`): the event,
        and after the kinds that change what a GPU holds, its allocated bytes."""
        self._emit_fn(event)
        if self._cuda and (event[0] if type(event) is tuple else event["ev"]) in _ALLOCATING:
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
        """Inside this block the recorder ignores torch calls (code of the script's it does not record)."""
        return RecorderState._Quiet(self)

    class _AtWork:
        """The recorder's one :meth:`at_work` block, entered again for each use (an object made for
        each use was about a tenth of a block's instructions, thousands of blocks a step). Its
        blocks run under the recorder's lock: only the thread holding it enters or leaves one, and
        that thread's nested blocks leave in the order they entered, so ``offs`` is a stack of that
        thread's alone."""

        __slots__ = ("lock", "tls", "offs")

        def __init__(self, rec):
            self.lock = rec._lock
            self.tls = rec._tls
            self.offs: list = []  # the entered DisableTorchFunction of each open block, innermost last

        def __enter__(self):
            self.lock.acquire()
            tls = self.tls
            tls.depth = getattr(tls, "depth", 0) + 1
            off = _DisableTorchFunction()
            off.__enter__()
            self.offs.append(off)

        def __exit__(self, *exc):
            self.offs.pop().__exit__(None, None, None)
            self.tls.depth -= 1
            self.lock.release()

    def at_work(self) -> "_AtWork":
        """The recorder's own work, under its lock: reads of tensors (attributes, value
        summaries) with no torch function handling at all (see NOTE [The recorder's own torch
        calls]), and torch calls ignored as in :meth:`quiet`."""
        return self._at_work

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

    def mode_innermost(self) -> bool:
        """Whether this recorder's own torch-function mode is this thread's innermost one."""
        depth = torch._C._len_torch_function_stack()
        return bool(depth) and getattr(torch._C._get_function_stack_at(depth - 1), "recorder", None) is self

    def mode_popped(self):
        """A block run without this recorder's torch-function mode, where it is the innermost one
        (torch's own code, whose calls would each pass through it to be skipped); else as it is."""
        return torch.overrides._pop_mode_temporarily() if self.mode_innermost() else contextlib.nullcontext()

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

    @staticmethod
    def _saved_event(sid: int, t: torch.Tensor, owner: int | None = None, attr: str | None = None,
                     op_inputs: set | None = None) -> dict:
        nbytes, key, device, kind, shape, dtype = RecorderState._saved_fields(sid, t, op_inputs)
        return {
            "ev": "saved", "sid": sid, "bytes": nbytes, "storage": key, "device": device, "kind": kind,
            "shape": shape, "dtype": dtype, "owner": owner, "attr": attr,
        }

    @staticmethod
    def _saved_fields(sid: int, t: torch.Tensor, op_inputs: set | None) -> tuple:
        """A ``saved`` event's bytes, storage, device, kind, shape and dtype of ``t``."""
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
            leaf = t if base is None else base
            # a parameter (nn.Parameter, drawn green as one); a plain leaf that requires grad is an
            # input, as the canvas draws it ("leaf input that requires grad")
            kind = "param" if isinstance(leaf, _PARAMETER_TYPE) else "input"
            # a result the op made for itself (BatchNorm's batch statistics, max-pool indices)
            if kind == "input" and op_inputs is not None and id(t) not in op_inputs and (base is None or id(base) not in op_inputs):
                kind = "activation"
        else:
            kind = "activation"
        return nbytes, key, device_name(t.device), kind, list(t.shape), dtype_name(t.dtype)


#: events after which the GPU's allocated bytes are read (on a CUDA run)
_ALLOCATING = frozenset({"op", "bw_node_done", "backward_end", "release"})


def _nothing() -> None:
    return None


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
