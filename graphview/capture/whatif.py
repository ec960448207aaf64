"""What-if memory: the run options that change what autograd keeps, applied as a script would.

* ``--checkpoint MODULE``: the module's forward becomes
  ``torch.utils.checkpoint.checkpoint(forward, *args, use_reentrant=False, **kwargs)`` (its keyword
  arguments bound to ``forward`` first, so that none is taken for one of checkpoint's own);
* ``--autocast DTYPE``: the forward (a step script's ``step()``) runs under
  ``torch.autocast(device_type, dtype=DTYPE)``;
* ``--save-on-cpu``: each step (``step()``, its backward, the optimizer step) runs under
  ``torch.autograd.graph.save_on_cpu()``.

The same code runs with and without the recorder, so a plain run with the same options (the
reference of a fidelity check) computes exactly what the recorded one did. Under the recorder,
``save_on_cpu``'s hooks, as any pair a script makes, count what they keep (see
:meth:`graphview.capture.hooks.saved.SavedTensorHooks._counted`).
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from typing import Callable

import torch
from torch.utils.checkpoint import checkpoint

from graphview.capture.module_names import module_paths, root_prefix, variable_holding
from graphview.core.options import RunOptions, module_matches

SAVE_ON_CPU_ON_CPU = ("graphview: note: --save-on-cpu moved nothing in this run: every tensor autograd saved was "
                      "already on the CPU, and save_on_cpu only copies saved tensors from an accelerator to the "
                      "CPU (here tensor.cpu() is the tensor itself), so it frees nothing; since it keeps that "
                      "tensor and not a detached one, a saved output keeps its own graph alive until a backward "
                      "runs through it\n")


def autocast_device(options: RunOptions) -> str:
    """The device type ``torch.autocast`` is given: the run's device, else CUDA where there is one."""
    if options.device:
        return torch.device(options.device).type
    return "cuda" if torch.cuda.is_available() else "cpu"


class WhatIf:
    """The what-if options of one run. ``installed()`` around the whole script (it finds the
    modules to checkpoint as they are first called); ``around_step()`` and ``around_forward()``
    around each step and each ``step()`` call (a plain script: around all of it)."""

    def __init__(self, options: RunOptions, script: str, scopes: list[dict], recorder=None,
                 emit: Callable[[dict], None] = lambda event: None) -> None:
        self.options = options
        self.script = script
        self.scopes = scopes
        self.recorder = recorder
        self.emit = emit
        self.checkpointed: list[str] = []  # the paths whose forward now runs under checkpoint
        self._patched: list[tuple[weakref.ref, object]] = []
        self._named: dict[int, weakref.ref] = {}
        self._devices_saved: set[str] = set()

    @property
    def active(self) -> bool:
        o = self.options
        return bool(o.checkpoint or o.autocast or o.save_on_cpu)

    @contextlib.contextmanager
    def installed(self):
        if not self.options.checkpoint:
            yield self
            return
        handle = torch.nn.modules.module.register_module_forward_pre_hook(self._module_called)
        try:
            yield self
        finally:
            handle.remove()
            for ref, original in self._patched:
                module = ref()
                if module is not None and module.__dict__.get("forward") is not original:
                    module.__dict__.pop("forward", None)
            if self.recorder is not None and not self.checkpointed:
                self.emit({"ev": "stderr", "text": f"graphview: --checkpoint {', '.join(self.options.checkpoint)} "
                                                   "matched no module called in this run\n"})

    def _module_called(self, module: torch.nn.Module, args) -> None:
        """A module called for the first time is a root: name its modules as the recorder does and
        make the forward of those the options name run under checkpoint."""
        ref = self._named.get(id(module))
        if ref is not None and ref() is module:
            return None
        prefix = root_prefix(module, variable_holding(module, self.script, self.scopes, depth=2))
        for path, m in module_paths(module, prefix):
            known = self._named.get(id(m))
            if known is not None and known() is m:
                continue
            self._named[id(m)] = weakref.ref(m)
            if m is not module and any(module_matches(p, path) for p in self.options.checkpoint):
                self._checkpoint(m, path)
        return None

    def _checkpoint(self, module: torch.nn.Module, path: str) -> None:
        forward = module.forward

        def checkpointed_forward(*args, **kwargs):
            # the keyword arguments are bound first: checkpoint() would take one named as its own
            # options (debug, context_fn, preserve_rng_state...) and the module would never see it.
            # torch keeps keyword arguments for the recompute as they are either way, not saved
            return checkpoint(functools.partial(forward, **kwargs) if kwargs else forward, *args,
                              use_reentrant=False)

        module.forward = checkpointed_forward
        self._patched.append((weakref.ref(module), checkpointed_forward))
        self.checkpointed.append(path)

    def around_forward(self):
        if not self.options.autocast:
            return contextlib.nullcontext()
        return torch.autocast(autocast_device(self.options), dtype=getattr(torch, self.options.autocast))

    def around_step(self):
        if not self.options.save_on_cpu:
            return contextlib.nullcontext()
        # (made while recording, its hooks count what they keep: see SavedTensorHooks._counted)
        return torch.autograd.graph.save_on_cpu(device_type=autocast_device(self.options))

    def report(self) -> None:
        """After the run: say what an option changed nothing in (``--save-on-cpu`` on the CPU)."""
        if self.recorder is None or not self.options.save_on_cpu:
            return
        if not any(device != "cpu" for device in self.recorder.saved_devices):
            self.emit({"ev": "stderr", "text": SAVE_ON_CPU_ON_CPU})
