"""Ops: a ``TorchFunctionMode`` sees every user-level torch call.

Each call becomes an ``op`` event (name, source line, module path, inputs, outputs and the
``grad_fn`` the output got). ``autograd.Function.apply`` is invisible to the mode and is wrapped
instead; ``torch.compile`` is wrapped so that Dynamo runs the recorder rather than tracing it.
The ``--detach-at`` toggle hands the script a detached result.
"""

from __future__ import annotations

import itertools
import sys
import weakref
from contextlib import ExitStack

import torch
from torch.nn.parameter import is_lazy
from torch.overrides import TorchFunctionMode

from graphview.capture.identity import TensorIdentity, _Stale
from graphview.capture.state import RECOMPUTE_MODULE, VID_KEY, _flatten_tensors, _tensor_ids, tracing
from graphview.capture.summaries import summarize

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

# what the mode does with a torch function: answer at once, record an op, or look at a descriptor
_PASS, _OP, _GRAD_GET, _GRAD_SET, _PROPERTY_OP, _TRACK_SET = range(6)
_KINDS: dict = {}  # func -> (kind, name): the torch API is finite, but a bound keeps it so
_KINDS_MAX = 1 << 13


def _classify(func) -> tuple[int, str]:
    name = getattr(func, "__name__", None) or type(func).__name__
    if name == "__get__" or name == "__set__":
        attr = getattr(getattr(func, "__self__", None), "__name__", "")
        if attr == "grad":
            kind = _GRAD_GET if name == "__get__" else _GRAD_SET
        elif name == "__get__":
            kind = _PROPERTY_OP if attr in _PROPERTY_OPS else _PASS
        else:
            kind = _TRACK_SET if attr in ("requires_grad", "data") else _PASS
        return kind, attr
    return (_PASS if name in _IGNORED or name in _BACKWARD_CALLS else _OP), name


def _kind_of(func) -> tuple[int, str]:
    try:
        return _KINDS[func]
    except KeyError:
        kind = _KINDS[func] = _classify(func)
        if len(_KINDS) > _KINDS_MAX:
            _KINDS.clear()
        return kind
    except TypeError:  # an unhashable callable
        return _classify(func)


def _written(name: str, args, inputs: list, inplace: bool) -> list:
    """The tensors an op wrote into: an in-place op's first input; a ``_foreach_*_`` op's (and
    GradScaler's ``_amp_foreach_non_finite_check_and_unscale_``'s) first list."""
    if inplace:
        return inputs[:1]
    if name.endswith("_") and name.startswith(("_foreach_", "_amp_foreach_")) and args \
            and isinstance(args[0], (list, tuple)):
        return [t for t in args[0] if isinstance(t, torch.Tensor)]
    return []


def _compiled_before() -> bool:
    """Whether ``torch.compile`` was called in this process (a compiled function may run later).

    Not whether Dynamo is imported: building any optimizer imports it, and the compile-safe
    wrappers cost about 0.7 µs on every recorded call."""
    if "torch._dynamo" not in sys.modules:
        return False
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    backends = getattr(eval_frame, "cached_backends", None)
    if not isinstance(backends, dict):
        return True  # a torch that keeps no such record: be safe
    return any(backend is not None for backend in backends.values())


class _OpMode(TorchFunctionMode):
    def __init__(self, recorder: "OpHooks") -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return self.recorder._on_torch_function(func, args, kwargs or {})


_RECORDING_TORCH_FUNCTION = _OpMode.__torch_function__


class OpHooks(TensorIdentity):
    """The ops mechanism."""

    def install_ops(self, stack: ExitStack) -> None:
        stack.enter_context(_OpMode(self))
        stack.callback(setattr, _OpMode, "__torch_function__", _RECORDING_TORCH_FUNCTION)
        if _compiled_before():  # something compiled code before the recording began
            self._compile_safe()
        self.patch(stack, torch, "compile", self._wrap_compile(torch.compile))
        original_apply = torch.autograd.Function.__dict__["apply"]
        self.patch(stack, torch.autograd.Function, "apply",
                   classmethod(self._wrap_function_apply(original_apply.__func__)))

    def _on_torch_function(self, func, args, kwargs):
        kind, name = _kind_of(func)
        if kind == _PASS or self._suspend:
            return func(*args, **kwargs)
        if kind != _OP:
            return self._on_descriptor(func, kind, name, args, kwargs)
        if tracing():
            return func(*args, **kwargs)
        frame, internal = self.user_frame(3)
        if internal:
            return func(*args, **kwargs)
        with self.at_work():
            self.flush_names(frame)
        self._op_inputs = _tensor_ids(args, kwargs)
        try:
            out = func(*args, **kwargs)
        except Exception as exc:
            self._note_failed_op(exc, name, args, kwargs)
            raise
        finally:
            self._op_inputs = None
        return self._recorded(name, args, kwargs, out, frame)

    def _note_failed_op(self, exc: Exception, name: str, args, kwargs) -> None:
        """An op the script called raised: the exception carries what the error event says of it
        (graphview.capture.script.error_event): the op, the recorded tensors it took (drawn as
        where the error happened) and the module it ran in. The innermost op's, where ops nest."""
        if getattr(exc, "_graphview_op", None) is not None:
            return
        tids = [tid for tid in map(self.tid_of, _flatten_tensors([*args, *kwargs.values()])) if tid is not None]
        module = self._module_stack[-1] if self._module_stack else None
        try:
            exc._graphview_op = {"op": name, "inputs": list(dict.fromkeys(tids)), "module": module}
        except (AttributeError, TypeError):  # an exception type that takes no attributes
            pass

    def _recorded(self, name, args, kwargs, out, frame):
        """Record the op that returned ``out``; what the script gets (detached, at ``--detach-at``)."""
        with self.at_work():
            detach = self._record_op(name, args, kwargs, out, frame)
        if detach:
            with self._lock, self.quiet():
                out = self._force_detach(out, frame.f_lineno if frame is not None else None)
        self.handover()
        return out

    def _on_descriptor(self, func, kind, attr, args, kwargs):
        out = func(*args, **kwargs)
        if kind == _GRAD_GET or kind == _GRAD_SET:
            if args and isinstance(args[0], torch.Tensor):
                frame, internal = self.user_frame(3)
                if not internal:
                    with self.at_work():
                        self._grad_attribute(kind, args, out, frame)
                    self.handover()
        elif kind == _PROPERTY_OP:
            if isinstance(out, torch.Tensor):
                frame, internal = self.user_frame(3)
                if not internal:
                    return self._recorded(attr, args[:1], {}, out, frame)
        elif args and isinstance(args[0], torch.Tensor) and not is_lazy(args[0]):  # requires_grad or data set
            # (a lazy module's parameter, while ``materialize`` sets its data, is not a tensor yet)
            with self.at_work():
                frame, _ = self.user_frame(3)
                self.tensor_ref(args[0], frame.f_lineno if frame else None)
        return out

    def _grad_attribute(self, kind, args, out, frame) -> None:
        """``t.grad`` read or set by the script."""
        line = frame.f_lineno if frame else None
        tid = self.tensor_ref(args[0], line)[0]
        if kind == _GRAD_GET:
            self._emit_fn({"ev": "grad_read", "tid": tid, "none": out is None, "line": line})
            return
        value = args[1] if len(args) > 1 else None
        if value is None:
            self._emit_fn({"ev": "grad_reset", "tids": [tid], "how": "assign_none", "line": line, "source": "assign"})
        else:
            self._note_grad(value, tid)
            self._emit_fn({"ev": "grad_reset", "tids": [tid], "how": "assign", "line": line,
                           "source": "assign", "value": summarize(value)})

    def _grads_written(self, name, args, inputs, inplace, line) -> None:
        """A ``.grad`` an op wrote into (``p.grad.zero_()``, clip_grad_norm_'s ``_foreach_mul_``,
        GradScaler's unscale, which returns nothing): a change of the gradient the optimizer uses."""
        for t in _written(name, args, inputs, inplace):
            g = self._grad_of.get(id(t))
            if g is not None and g[0]() is t:
                how = "zero" if name in ("zero_", "_foreach_zero_") else "in_place"
                event = {"ev": "grad_reset", "tids": [g[1]], "how": how, "line": line, "source": name}
                if how == "in_place":
                    event["value"] = summarize(t)
                self._emit_fn(event)

    def _record_op(self, name, args, kwargs, out, frame) -> bool:
        """The ``op`` event (and ``detach``, ``retain_grad``); whether ``--detach-at`` detaches here."""
        line = frame.f_lineno if frame is not None else None
        mode = self._check_mode(line)
        inputs = []
        for a in itertools.chain(args, kwargs.values()):
            if isinstance(a, torch.Tensor):
                inputs.append(a)
            elif isinstance(a, (list, tuple)):
                inputs.extend(x for x in a if isinstance(x, torch.Tensor))
        inplace = name.endswith("_") and not name.startswith("_") or name.startswith("__i")
        if inplace or name[-1:] == "_":
            self._grads_written(name, args, inputs, inplace, line)
        outputs = _flatten_tensors(out)
        if not outputs and name not in _NOTABLE_NON_TENSOR and name != "retain_grad":
            return False
        oid = next(self._oids)
        self.op_count = oid
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
        self._emit_held(("op", oid, name, line, module, in_refs, out_refs, grad_fn, mode, inplace,
                         self._recompute[-1] if self._recompute else None))
        if name in ("detach", "detach_", "data") and inputs and outputs:
            self._emit_fn({"ev": "detach", "src": in_refs[0][0], "dst": out_refs[0][0], "line": line, "forced": False})
        elif name == "retain_grad" and inputs:
            self._retained[in_refs[0][0]] = weakref.ref(inputs[0])
            self._emit_fn({"ev": "retain_grad", "tid": in_refs[0][0], "line": line})
        return oid in self._detach_ops or (line is not None and line in self._detach_lines)

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

    def _compile_safe(self) -> None:
        """Once a script uses torch.compile: Dynamo must run the recorder's code, not trace into it
        (it cannot trace sys._getframe, and fails). Not done up front: importing Dynamo takes
        seconds and its wrapper costs about 0.7 µs a call."""
        if self._compile_safe_on:
            return
        self._compile_safe_on = True
        if _OpMode.__torch_function__ is _RECORDING_TORCH_FUNCTION:
            _OpMode.__torch_function__ = torch.compiler.disable(_RECORDING_TORCH_FUNCTION)
        if self._module_hooks:  # the modules mechanism is installed already: its hooks too
            self.module_hooks_compile_safe()

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
                    "CompiledFunctionBackward node a plain run can have; values and gradients are its ops' "
                    "run one by one (a compiled optimizer step's can differ from a plain run's in the last bits)\n")})
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
            with recorder.at_work():
                recorder.flush_names(frame)
            block, out = recorder.checkpointed_module(cls, args), None  # (its call, entered here: see there)
            try:
                recorder._op_inputs = _tensor_ids(args, kwargs)
                try:
                    with recorder.quiet():
                        out = original(cls, *args, **kwargs)
                finally:
                    recorder._op_inputs = None
                out = recorder._recorded(f"{cls.__name__}.apply", args, kwargs, out, frame)
            finally:
                if block is not None:
                    out = recorder.checkpointed_module_done(block, args, out)
            return out

        return apply
