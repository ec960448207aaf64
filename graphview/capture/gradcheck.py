"""Gradient check: autograd's gradient of a leaf against central finite differences, in float64.

The script runs in float64 up to its first backward call (a step script: its first ``step()``,
and backward on what it returns unless it called backward itself); the quantity checked is what
that backward differentiates, ``sum(seed * root)`` (the loss itself when it is a scalar).

1. A reference run finds the leaf by the name the script gave it (``x``, ``fc1.weight``), notes
   the first torch call that reads it, and takes autograd's gradient at the first backward.
2. For each element, two more runs add +eps / -eps to the leaf just before that first read and
   stop at the first backward with the value of the quantity.

The script must be deterministic (seeded random numbers) for the runs to agree.
"""

from __future__ import annotations

import io
import os
import sys
import types

import torch
import torch.autograd.graph as autograd_graph
from torch.overrides import TorchFunctionMode

from graphview.capture.script import StopRun, load_source

MAX_ELEMENTS = 64


class _Reached(BaseException):
    """The first backward was reached."""

    def __init__(self, value: float, grad, shape: list) -> None:
        super().__init__()
        self.value, self.grad, self.shape = value, grad, shape


class _Watch(TorchFunctionMode):
    """Counts torch calls. Finds the first call that reads the leaf, or nudges the leaf before one."""

    def __init__(self, scope: dict, name: str, perturb: tuple | None = None) -> None:
        super().__init__()
        self.scope, self.name, self.perturb = scope, name, perturb
        self.count = 0
        self.first_read: tuple[int, int] | None = None

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        self.count += 1
        if self.perturb is not None:
            at, position, element, delta = self.perturb
            if at == self.count:
                with torch.no_grad():
                    args[position].view(-1)[element] += delta
        elif self.first_read is None:
            leaf = resolve(self.scope, self.name)
            if leaf is not None:
                for i, a in enumerate(args):
                    if a is leaf:
                        self.first_read = (self.count, i)
        return func(*args, **(kwargs or {}))


def resolve(scope: dict, name: str):
    """``x``, ``fc1.weight``, ``model.0.weight`` or ``layers[2].bias`` among the script's globals."""
    if name in scope and isinstance(scope[name], torch.Tensor):
        return scope[name]
    for value in list(scope.values()):
        if isinstance(value, torch.nn.Module):
            params = dict(value.named_parameters())
            if name in params:
                return params[name]
    head, _, rest = name.partition(".")
    obj = scope.get(head.split("[")[0])
    if "[" in head and obj is not None:
        try:
            obj = obj[int(head[head.index("[") + 1:head.index("]")])]
        except (ValueError, IndexError, TypeError):
            return None
    for part in rest.split(".") if rest else ():
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, torch.Tensor) else None


def _run(path: str, code, name: str, perturb: tuple | None = None) -> tuple[_Reached, _Watch]:
    module = types.ModuleType("graphview_gradcheck")
    module.__file__ = path
    scope = module.__dict__
    watch = _Watch(scope, name, perturb)
    original = autograd_graph._engine_run_backward

    def first_backward(t_outputs, *args, **kwargs):
        seeds = args[0] if args else None
        roots = list(t_outputs)
        value = 0.0
        for i, root in enumerate(roots):
            seed = seeds[i] if seeds is not None and i < len(seeds) else None
            value += float((root if seed is None else root * seed).detach().sum())
        leaf = resolve(scope, name)
        if leaf is None:
            raise StopRun(f"no tensor named {name!r} exists when the script first calls backward()")
        grad = None
        autograd_graph._engine_run_backward = original  # autograd.grad below must run for real
        torch.autograd._engine_run_backward = original
        if perturb is None:
            grad = torch.autograd.grad(roots, [leaf], grad_outputs=list(seeds) if seeds else None,
                                       retain_graph=True, allow_unused=True)[0]
        raise _Reached(value, grad, list(leaf.shape))

    autograd_graph._engine_run_backward = first_backward
    torch.autograd._engine_run_backward = first_backward
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(path))
    torch.manual_seed(0)
    saved_out = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = io.StringIO()  # the re-runs' prints are not the user's output
    try:
        with watch:
            exec(code, scope)
            step = scope.get("step")
            if callable(step):  # a step script: graphview's first step, as its runner does it
                result = step()
                if isinstance(result, torch.Tensor) and result.grad_fn is not None:
                    torch.autograd.backward(result)
    except _Reached as reached:
        return reached, watch
    finally:
        autograd_graph._engine_run_backward = original
        torch.autograd._engine_run_backward = original
        sys.argv, sys.path[:] = saved_argv, saved_path
        sys.stdout, sys.stderr = saved_out
    raise StopRun("the script never calls backward(): there is no gradient to check")


def gradient_check(path: str, name: str, eps: float = 1e-6) -> dict:
    """``{"tensor", "shape", "autograd", "numeric", "max_abs_error", "max_rel_error", "eps"}``."""
    path = os.path.abspath(path)
    code = compile(load_source(path), path, "exec")
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        reference, watch = _run(path, code, name)
        if watch.first_read is None:
            raise StopRun(f"no tensor named {name!r} is used before the first backward()")
        numel = 1
        for d in reference.shape:
            numel *= d
        if numel > MAX_ELEMENTS:
            raise StopRun(f"{name} has {numel} elements; the check perturbs at most {MAX_ELEMENTS}")
        at, position = watch.first_read
        numeric = []
        for element in range(numel):
            plus, _ = _run(path, code, name, (at, position, element, eps))
            minus, _ = _run(path, code, name, (at, position, element, -eps))
            numeric.append((plus.value - minus.value) / (2 * eps))
        analytic = ([0.0] * numel if reference.grad is None
                    else [float(v) for v in reference.grad.reshape(-1).tolist()])
        abs_errors = [abs(a - n) for a, n in zip(analytic, numeric)]
        rel_errors = [e / max(abs(a), abs(n), 1e-12) for e, a, n in zip(abs_errors, analytic, numeric)]
        return {"tensor": name, "shape": reference.shape, "value": reference.value, "autograd": analytic,
                "numeric": numeric, "max_abs_error": max(abs_errors, default=0.0),
                "max_rel_error": max(rel_errors, default=0.0), "eps": eps}
    finally:
        torch.set_default_dtype(previous)
