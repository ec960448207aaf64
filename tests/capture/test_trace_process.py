"""``graphview.record()`` writes its trace in a process of its own: what a program that records
itself keeps when it is killed, when its disk is full, and on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from graphview.core.trace import read_trace

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="signals and resource limits of Linux")


def _run(tmp_path, body: str) -> tuple[subprocess.CompletedProcess, str]:
    target = str(tmp_path / "run.gvtrace")
    script = tmp_path / "program.py"
    script.write_text("import os, resource, signal, time, torch, graphview\n"
                      f"PATH = {target!r}\n" + body, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", _AS_A_SHELL_STARTS_IT, str(script)], capture_output=True, text=True,
                          timeout=180, start_new_session=True)  # (its Ctrl-C goes to its own process group only)
    return done, target


#: the program started with SIGINT at its default and not blocked, as a shell starts it: a process
#: inherits an ignored or blocked SIGINT across exec, and the test's own process may hold it so (the
#: whole suite, its files spread over workers: the Ctrl-C test's program then slept on and ended "ok")
_AS_A_SHELL_STARTS_IT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                         "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
                         "os.execv(sys.executable, [sys.executable, sys.argv[1]])")


def _read_when_written(path: str, backwards: int):
    """The trace at ``path`` once the writing process, which outlives a killed program by a
    moment, has written ``backwards`` backward calls into it."""
    deadline = time.monotonic() + 60
    while True:
        trace = read_trace(path) if os.path.exists(path) else None
        if trace is not None and sum(e["ev"] == "backward_end" for e in trace.events) >= backwards:
            return trace
        assert time.monotonic() < deadline, f"{path}: {trace and [e['ev'] for e in trace.events]}"
        time.sleep(0.1)


def test_a_program_killed_while_it_records_keeps_every_op_before_the_kill(tmp_path):
    done, target = _run(tmp_path, """
with graphview.record(PATH):
    x = torch.ones(3, requires_grad=True)
    for i in range(3):
        (x * (i + 2)).sum().backward()
    print("three backward calls", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert "Traceback" not in done.stderr, done.stderr  # (the writing process, left alone, says nothing)
    assert not os.path.exists(target)  # never renamed into place: a partial recording
    trace = _read_when_written(target + ".partial", 3)
    assert any("is a partial recording" in warning for warning in trace.warnings)
    assert "".join(e["text"] for e in trace.events if e["ev"] == "stdout") == "three backward calls\n"


def test_a_full_disk_stops_the_recording_not_the_program_and_says_why(tmp_path):
    done, target = _run(tmp_path, """
resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))  # what a full disk looks like to a writer
with graphview.record(PATH) as rec:
    x = torch.ones(64, requires_grad=True)
    for i in range(40):
        (x * i).sum().backward()
print("the program went on:", rec.write_error is not None)
""")
    assert done.returncode == 0, done.stderr
    assert "the program went on: True" in done.stdout
    assert "graphview: cannot write" in done.stderr and "File too large" in done.stderr
    assert not os.path.exists(target) and 0 < os.path.getsize(target + ".partial") <= 8192


def test_ctrl_c_ends_the_recording_and_its_trace_is_written_whole(tmp_path):
    done, target = _run(tmp_path, """
try:
    with graphview.record(PATH):
        x = torch.ones(3, requires_grad=True)
        (x * 2).sum().backward()
        os.killpg(os.getpgrp(), signal.SIGINT)  # the terminal's Ctrl-C: to every process of the group
        time.sleep(30)
except KeyboardInterrupt:
    print("interrupted")
""")
    assert done.returncode == 0 and "interrupted" in done.stdout, done.stderr
    trace = read_trace(target)
    assert trace.warnings == []
    assert sum(e["ev"] == "backward_end" for e in trace.events) == 1
    assert trace.events[-1]["ev"] == "run_end" and trace.events[-1]["status"] == "stopped"


def test_a_process_forked_inside_the_block_leaves_it_without_waiting_or_a_false_error(tmp_path):
    done, target = _run(tmp_path, """
import sys
with graphview.record(PATH) as rec:
    x = torch.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    child = os.fork()
    if child == 0:
        sys.exit(0)  # the child leaves the block too: the trace is the parent's
    os.waitpid(child, 0)
    (x * 3).sum().backward()
print("parent:", rec.write_error)
""")
    assert done.returncode == 0, done.stderr
    assert "parent: None" in done.stdout and "graphview:" not in done.stderr, done.stderr
    trace = read_trace(target)
    assert trace.warnings == [] and sum(e["ev"] == "backward_end" for e in trace.events) == 2


def test_a_program_that_closes_graphviews_pipe_keeps_its_own_files_and_is_told(tmp_path):
    done, target = _run(tmp_path, """
with graphview.record(PATH) as rec:
    x = torch.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    os.closerange(3, 1024)  # graphview's pipes among them
    log = open(PATH + ".log", "w")  # a file of the program's, on a number graphview's pipe had
    (x * 3).sum().backward()
log.write("still mine")
log.close()
print("write_error:", rec.write_error)
""")
    assert done.returncode == 0, done.stderr
    assert open(target + ".log").read() == "still mine"
    assert "write_error: the program closed the pipe to the process writing" in done.stdout
    trace = _read_when_written(target + ".partial", 1)
    assert any("is a partial recording" in warning for warning in trace.warnings)
