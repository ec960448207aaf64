"""graphview.record(): recording inside the user's own process, into the trace the CLI writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.optim.optimizer import _global_optimizer_post_hooks, _global_optimizer_pre_hooks

import graphview
from graphview.capture.fidelity import compare, recorded_graphs
from graphview.core.run import Run
from graphview.core.trace import read_trace
from tests.conftest import ROOT, SAMPLES

HARNESS = ROOT / "tests" / "capture" / "inprocess_harness.py"
TRAIN = SAMPLES / "inprocess" / "train_args.py"


def _loop(epochs: int, rec=None, pause_at=None):
    """A training loop of the user's own: the same seeds, recorded or not; returns losses and grads."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(9, 5), torch.randn(9, 2)
    losses = []
    for epoch in range(epochs):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        if rec is not None and epoch == pause_at:
            rec.pause()
        loss.backward()
        if rec is not None and epoch == pause_at:
            rec.resume()
        optimizer.step()
        losses.append(loss.detach().clone())
    return losses, [p.grad.clone() for p in model.parameters()], [p.detach().clone() for p in model.parameters()]


def _bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(a.view(torch.int32), b.view(torch.int32))


def _hooks_gone() -> bool:
    mm = torch.nn.modules.module
    return (not mm._global_forward_hooks and not mm._global_forward_pre_hooks
            and torch.autograd.graph._engine_run_backward.__module__ == "torch.autograd.graph"
            and not torch.overrides._get_current_function_mode_stack()
            and not _global_optimizer_post_hooks and not _global_optimizer_pre_hooks)


def test_start_step_records_only_those_steps_and_changes_nothing(tmp_path):
    plain = _loop(5)
    with graphview.record(tmp_path / "run.gvtrace", start_step=2, steps=2) as rec:
        recorded = _loop(5)
    for a, b in zip(sum(plain, []), sum(recorded, [])):
        assert _bits(a, b)
    assert _hooks_gone()
    trace = read_trace(rec.path)
    run = Run(trace.events)
    assert [s["step"] for s in run.steps] == [2, 3]
    assert len(run.backwards) == 2 and len(run.optimizer_steps) == 2
    assert run.status == "ok" and run.mode == "inprocess"
    assert trace.header["origin"] == "graphview.record()" and trace.events[-1]["message"] == "recorded steps 2 to 3"
    # the loss of step 2 as the trace has it is torch's loss of epoch 2, to the last bit
    mse = [ev for _, ev in run.ops if ev["op"] == "mse_loss"]
    first = run.tensors[mse[0]["outputs"][0][0]]
    assert first["values"] == [plain[0][1].item()]


_IN_PROCESS_STEP_PROBE = """
import sys
import torch
import graphview
from graphview.capture.hooks.ops import OpHooks
from graphview.core.run import Run
from graphview.core.trace import read_trace

torch.manual_seed(0)
model = torch.nn.Linear(5, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
hooked = torch.optim.SGD.__dict__["step"]  # (torch's own, wrapped for its step hooks)
in_step, reached = [False], []
optimizer.register_step_pre_hook(lambda *_: in_step.__setitem__(0, True))
optimizer.register_step_post_hook(lambda *_: in_step.__setitem__(0, False))
original = OpHooks._on_torch_function

def noting(self, func, args, kwargs):
    if in_step[0] and "record_function" not in str(func):  # (torch's step-hook wrapper's profiler range)
        reached.append(func)
    return original(self, func, args, kwargs)

OpHooks._on_torch_function = noting
with graphview.record(sys.argv[1], steps=3) as rec:
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.ones(4, 5)).sum().backward()
        optimizer.step()
print(len(reached), len(Run(read_trace(rec.path).events).optimizer_steps), torch.optim.SGD.__dict__["step"] is hooked)
"""


def test_torchs_own_optimizer_step_runs_without_the_recording_mode_in_process(tmp_path):
    """As in the runner (tests/capture/test_recorder.py): inside the block, no call of SGD's own
    step reaches the recorder; three steps are recorded; SGD's step is torch's own after the block
    (in a fresh process: once anything is compiled, the recorder leaves torch's steps as they are)."""
    done = subprocess.run([sys.executable, "-c", _IN_PROCESS_STEP_PROBE, str(tmp_path / "run.gvtrace")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-3:] == ["0", "3", "True"]  # (before: 39 calls reached the recorder)


def test_the_code_inside_is_recorded_with_its_lines_and_names(tmp_path):
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    with graphview.record(tmp_path / "one.gvtrace") as rec:
        y = (w * 2).sum()  # a line of this very file
        y.backward()
    run = Run(read_trace(rec.path).events)
    mul = next(ev for _, ev in run.ops if ev["op"] == "mul")
    assert mul["line"] == sys._getframe().f_lineno - 4
    assert run.start["script"] == __file__ and "y = (w * 2).sum()" in run.start["source"]
    assert run.tensor_name(mul["inputs"][0][0]) == "w"
    assert run.grads[mul["inputs"][0][0]][-1].value["values"] == [2.0, 2.0, 2.0]
    assert run.steps == [{"step": 1, "start": run.steps[0]["start"], "end": run.steps[0]["end"]}]


def test_pause_leaves_out_a_backward_and_still_sees_what_it_frees(tmp_path):
    plain = _loop(3)
    with graphview.record(tmp_path / "p.gvtrace") as rec:
        recorded = _loop(3, rec, pause_at=1)
    for a, b in zip(sum(plain, []), sum(recorded, [])):
        assert _bits(a, b)
    run = Run(read_trace(rec.path).events)
    kinds = [ev["ev"] for ev in run.events]
    assert kinds.count("paused") == 1 and kinds.count("resumed") == 1
    assert len(run.backwards) == 2  # epochs 1 and 3; the paused one is left out
    between = run.events[kinds.index("paused"):kinds.index("resumed")]
    assert {ev["ev"] for ev in between} <= {"paused", "name", "release", "node_dead", "tensor_dead"}  # names: flushed at pause
    assert any(ev["ev"] == "release" for ev in between)  # the unrecorded backward freed step 2's saved tensors


def test_rec_step_ends_steps_of_a_loop_without_an_optimizer(tmp_path):
    w = torch.ones(2, requires_grad=True)
    with graphview.record(tmp_path / "s.gvtrace", start_step=2, steps=1) as rec:
        for _ in range(3):
            (w * w).sum().backward()
            with torch.no_grad():
                w -= 0.1 * w.grad
            w.grad = None
            rec.step()
    run = Run(read_trace(rec.path).events)
    assert [s["step"] for s in run.steps] == [2]
    assert len(run.backwards) == 1
    assert w.tolist() == pytest.approx([0.8 ** 3] * 2)  # three updates w -= 0.1 * 2w, recorded or not


def test_an_exception_is_recorded_and_goes_on(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with graphview.record(tmp_path / "e.gvtrace") as rec:
            (torch.ones(1, requires_grad=True) * 3).sum()
            1 / 0
    run = Run(read_trace(rec.path).events)
    assert run.status == "error" and run.errors[-1][1]["type"] == "ZeroDivisionError"
    assert run.errors[-1][1]["line"] == sys._getframe().f_lineno - 3  # 1 / 0
    assert _hooks_gone()


def test_a_loop_shorter_than_start_step_records_nothing_and_says_so(tmp_path):
    with graphview.record(tmp_path / "late.gvtrace", start_step=9) as rec:
        _loop(2)
    run = Run(read_trace(rec.path).events)
    assert [ev["ev"] for ev in run.events] == ["run_start", "run_end"]
    assert run.end["message"] == "nothing recorded: the block ended in step 3, before start_step 9"
    assert _hooks_gone()


def test_bad_options_say_what_is_wrong(tmp_path):
    with pytest.raises(TypeError, match="unknown option.*retain_grpah"):
        graphview.record(tmp_path / "x.gvtrace", retain_grpah=True)
    with pytest.raises(ValueError, match="start_step"):
        graphview.record(tmp_path / "x.gvtrace", start_step=0)
    with pytest.raises(OSError, match="does not exist"):
        graphview.record(tmp_path / "no" / "x.gvtrace").__enter__()


def test_a_recording_inside_a_recording_adds_nothing(tmp_path, capsys):
    with graphview.record(tmp_path / "outer.gvtrace") as outer:
        with graphview.record(tmp_path / "inner.gvtrace") as inner:
            (torch.ones(2, requires_grad=True) * 2).sum().backward()
    assert inner.status == "outer" and not (tmp_path / "inner.gvtrace").exists()
    assert "being recorded already" in capsys.readouterr().err
    assert len(Run(read_trace(outer.path).events).backwards) == 1


def test_import_graphview_loads_neither_torch_nor_qt():
    code = "import sys, graphview; print(sorted(m for m in ('torch', 'PySide6') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stderr


@pytest.mark.e2e
def test_an_argparse_script_recording_itself_is_bit_identical_to_a_plain_run(tmp_path):
    """The fidelity check of the CLI, on graphview.record(): losses, parameters and grads bit for
    bit, and torch's graph at every backward call, against the same script run without it."""
    trace = tmp_path / "run.gvtrace"
    args = [str(TRAIN), "--epochs", "3", "--lr", "0.05", "--hidden", "6"]
    plain = subprocess.Popen([sys.executable, str(HARNESS), str(tmp_path / "plain.pt"), "--probe", "--", *args],
                             cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    done = subprocess.run([sys.executable, str(HARNESS), str(tmp_path / "rec.pt"), "--", *args, "--trace", str(trace)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert plain.wait(timeout=120) == 0, plain.stderr.read()
    reference = torch.load(tmp_path / "plain.pt", weights_only=False)
    recorded = torch.load(tmp_path / "rec.pt", weights_only=False)
    events = read_trace(trace).events
    recorded["graphs"] = recorded_graphs(Run(events))
    assert len(reference["results"]) == 3 and len(reference["graphs"]) == 3
    assert {"model.0.weight", "model.0.weight.grad", "model.2.bias.grad", "loss", "inputs"} <= set(reference["state"])
    assert compare(reference, recorded) == []
    start = events[0]
    assert start["argv"] == [str(TRAIN), "--epochs", "3", "--lr", "0.05", "--hidden", "6", "--trace", str(trace)]
    assert "epoch 3: loss" in "".join(ev["text"] for ev in events if ev["ev"] == "stdout")


def test_a_scripts_own_saved_tensor_hooks_count_when_entered_not_made(tmp_path):
    """A pair made before the recording (a notebook's earlier cell) and entered inside it is
    counted; one entered while the recording is paused writes nothing then."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    x = torch.randn(8, 16)
    hooks = torch.autograd.graph.save_on_cpu()
    with graphview.record(tmp_path / "h.gvtrace") as rec:
        with hooks:
            loss = model(x).pow(2).mean()
        loss.backward()
        rec.pause()
        with hooks:
            loss = model(x).pow(2).mean()
        loss.backward()
        rec.resume()
    # a second recording of the same model in this process (its AccumulateGrad nodes stamped by the
    # first one), without the pair: on the CPU, save_on_cpu keeps the very tensors autograd would
    with graphview.record(tmp_path / "plain.gvtrace") as plain:
        model(x).pow(2).mean().backward()
    events = read_trace(rec.path).events
    kinds = [ev["ev"] for ev in events]
    between = events[kinds.index("paused"):kinds.index("resumed")]
    assert not [ev for ev in between if ev["ev"] == "saved"]
    peak = Run(read_trace(plain.path).events).peak_saved_bytes()
    assert Run(events).peak_saved_bytes() == peak and peak["cpu"] > 0


_PROFILED = '''
import sys
import torch
import graphview

def train_step(model, optimizer, x):
    optimizer.zero_grad()
    loss = model(x).square().mean()
    loss.backward()
    optimizer.step()

torch.manual_seed(0)
model = torch.nn.Linear(4, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(5, 4)
with graphview.record(sys.argv[1], start_step=2, steps=2):
    for _ in range(4):
        train_step(model, optimizer, x)
'''


def test_cprofile_runs_alongside_and_its_results_stay_right(tmp_path):
    """Under ``python -m cProfile`` the recording still opens and closes its window at the
    optimizer's steps, and the profiler sees every call of the program (it was replaced by a
    profile function of graphview's: TypeError at the first optimizer.step())."""
    script = tmp_path / "train.py"
    script.write_text(_PROFILED)
    stats = tmp_path / "out.prof"
    trace = tmp_path / "run.gvtrace"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(stats), str(script), str(trace)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    run = Run(read_trace(trace).events)
    assert [s["step"] for s in run.steps] == [2, 3] and len(run.optimizer_steps) == 2 and run.status == "ok"
    import pstats

    calls = {func[2]: counts[1] for func, counts in pstats.Stats(str(stats)).stats.items()
             if func[0] == str(script)}
    assert calls["train_step"] == 4  # each call, the ones after the recording's window too


_SAMPLED = _PROFILED.replace("import torch\n", "import time\n\nimport torch\n").replace(
    "def train_step", """def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def train_step""").replace("        train_step(model, optimizer, x)\n", "        train_step(model, optimizer, x)\n        spin(0.2)\n")


def test_py_spy_samples_the_program_as_it_runs_while_it_records_itself(tmp_path):
    """py-spy sampling a script that records itself: the recording is whole, and every sample
    taken in the script's own loop is the script's stack as written (``<module>`` -> ``spin``),
    with nothing of graphview's between; about as many as the loop's 0.8 s at 200 Hz give."""
    spy = Path(sys.executable).with_name("py-spy")
    if not spy.exists():
        pytest.skip("py-spy is not installed (pip install -e '.[test]')")
    script = tmp_path / "train.py"
    script.write_text(_SAMPLED)
    samples, trace = tmp_path / "samples.txt", tmp_path / "run.gvtrace"
    done = subprocess.run([str(spy), "record", "--format", "raw", "--rate", "200", "-o", str(samples), "--",
                           sys.executable, str(script), str(trace)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    if done.returncode != 0 and "ermission" in done.stderr + done.stdout:
        pytest.skip(f"py-spy may not trace processes here: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stderr
    run = Run(read_trace(trace).events)
    assert [s["step"] for s in run.steps] == [2, 3] and len(run.optimizer_steps) == 2 and run.status == "ok"
    lines = _SAMPLED.splitlines()
    spin_call = next(i for i, line in enumerate(lines, 1) if line.strip() == "spin(0.2)")
    in_spin = {}
    for row in samples.read_text().splitlines():
        stack, _, count = row.rpartition(" ")
        frames = stack.split(";")
        if any(frame.startswith("spin (") for frame in frames):
            in_spin[tuple(frames)] = in_spin.get(tuple(frames), 0) + int(count)
    assert in_spin and all(frames[0] == f"<module> ({script.name}:{spin_call})" and len(frames) == 2
                           and frames[1].startswith(f"spin ({script.name}:") for frames in in_spin), in_spin
    assert sum(in_spin.values()) >= 0.25 * 0.8 * 200


#: what torch.profiler lists of graphview's own reads of values: what ``Tensor.numpy()`` and
#: ``tolist()`` call (detach, to, resolve_conj, resolve_neg), a detached view to read, and a view of
#: a sampled or transposed tensor's memory in order (graphview's summaries make no reshape or copy)
_GRAPHVIEWS_READS = frozenset({"aten::detach", "detach", "aten::to", "aten::resolve_conj", "aten::resolve_neg",
                               "aten::as_strided"})


def test_torch_profiler_runs_alongside_and_counts_what_it_counts_without_graphview(tmp_path):
    """Every op of the loop counts as often with graphview recording as without; what it adds is
    its reads of values, and nothing else."""
    from torch.profiler import ProfilerActivity, profile

    def counts(record: bool) -> dict:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            if record:
                with graphview.record(tmp_path / "run.gvtrace"):
                    _loop(2)
            else:
                _loop(2)
        return {e.key: e.count for e in prof.key_averages()}

    plain, recorded = counts(False), counts(True)
    assert plain["aten::addmm"] == 4 and plain["aten::mse_loss"] == 2
    assert {key: n for key, n in recorded.items() if key not in _GRAPHVIEWS_READS} == \
        {key: n for key, n in plain.items() if key not in _GRAPHVIEWS_READS}
    run = Run(read_trace(tmp_path / "run.gvtrace").events)
    assert len(run.optimizer_steps) == 2 and len(run.backwards) == 2


def test_the_window_keeps_the_collector_off_older_objects_and_gives_them_back(tmp_path):
    """NOTE [The collector during a recording] (capture/collector.py): the objects there when the
    window opens are frozen (Python's full collections do not scan torch's again and again) and given
    back at the program's own gc.collect(), which then frees a reference cycle made before the window
    as one made inside it, as without graphview; a program that froze objects itself keeps them frozen."""
    import gc
    import weakref

    # a program that froze nothing: what tests run before this one in this process froze (the app's
    # window, a big run's load) is given back first, or the window would leave it frozen, as it must
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    older = {"t": torch.randn(64, 64)}
    older["self"] = older  # a reference cycle made before the window
    older_tensor = weakref.ref(older["t"])
    frozen_inside, freed_inside = [], []
    with graphview.record(tmp_path / "run.gvtrace"):
        frozen_inside.append(gc.get_freeze_count())
        cycle = {"t": torch.randn(64, 64)}
        cycle["self"] = cycle
        tensor = weakref.ref(cycle["t"])
        del cycle, older
        gc.collect()  # the program's own: everything given back first, and collected
        freed_inside.append((tensor() is None, older_tensor() is None))
        frozen_inside.append(gc.get_freeze_count())
        _loop(2)
    assert frozen_inside[0] > 1000 and frozen_inside[1] == 0  # (torch's objects, this test's, pytest's)
    assert freed_inside == [(True, True)]
    assert gc.get_freeze_count() == 0 and gc.collect.__module__ == "gc"

    gc.freeze()  # the program's own
    try:
        own = gc.get_freeze_count()
        with graphview.record(tmp_path / "own.gvtrace"):
            _loop(1)
        assert gc.get_freeze_count() > own * 0.9  # (less those freed since: frozen, not given back)
    finally:
        gc.unfreeze()
