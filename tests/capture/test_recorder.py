"""The recorder installs on one ExitStack: whatever fails, nothing of graphview's stays in torch."""

from __future__ import annotations

import contextlib
import importlib

import pytest
import torch

import graphview.capture.recorder as recorder_module
from graphview.capture.recorder import Recorder


def torch_hook_state() -> tuple:
    """Everything the recorder installs into torch, as torch holds it now."""
    mm = torch.nn.modules.module
    opt = importlib.import_module("torch.optim.optimizer")
    return (
        torch.autograd._engine_run_backward, torch.autograd.graph._engine_run_backward, torch.compile,
        torch.optim.Optimizer.__dict__["zero_grad"], torch.nn.Module.__dict__["zero_grad"],
        torch.nn.Module.__dict__["train"], torch.autograd.Function.__dict__["apply"],
        len(mm._global_forward_pre_hooks), len(mm._global_forward_hooks),
        len(opt._global_optimizer_pre_hooks), len(opt._global_optimizer_post_hooks),
        torch._C._len_torch_function_stack(), torch._C._autograd._top_saved_tensors_default_hooks(True),
    )


class FailingStack(contextlib.ExitStack):
    """An ExitStack whose ``fail_at``-th install action raises before it happens."""

    fail_at = -1
    actions = 0

    def _count(self):
        FailingStack.actions += 1
        if FailingStack.actions == FailingStack.fail_at:
            raise RuntimeError("injected install failure")

    def enter_context(self, cm):
        self._count()
        return super().enter_context(cm)

    def callback(self, *args, **kwargs):
        self._count()
        return super().callback(*args, **kwargs)


def test_a_failure_at_any_install_step_leaves_torch_as_it_was(monkeypatch):
    before = torch_hook_state()
    monkeypatch.setattr(recorder_module, "ExitStack", FailingStack)
    FailingStack.fail_at, FailingStack.actions = -1, 0
    with Recorder(lambda e: None, __file__):
        assert torch_hook_state() != before
    steps = FailingStack.actions
    assert steps >= 10  # mode, saved hooks, engine (2), compile, apply, module and optimizer hooks, 3 patches
    assert torch_hook_state() == before
    for fail_at in range(1, steps + 1):
        FailingStack.fail_at, FailingStack.actions = fail_at, 0
        with pytest.raises(RuntimeError, match="injected"):
            with Recorder(lambda e: None, __file__):
                pass
        assert torch_hook_state() == before, f"left installed after a failure at install step {fail_at}"


def test_an_error_inside_the_recording_unwinds_everything():
    before = torch_hook_state()
    with pytest.raises(ZeroDivisionError):
        with Recorder(lambda e: None, __file__):
            (torch.ones(2, requires_grad=True) * 2).sum().backward()
            1 / 0
    assert torch_hook_state() == before


def test_recording_a_compiled_script_leaves_no_module_hooks_behind():
    torch.compile(lambda x: x + 1, backend="eager")  # compiled before: the recorder starts compile-safe

    before = torch_hook_state()
    for _ in range(3):
        with Recorder(lambda e: None, __file__):
            torch.nn.Linear(2, 2)(torch.ones(1, 2))
        assert torch_hook_state() == before


def test_an_optimizer_built_before_recording_leaves_the_recorder_unwrapped():
    """Building an optimizer imports Dynamo; only a torch.compile call makes the recorder compile-safe
    (its wrappers cost on every recorded call). In a fresh process: other tests compile."""
    import subprocess
    import sys

    code = (
        "import torch\n"
        "from graphview.capture.hooks import ops\n"
        "from graphview.capture.recorder import Recorder\n"
        "model = torch.nn.Linear(2, 2)\n"
        "torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "recorder = Recorder(lambda e: None, 'probe.py')\n"
        "with recorder:\n"
        "    unwrapped = ops._OpMode.__torch_function__ is ops._RECORDING_TORCH_FUNCTION\n"
        "    model(torch.ones(1, 2)).sum().backward()\n"
        "torch.compile(lambda x: x + 1, backend='eager')\n"
        "with Recorder(lambda e: None, 'probe.py'):\n"
        "    wrapped = ops._OpMode.__torch_function__ is not ops._RECORDING_TORCH_FUNCTION\n"
        "print(unwrapped, recorder._compile_safe_on, wrapped)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "False", "True"]


def test_the_recorder_keeps_nothing_per_step_across_a_long_run():
    """What the recorder remembers between steps is bounded by what the script still holds: each
    step's .grad tensors (zero_grad drops them), nodes and activations leave nothing behind in the
    recorder. It grew by one entry per parameter a step before (a .grad's weak reference, kept
    after the .grad died), so a long run grew without end."""
    import gc

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 8)
    recorder = Recorder(lambda event: None, __file__)

    def sizes() -> dict:
        gc.collect()
        return {name: len(value) for name, value in vars(recorder).items()
                if isinstance(value, (dict, list, set)) and name != "_pending_names"}

    with recorder:
        for step in range(30):
            optimizer.zero_grad()
            model(x).pow(2).sum().backward()
            optimizer.step()
            if step == 4:
                after_five = sizes()
        assert sizes() == after_five
        assert len(recorder._grad_of) <= len(list(model.parameters()))


_STEP_SCRIPT = (
    "import torch\n"
    "torch.manual_seed(0)\n"
    "w = torch.ones(2, requires_grad=True)\n"
    "sgd = torch.optim.SGD([w], lr=0.5)\n"
    "sgd.register_step_pre_hook(lambda opt, args, kwargs: print(float(w.detach().square().sum())))\n"
    "lbfgs = torch.optim.LBFGS([w], max_iter=1)\n"
    "def closure():\n"
    "    lbfgs.zero_grad()\n"
    "    loss = (w * 3).sum()\n"
    "    loss.backward()\n"
    "    return loss\n"
    "for _ in range(2):\n"
    "    (w * 2).sum().backward()\n"
    "    sgd.step()\n"
    "    sgd.zero_grad()\n"
    "    lbfgs.step(closure)\n"
)

_STEP_PROBE = """
import json, sys
import torch
from graphview.capture.hooks.ops import OpHooks
from graphview.capture.recorder import Recorder
from graphview.capture.script import run_script
from graphview.core.options import RunOptions
from graphview.core.run import Run

torch.manual_seed(0)
model = torch.nn.Linear(3, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
hooked = torch.optim.SGD.__dict__["step"]
in_step, reached = [False], []
original = OpHooks._on_torch_function

def noting(self, func, args, kwargs):
    if in_step[0] and "record_function" not in str(func):  # (torch's step-hook wrapper's profiler range)
        reached.append(str(func))
    return original(self, func, args, kwargs)

OpHooks._on_torch_function = noting
with Recorder(lambda e: None, "probe.py"):
    for _ in range(2):
        model(torch.ones(4, 3)).sum().backward()
        in_step[0] = True
        optimizer.step()
        optimizer.zero_grad()  # (recorded as one event, not its calls)
        in_step[0] = False
OpHooks._on_torch_function = original

events, kept = [], {}
run_script(sys.argv[1], events.append, RunOptions(), keep_globals=kept)
run = Run(events)
plain = {}
exec(compile(open(sys.argv[1]).read(), "plain.py", "exec"), plain)
print(json.dumps({"reached": len(reached), "restored": torch.optim.SGD.__dict__["step"] is hooked,
                  "ops": [op["op"] for _, op in run.ops], "backwards": len(run.backwards),
                  "w": run.value_at(run.tensor_by_name("w"))["values"], "plain_w": plain["w"].tolist()}))
"""


def test_torchs_own_optimizer_step_runs_without_the_recording_mode(write_script):
    """An SGD step's calls, and zero_grad's, are torch's own: they run without the recording
    mode, not through it to be skipped (in a fresh process: once anything is compiled, the
    recorder leaves torch's steps as they are, see test_a_compiled_optimizer_step_records_as_before).
    What the script does around and inside a step is recorded as before: its step pre-hook's ops,
    an LBFGS closure's forward and backward. The parameters are torch's, and every optimizer
    class's step is torch's own again afterwards."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _STEP_PROBE, write_script(_STEP_SCRIPT)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["reached"] == 0 and found["restored"]  # (before: 26 calls reached the recorder)
    assert found["ops"].count("square") == 2  # the step pre-hook's, each step
    assert found["ops"].count("mul") == 4  # (w * 2) and the closure's (w * 3), each step
    assert found["backwards"] == 4
    assert found["w"] == found["plain_w"]


def test_a_compiled_optimizer_step_records_as_before(write_script, record):
    """Under torch.compile torch's optimizer steps stay its own: Dynamo, tracing a compiled
    ``optimizer.step()``, traced the recorder's replacing of it and failed ("Guard failed on the
    same frame it was created"). The run records three steps, its parameters near the plain run's."""
    text = (
        "import torch\n"
        "torch.manual_seed(0)\n"
        "model = torch.nn.Linear(3, 2)\n"
        "optimizer = torch.optim.Adam(model.parameters(), lr=0.1)\n"
        "x = torch.randn(8, 3)\n"
        "@torch.compile(backend='eager')\n"
        "def opt_step():\n"
        "    optimizer.step()\n"
        "for _ in range(3):\n"
        "    optimizer.zero_grad()\n"
        "    model(x).pow(2).mean().backward()\n"
        "    opt_step()\n"
    )
    keep: dict = {}
    run = record(write_script(text), keep=keep)
    assert run.status == "ok", run.events[-1]
    # what graphview says of it is what holds: not a plain run's values to the last bit
    said = "".join(e["text"] for e in run.events if e["ev"] == "stderr")
    assert "a compiled optimizer step's can differ from a plain run's in the last bits" in said
    assert len(run.backwards) == 3 and len(run.optimizer_steps) == 3
    plain: dict = {}
    exec(compile(text, "plain_step.py", "exec"), plain)
    # (not bit-identical: recorded, the compiled step breaks at graphview's hooks, and its pieces
    # round differently, 3e-8 here, as before the steps were replaced)
    torch.testing.assert_close(keep["model"].weight, plain["model"].weight, rtol=1e-6, atol=1e-7)
    assert torch.optim.Adam.__dict__["step"].__wrapped__.__module__ == "torch.optim.adam"


def test_the_recorders_own_work_blocks_nest_and_share_threads():
    """The recorder's own-work block is one object entered again for each use: blocks nested in
    one thread, and blocks of two threads at once (the second waits for the lock), each run with
    torch function handling off and leave it as they found it, in each thread."""
    import threading
    import time

    recorder = Recorder(lambda event: None, __file__)
    seen, errors = [], []

    def work(rounds: int) -> None:
        try:
            for _ in range(rounds):
                with recorder.at_work():
                    outer = torch._C._is_torch_function_enabled()
                    time.sleep(0)  # (another thread may run here: it waits for the lock)
                    with recorder.at_work():
                        inner = torch._C._is_torch_function_enabled()
                        depth = recorder._suspend
                        time.sleep(0)
                    after_inner = torch._C._is_torch_function_enabled()
                seen.append((outer, inner, after_inner, depth, torch._C._is_torch_function_enabled(), recorder._suspend))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(200,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    work(200)
    for thread in threads:
        thread.join(30)
    assert not errors
    assert len(seen) == 600
    assert set(seen) == {(False, False, False, 2, True, 0)}
    with torch._C.DisableTorchFunction():  # a caller that turned it off finds it off again after
        with recorder.at_work():
            pass
        assert not torch._C._is_torch_function_enabled()
    assert torch._C._is_torch_function_enabled()
