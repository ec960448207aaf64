"""Modules and optimizers: global hooks give module paths and parameter names, optimizer
steps, ``zero_grad`` and ``train()``/``eval()`` calls.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from contextlib import ExitStack

import torch
import torch.utils.checkpoint
from torch.nn.parameter import is_lazy
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from graphview.capture.identity import TensorIdentity
from graphview.capture.module_names import module_paths, root_prefix, variable_holding
from graphview.capture.state import _TORCH_OPTIM_DIR, RECOMPUTE_MODULE, _version
from graphview.capture.parameter_summaries import summarize_parameters


#: what ``torch.nn.utils.parametrize`` puts in place of a parametrized weight (weight_norm's)
_PARAMETRIZATIONS = torch.nn.utils.parametrize.ParametrizationList
#: the Function a reentrant checkpoint runs its function in (a private name: where missing, None)
_CHECKPOINT_FUNCTION = getattr(torch.utils.checkpoint, "CheckpointFunction", None)


class ModuleHooks(TensorIdentity):
    """The modules-and-optimizers mechanism."""

    def install_modules(self, stack: ExitStack) -> None:
        # each undo is on the stack before what it undoes is installed
        stack.callback(self._remove_module_hooks)
        if self._compile_safe_on:
            self.module_hooks_compile_safe()
        else:
            self._module_hooks = self._register_module_hooks(self._module_pre, self._module_post)
        stack.callback(self._restore_optimizer_steps)
        self._unobserve_steps_hooked_already()
        if self.own_optimizer_hooks:
            optimizer_hooks: list = []
            stack.callback(lambda: [handle.remove() for handle in optimizer_hooks])
            optimizer_hooks += [register_optimizer_step_pre_hook(self._optimizer_pre),
                                register_optimizer_step_post_hook(self._optimizer_post)]
        self.patch(stack, torch.optim.Optimizer, "zero_grad",
                   self._wrap_zero_grad(torch.optim.Optimizer.zero_grad, "optimizer"))
        self.patch(stack, torch.nn.Module, "zero_grad", self._wrap_zero_grad(torch.nn.Module.zero_grad, "module"))
        self.patch(stack, torch.nn.Module, "train", self._wrap_train(torch.nn.Module.train))

    @staticmethod
    def _register_module_hooks(pre, post) -> list:
        mm = torch.nn.modules.module
        return [mm.register_module_forward_pre_hook(pre), mm.register_module_forward_hook(post, always_call=True)]

    def _remove_module_hooks(self) -> None:
        for handle in self._module_hooks:
            handle.remove()
        self._module_hooks = []

    def module_hooks_compile_safe(self) -> None:
        """The module hooks run, not traced, under torch.compile (see ``OpHooks._compile_safe``), and
        torch's optimizer steps are its own again (Dynamo, tracing a compiled step, fails on the
        replacement's making and would trace the mode's popping)."""
        self._restore_optimizer_steps()
        self._remove_module_hooks()
        self._module_hooks = self._register_module_hooks(torch.compiler.disable(self._module_pre),
                                                         torch.compiler.disable(self._module_post))

    def _register_root(self, root: torch.nn.Module) -> None:
        key = id(root)
        ref = self._roots.get(key)
        if ref is not None and ref() is root:
            return
        self._roots[key] = weakref.ref(root)
        prefix = self._root_prefix(root)
        for path, m in module_paths(root, prefix):
            self._name_once(m, path)
        new_tensors = [p for qual, p in root.named_parameters() if self._name_once(p, prefix + qual)]
        # a tied weight (an LM head's weight is its embedding's) is one tensor under two names
        also: dict[int, list[str]] = {}
        named_now = {id(p) for p in new_tensors}
        for qual, p in root.named_parameters(remove_duplicate=False):
            if id(p) in named_now and self._names.get(id(p)) != prefix + qual:
                also.setdefault(id(p), []).append(prefix + qual)
        for qual, b in root.named_buffers():
            if self._name_once(b, prefix + qual):
                self._buffers.add(id(b))
                new_tensors.append(b)
        frame, _ = self.user_frame(3)
        line = frame.f_lineno if frame else None
        for t in new_tensors:
            if is_lazy(t):
                # a lazy module's (LazyLinear) parameter has no shape until the module's own hook,
                # after this one, materializes it in place: it keeps the name given here, and its
                # first use records it, shape and values as torch made them
                continue
            entry = self._tensors.get(id(t))
            if entry is not None and entry[0]() is t:
                # known since the model's constructor made (and initialised) it: it gets its name now
                event = {"ev": "name", "tid": entry[1], "name": self._names[id(t)]}
                if id(t) in self._buffers:
                    event["kind"] = "buffer"  # recorded as a plain input until now
                if id(t) in also:
                    event["also"] = also[id(t)]
                self._emit_fn(event)
            else:
                tid = self.tensor_ref(t, line, pending=False)[0]
                if id(t) in also:
                    self._emit_fn({"ev": "name", "tid": tid, "name": self._names[id(t)], "also": also[id(t)]})

    def _root_prefix(self, root: torch.nn.Module) -> str:
        """What a called root module's names start with (see :func:`root_prefix`)."""
        return root_prefix(root, self._variable_holding(root))

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
        return variable_holding(obj, self.script, self.extra_scopes, depth=2)

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
        with self.at_work():
            if not self._module_stack and type(module) is not _PARAMETRIZATIONS:
                # (a parametrized weight read outside a forward, in its model's constructor: not a
                # root, or its parameters would keep the names original0, original1)
                self._register_root(module)
            path = self._module_path(module)
            self._module_stack.append(path)
            self._emit_fn(("module_enter", path, type(module).__name__))
        return None

    def _module_post(self, module, args, output):
        if self._suspend or not self._active or not self._module_stack:
            return None
        with self.at_work():
            path = self._module_stack.pop()
            self._emit_fn(("module_exit", path))
        if path in self._detach_modules:
            with self._lock, self.quiet():
                frame, _ = self.user_frame(3)
                return self._force_detach(output, frame.f_lineno if frame else None)
        return None

    def checkpointed_module(self, cls, args) -> torch.nn.Module | None:
        """The module a reentrant checkpoint runs (``checkpoint(block, x, use_reentrant=True)``:
        ``CheckpointFunction.apply(block, preserve_rng_state, x)``), its call entered; else None.
        The checkpoint calls the module inside the Function's forward, where the recorder is quiet
        (a custom Function is one op): its call made no module box, and the checkpoint's node,
        made as the call returns, with the input it keeps, went outside it. The call is entered
        around the Function instead (the module's hooks inside stay quiet), so that node is the
        module's, as a plain call's nodes are (the call made no other: torch runs it under no_grad)."""
        if cls is not _CHECKPOINT_FUNCTION or len(args) < 2 or not isinstance(args[0], torch.nn.Module):
            return None
        self._module_pre(args[0], args[2:])
        return args[0]

    def checkpointed_module_done(self, block: torch.nn.Module, args, out):
        """The call :meth:`checkpointed_module` entered, left: what the script gets (``out``, or
        detached at ``--detach-at``, as the module's own hook would)."""
        detached = self._module_post(block, args[2:], out)
        return out if detached is None else detached

    def _optimizer_pre(self, optimizer, args, kwargs):
        return None  # ops inside step() are skipped by user_frame (torch/optim frames)

    def _unobserve_steps_hooked_already(self) -> None:
        """:meth:`_unobserve_step` for each optimizer class torch wrapped already (an optimizer of it
        was made): from their first step in this recording on. (A class first wrapped while
        recording: from its second step, after ``_optimizer_post`` saw the first.) None under
        torch.compile (see :meth:`module_hooks_compile_safe`)."""
        if self._compile_safe_on:
            return
        classes, seen = list(torch.optim.Optimizer.__subclasses__()), set()
        while classes:
            cls = classes.pop()
            if cls in seen:
                continue
            seen.add(cls)
            classes.extend(cls.__subclasses__())
            if getattr(cls.__dict__.get("step"), "hooked", False):
                self._unobserve_step(cls)

    def _unobserve_step(self, owner: type) -> None:
        """``owner.step``, torch's own (its code in torch/optim, wrapped by torch for its step hooks),
        replaced until the recording ends by the same wrapper around :func:`_step_unobserved`: its
        hooks (the script's included) run as before, the step itself without the recording mode.

        Each of a step's tensor calls went through the mode only to be found torch's own (its
        frames in torch/optim) and passed on: about 2.7 us each, 2,600 of them (7 ms) for SGD
        over a 256-layer MLP's 514 parameters, three times the plain step."""
        hooked = owner.__dict__["step"]
        self._unobserved_steps[owner] = None  # (looked at once, whatever it is)
        inner = getattr(hooked, "__wrapped__", None)
        if not getattr(hooked, "hooked", False) or inner is None:
            return
        code = getattr(inspect.unwrap(inner), "__code__", None)
        if code is None or not code.co_filename.startswith(_TORCH_OPTIM_DIR):
            return  # (a step of the script's own: its calls are the script's to record)
        replacement = torch.optim.Optimizer.profile_hook_step(_step_unobserved(inner, self._self_ref))
        replacement.hooked = True  # (torch wraps a class's step once: this one is wrapped)
        self._unobserved_steps[owner] = hooked
        owner.step = replacement

    def _restore_optimizer_steps(self) -> None:
        for owner, hooked in self._unobserved_steps.items():
            if hooked is not None:
                owner.step = hooked
        self._unobserved_steps = {}

    def _optimizer_post(self, optimizer, args, kwargs, depth: int = 3):
        """``depth``: the frame that called ``optimizer.step()``, counted from ``user_frame``'s."""
        self.optimizer_step_count += 1
        # from the class's next step on, torch's own step runs without the recording mode (its
        # calls are not passed through it one by one to be skipped)
        if not self._compile_safe_on:
            owner = next((k for k in type(optimizer).__mro__ if "step" in k.__dict__), None)
            if owner is not None and owner not in self._unobserved_steps:
                self._unobserve_step(owner)
        if self._suspend or not self._active:
            return
        with self.at_work():
            frame, _ = self.user_frame(depth)
            line = frame.f_lineno if frame else None
            tids = []
            stepped = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
            for p, summary in zip(stepped, summarize_parameters(stepped)):  # each as it is right after step()
                ref = self.tensor_ref(p, line, pending=False, summary={})  # the value event right after has it
                tids.append(ref[0])
                self._emit_fn(("value", ref[0], _version(p), "optimizer", summary or None))
            self._emit_fn({"ev": "optimizer_step", "optimizer": type(optimizer).__name__, "tids": tids, "line": line})

    def _wrap_zero_grad(self, original, source):
        recorder = self

        def zero_grad(obj, *args, **kwargs):
            if recorder._suspend or not recorder._active:
                return original(obj, *args, **kwargs)
            set_to_none = kwargs.get("set_to_none", args[0] if args else True)
            with recorder._lock:
                with recorder.at_work():
                    params = (p for g in obj.param_groups for p in g["params"]) if source == "optimizer" else obj.parameters()
                    tids = [recorder.tensor_ref(p, None, pending=False)[0] for p in params if p.grad is not None]
                # the script's zero_grad, as torch runs it (its calls ignored, and not passed through the mode)
                with recorder.quiet(), recorder.mode_popped():
                    result = original(obj, *args, **kwargs)
                frame, _ = recorder.user_frame(2)
                recorder._emit_fn({"ev": "grad_reset", "tids": tids, "how": "set_to_none" if set_to_none else "zero",
                                   "line": frame.f_lineno if frame else None, "source": f"{source}.zero_grad"})
            recorder.handover()
            return result

        zero_grad.__wrapped__ = original
        zero_grad.__doc__ = original.__doc__
        return zero_grad

    def _wrap_train(self, original):
        """``model.train()`` / ``model.eval()``: recorded, since eval() is often mistaken for no_grad."""
        recorder = self

        def train(module, mode=True):
            outermost = not recorder._switching_mode
            recorder._switching_mode = True  # (train() calls each child's: one event, the script's call)
            try:
                result = original(module, mode)
            finally:
                recorder._switching_mode = not outermost
            if outermost and recorder._active and not recorder._suspend:
                frame, internal = recorder.user_frame(2)
                if frame is not None and not internal:
                    with recorder.at_work():
                        recorder._emit_fn({"ev": "module_mode", "type": type(module).__name__, "training": bool(mode),
                                           "line": frame.f_lineno})
                    recorder.handover()
            return result

        train.__wrapped__ = original
        return train


def _step_unobserved(step, recorder_ref):
    """``step`` (torch's own optimizer step, the function its step hooks wrap) run with the
    recording mode popped from the torch-function mode stack, where that mode is the innermost
    one and no closure is passed (a closure is the script's forward and backward: recorded)."""

    @functools.wraps(step)
    def step_unobserved(*args, **kwargs):
        recorder = recorder_ref()
        closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
        if recorder is None or not recorder._active or closure is not None:
            return step(*args, **kwargs)
        with recorder.mode_popped():
            return step(*args, **kwargs)

    return step_unobserved
