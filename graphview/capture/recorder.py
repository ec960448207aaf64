"""The recorder: watches autograd while a script runs and emits plain events.

It is built from one mechanism per module (see docs/capture.md for why each was chosen):

* ``hooks/ops.py``: a ``TorchFunctionMode`` sees every user-level torch call;
* ``hooks/saved.py``: ``saved_tensors_hooks`` see every tensor autograd saves, and its release;
* ``hooks/backward.py``: a wrapper around ``torch.autograd._engine_run_backward`` hooks every
  node of the graph for one backward call (execution order, gradients, accumulation);
* ``hooks/modules.py``: global module and optimizer hooks (module paths, parameter names,
  optimizer steps, ``zero_grad``, ``train``/``eval``),

over the shared state of ``state.py`` and the tensor and node ids of ``identity.py``.

Rules that keep the measurement honest: events hold no tensor and no autograd node; nodes are
identified by an integer stamped into ``node.metadata``; tensors are tracked through weak
references only; every hook returns ``None``. Everything is installed on one ``ExitStack``, so
leaving the recorder (or a failure half-way through installing it) removes every hook and
restores every patched function, whatever happened.
"""

from __future__ import annotations

from contextlib import ExitStack

from graphview.capture.hooks.backward import BackwardHooks
from graphview.capture.hooks.modules import ModuleHooks
from graphview.capture.hooks.ops import OpHooks
from graphview.capture.hooks.saved import SavedTensorHooks
from graphview.capture.state import ACCUMULATE_GRAD, RECOMPUTE_MODULE, VID_KEY, tracing

__all__ = ["Recorder", "VID_KEY", "ACCUMULATE_GRAD", "RECOMPUTE_MODULE", "tracing"]


class Recorder(OpHooks, SavedTensorHooks, BackwardHooks, ModuleHooks):
    """Record everything autograd does while active (use as a context manager).

    Ops are recorded in the thread that entered the recorder (torch function modes are
    per thread); backward calls are recorded from any thread.

    ``emit`` receives each event dict. ``script`` is the path of the user's script: source
    lines, variable names and tracebacks are taken from frames of that file.
    """

    _stack: ExitStack | None = None

    def __enter__(self) -> "Recorder":
        with ExitStack() as stack:
            self.install_saved(stack)
            self.install_ops(stack)
            self.install_backward(stack)
            self.install_modules(stack)
            self._active = True
            stack.callback(setattr, self, "_active", False)
            self._stack = stack.pop_all()  # installed: nothing to undo now
        return self

    def __exit__(self, *exc: object) -> None:
        stack, self._stack = self._stack, None
        if stack is None:
            return
        try:
            self.flush_names()
        finally:
            stack.close()
