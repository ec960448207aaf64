"""A real torchrun job of two CPU processes (gloo) recording itself: one trace per rank."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest
import torch

from graphview.capture.fidelity import compare, recorded_graphs
from graphview.core.diagnostics import diagnose
from graphview.core.run import Run
from graphview.core.trace import read_trace
from tests.conftest import ROOT, SAMPLES

pytestmark = pytest.mark.e2e

DDP = SAMPLES / "inprocess" / "ddp_unused.py"
HARNESS = ROOT / "tests" / "capture" / "inprocess_harness.py"
TORCHRUN = os.path.join(os.path.dirname(sys.executable), "torchrun")


def _torchrun(folder, out: str, *script_args: str) -> None:
    command = [TORCHRUN if os.path.exists(TORCHRUN) else shutil.which("torchrun"), "--standalone",
               "--nproc-per-node", "2", str(HARNESS), str(folder / out), *(["--probe"] if out == "plain" else []),
               "--", str(DDP), *script_args]
    job = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, OMP_NUM_THREADS="1"), start_new_session=True)
    try:
        stdout, stderr = job.communicate(timeout=120)
    finally:
        if job.poll() is None:  # a stuck job: none of its processes outlives the test
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    assert job.returncode == 0, stdout[-3000:] + stderr[-3000:]


def test_two_ranks_write_a_trace_each_true_to_a_plain_job_and_name_the_unused_module(tmp_path):
    _torchrun(tmp_path, "rec", "--trace", "run.gvtrace")
    assert sorted(p.name for p in tmp_path.glob("*.gvtrace")) == ["run.rank0.gvtrace", "run.rank1.gvtrace"]
    _torchrun(tmp_path, "plain")
    for rank in (0, 1):
        trace = read_trace(tmp_path / f"run.rank{rank}.gvtrace")
        assert trace.header["rank"] == rank and trace.header["world_size"] == 2
        run = Run(trace.events)
        assert run.start["rank"] == rank and run.status == "ok" and len(run.backwards) == 2
        reference = torch.load(tmp_path / f"plain.rank{rank}", weights_only=False)
        recorded = torch.load(tmp_path / f"rec.rank{rank}", weights_only=False)
        recorded["graphs"] = recorded_graphs(run)
        assert len(reference["results"]) == 2 and "model.module.head.weight.grad" in reference["state"]
        assert compare(reference, recorded) == []  # losses, parameters, grads (averaged by DDP), graphs
        findings = [f for f in diagnose(run) if f.code == "ddp-unused-parameter"]
        if rank == 0:
            assert findings == []  # rank 0 takes the aux branch
        else:
            backward_line = next(i for i, text in enumerate(DDP.read_text().splitlines(), 1) if "loss.backward()" in text)
            assert [(f.title, f.line) for f in findings] == [("module.aux gets no gradient on rank 1", backward_line)]
            assert "module.aux.weight, module.aux.bias" in findings[0].explanation

    info = subprocess.run([sys.executable, "-m", "graphview.app.cli", "info", str(tmp_path / "run.rank1.gvtrace")],
                          capture_output=True, text=True, timeout=60)
    assert info.returncode == 0 and "process:         rank 1 of 2" in info.stdout
    check = subprocess.run([sys.executable, "-m", "graphview.app.cli", "check", str(tmp_path / "run.rank1.gvtrace")],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 1 and "ddp_unused.py:" in check.stdout and "[ddp-unused-parameter]" in check.stdout
