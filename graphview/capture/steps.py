"""The step protocol: how graphview runs a step script, the same with and without recording.

A step script defines a top-level ``step()``. For each training step graphview

1. zeroes the grads of the script's ``optimizer`` (from the second step on, unless the run
   accumulates),
2. calls ``step()``,
3. calls ``backward()`` on what ``step()`` returned, if that is a tensor with a ``grad_fn`` and
   ``step()`` did not already call ``backward()`` on that very tensor (``torch.autograd.grad``
   calls, and backward calls on other tensors, do not count: ``loss = step(); loss.backward()``
   in plain Python would still run this one),
4. steps ``optimizer`` if a ``backward()`` ran during this step (in ``step()`` or in 3) and
   ``step()`` did not step it itself.

:class:`StepLog` watches backward calls and optimizer steps for rules 3 and 4. It is a plain
observer: it marks the roots of each ``backward()`` in their node's ``metadata`` and counts.
"""

from __future__ import annotations

import contextlib
import time
import types
from typing import Callable

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from graphview.capture.recorder import tracing
from graphview.core.options import RunOptions

_ROOT_KEY = "graphview_backward_root"


@contextlib.contextmanager
def watching_backward(before: Callable[[tuple, bool], None]):
    """Call ``before(roots, accumulate_grad)`` at the start of every real backward call (not the
    fake ones torch.compile traces), a plain observer around torch's one entry point."""
    original = torch.autograd._engine_run_backward
    graph_original = torch.autograd.graph._engine_run_backward

    def engine_run_backward(t_outputs, *args, **kwargs):
        if not tracing():
            before(t_outputs, kwargs.get("accumulate_grad", True))
        return original(t_outputs, *args, **kwargs)

    torch.autograd._engine_run_backward = engine_run_backward
    torch.autograd.graph._engine_run_backward = engine_run_backward
    try:
        yield
    finally:
        torch.autograd._engine_run_backward = original
        torch.autograd.graph._engine_run_backward = graph_original


class StepLog:
    """Counts ``backward()`` calls (not ``autograd.grad``) and optimizer steps while installed."""

    def __init__(self) -> None:
        self.backward_calls = 0
        self.optimizer_steps = 0

    @contextlib.contextmanager
    def installed(self):
        log = self

        def before_backward(t_outputs, accumulate_grad: bool) -> None:
            if accumulate_grad:
                log.backward_calls += 1
                for t in t_outputs:
                    node = t.grad_fn if isinstance(t, torch.Tensor) else t.node
                    if node is not None:
                        node.metadata[_ROOT_KEY] = log.backward_calls

        def optimizer_stepped(optimizer, args, kwargs):
            log.optimizer_steps += 1

        handle = register_optimizer_step_post_hook(optimizer_stepped)
        try:
            with watching_backward(before_backward):
                yield self
        finally:
            handle.remove()

    def backward_ran_on(self, t: torch.Tensor, since: int) -> bool:
        """Whether a ``backward()`` counted after ``since`` started from ``t`` itself."""
        node = t.grad_fn
        return node is not None and node.metadata.get(_ROOT_KEY, 0) > since


def script_optimizer(module: types.ModuleType):
    optimizer = module.__dict__.get("optimizer")
    return optimizer if isinstance(optimizer, torch.optim.Optimizer) else None


def run_steps(module: types.ModuleType, options: RunOptions, log: StepLog,
              emit: Callable[[dict], None] = lambda event: None,
              on_result: Callable[[int, object], None] | None = None,
              summarize: Callable[[object], object] | None = None,
              identify: Callable[[torch.Tensor], int | None] | None = None,
              around_step: Callable[[], object] = contextlib.nullcontext,
              around_forward: Callable[[], object] = contextlib.nullcontext) -> None:
    """Run ``step()`` of ``module`` ``options.steps`` times by the protocol above.

    ``on_result(step, result)`` sees what ``step()`` returned, before graphview's backward;
    ``identify(tensor)`` gives the recorded id of a returned tensor (``step_end``'s ``tid``).
    Each step (zero_grad to optimizer step) runs in ``around_step()``, each ``step()`` call in
    ``around_forward()`` (the what-if options: save_on_cpu, autocast).
    """
    step_fn = module.__dict__["step"]
    optimizer = script_optimizer(module)
    for number in range(1, options.steps + 1):
        emit({"ev": "step_start", "step": number})
        began = time.perf_counter()
        with around_step():
            if number > 1 and optimizer is not None and not options.accumulate:
                optimizer.zero_grad()
            backwards_before = log.backward_calls
            optimizer_steps_before = log.optimizer_steps
            with around_forward():
                result = step_fn()
            if on_result is not None:
                on_result(number, result)
            if (isinstance(result, torch.Tensor) and result.grad_fn is not None
                    and not log.backward_ran_on(result, backwards_before)):
                result.backward()
            if (optimizer is not None and log.backward_calls > backwards_before
                    and log.optimizer_steps == optimizer_steps_before):
                optimizer.step()
        seconds = round(time.perf_counter() - began, 6)  # (recording included, where it records)
        returned = summarize(result) if summarize is not None and isinstance(result, torch.Tensor) else None
        tid = identify(result) if identify is not None and isinstance(result, torch.Tensor) else None
        del result
        emit({"ev": "step_end", "step": number, "result": returned, "seconds": seconds,
              **({"tid": tid} if tid is not None else {})})
