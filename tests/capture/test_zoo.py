"""The model zoo: every real architecture and autograd pattern recorded as torch runs it.

For each script in ``tests/zoo`` the reference run is an unrecorded run in a fresh process; the
recorded run happens here. Torch is the oracle throughout (see ``graphview.capture.fidelity``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from graphview.capture.fidelity import collect, compare, held_outside_the_walk, reference_in_fresh_process, run_once
from graphview.core.options import RunOptions

ZOO = Path(__file__).resolve().parent.parent / "zoo"
SCRIPTS = sorted(p.name for p in ZOO.glob("*.py"))

# more than one step where the steps differ: the unroll length changes, the penalty's graph is rebuilt
STEPS = {"lstm_unroll.py": 3, "gradient_penalty.py": 2}
# bytes torch holds for backward that no walk from a backward call's roots can see, counted by
# hand: one figure for every backward call of a step
HELD_OUTSIDE_THE_WALK = {
    # the teacher's graph stays alive in `kept`: its ReLU result (10 x 16 float32 = 640 B) and its
    # second Linear's weight.t() (16 x 4 float32 = 256 B); its input x is the student's too (counted)
    "distillation.py": [10 * 16 * 4 + 16 * 4 * 4],
    # the second call is checkpoint's own backward through the recomputed block, run inside the
    # outer backward; the outer graph still holds the first Linear's input x (16 x 8 float32)
    "checkpoint_reentrant.py": [0, 16 * 8 * 4],
}
# the recording runs torch.compile'd code op by op (and says so): the graph differs there, nothing else
COMPILED = {"compiled_model.py"}
# torch refuses what recording needs: the recorded run stops there and says so in one line
CANNOT_BE_RECORDED = {"torch_func_transforms.py": "torch.func transforms (grad, vjp, jacrev, hessian) refuse"}
FAILS_AS_IN_PLAIN_PYTHON = {"second_backward.py": "Trying to backward through the graph a second time"}


@pytest.mark.parametrize("script", SCRIPTS)
def test_zoo_model_is_recorded_as_torch_runs_it(script):
    path = str(ZOO / script)
    options = RunOptions(steps=STEPS.get(script, 1))
    process = reference_in_fresh_process(path, options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        recorded = run_once(path, options, record=True)
    reference = collect(process)

    problems = compare(reference, recorded)
    if script in CANNOT_BE_RECORDED:
        assert reference["status"] == "ok" and recorded["status"] == "error"
        error = next(e for e in recorded["events"] if e["ev"] == "error")
        assert error["limit"] and error["message"].startswith("graphview cannot record this")
        assert CANNOT_BE_RECORDED[script] in error["message"] and error["line"] == 18
        return
    if script in COMPILED:
        assert all("CompiledFunctionBackward" in p for p in problems), problems
        assert any("torch.compile'd code runs op by op" in e["text"] for e in recorded["events"] if e["ev"] == "stderr")
    else:
        assert problems == []
    # the recorder's own arithmetic (statistics of uninitialised memory) warns nobody
    assert [str(w.message) for w in caught if w.category is RuntimeWarning] == []
    if script in FAILS_AS_IN_PLAIN_PYTHON:
        assert FAILS_AS_IN_PLAIN_PYTHON[script] in recorded["error"][1]
    else:
        assert recorded["status"] == "ok", recorded["error"]
        assert len(recorded["results"]) == options.steps
    assert recorded["graphs"], "no backward call recorded"
    assert recorded["graphs"][0]["saved_bytes"] > 0
    extra = HELD_OUTSIDE_THE_WALK.get(script, [0] * (len(recorded["graphs"]) // options.steps)) * options.steps
    assert held_outside_the_walk(reference, recorded) == extra


def test_gradient_penalty_step_runs_the_returned_loss_backward():
    """autograd.grad inside step() is not the loss's backward: graphview still calls it, as
    ``loss = step(); loss.backward()`` would."""
    recorded = run_once(str(ZOO / "gradient_penalty.py"), RunOptions(steps=1), record=True)
    assert [g["api"] for g in recorded["graphs"]] == ["grad", "backward"]
    optimizer_steps = [e for e in recorded["events"] if e["ev"] == "optimizer_step"]
    assert len(optimizer_steps) == 1


@pytest.mark.parametrize("script,recomputed,forward", [
    # reentrant: the block's forward runs inside CheckpointFunction.apply, recorded as that one op
    ("checkpoint_reentrant.py", ["detach", "linear", "relu"], ["linear", "CheckpointFunction.apply", "linear"]),
    ("checkpoint_nonreentrant.py", ["linear"], ["linear", "linear", "linear"]),
])
def test_checkpoint_recompute_is_recorded_inside_backward_and_marked(script, recomputed, forward):
    """Both variants recompute in backward; the ops are recorded there, marked, in their own box.

    Non-reentrant checkpoint stops recomputing once it has every tensor backward needs (here the
    second Linear's input and weight: the ReLU after it is not run again)."""
    recorded = run_once(str(ZOO / script), RunOptions(), record=True)
    events = recorded["events"]
    start = next(i for i, e in enumerate(events) if e["ev"] == "backward_start")
    ops = [e for e in events if e["ev"] == "op" and e.get("recompute") is not None]
    assert [e["op"] for e in ops] == recomputed
    assert all(events.index(e) > start and e["recompute"] == 1 for e in ops)
    assert all(e["module"].startswith("checkpoint recompute") for e in ops)
    assert [e["op"] for e in events[:start] if e["ev"] == "op" and e["op"] in ("linear", "CheckpointFunction.apply")] \
        == forward
    # what the recompute saves for backward (the second Linear's input 16x32 and weight.t() 32x32, float32)
    saved = {e["bytes"] for e in events if e["ev"] == "saved" and e.get("recompute") == 1}
    assert {16 * 32 * 4, 32 * 32 * 4} <= saved
