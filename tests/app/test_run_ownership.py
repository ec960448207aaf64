"""A run owns every process it starts, including those that leave its session (a double fork
with ``setsid``, ``subprocess`` with ``start_new_session=True``): however the run ends, none of
them is left running."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from graphview.core.processes import descendants, kill_descendants
from graphview.core.trace import read_trace
from tests.app.test_faults import graphview_lines, start_cli, wait_for_line
from tests.conftest import ROOT

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a child subreaper is Linux's")]

# records one backward, then starts a `sleep 300` that leaves the run's session and whose parent
# is gone, and writes its pid to a file; then ends as told: "end", "raise", or "wait" (for a stop)
ESCAPES = """\
import os, subprocess, sys, time, torch
pidfile, how, then = sys.argv[1:4]
x = torch.ones(3, requires_grad=True)
(x * 2).sum().backward()
if how == "double-fork":
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(pidfile + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(pidfile + ".tmp", pidfile)
            os.execvp("sleep", ["sleep", "300"])
        os._exit(0)
    os.wait()
else:
    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    with open(pidfile + ".tmp", "w") as f:
        f.write(str(child.pid))
    os.rename(pidfile + ".tmp", pidfile)
while not os.path.exists(pidfile):
    time.sleep(0.01)
pid = int(open(pidfile).read())
while not open(f"/proc/{pid}/cmdline", "rb").read().startswith(b"sleep"):  # it has become the sleep
    time.sleep(0.01)
print("escaped", os.getsid(int(open(pidfile).read())) != os.getsid(0), flush=True)
if then == "raise":
    raise ValueError("boom")
if then == "wait":
    time.sleep(300)
"""

HOW = ["double-fork", "new-session"]


@pytest.fixture
def escapes(tmp_path):
    path = tmp_path / "escapes.py"
    path.write_text(ESCAPES, encoding="utf-8")
    return str(path)


def sleeper(pidfile) -> int:
    return int(open(pidfile).read())


def alive(pid: int) -> bool:
    """Whether ``pid`` is still our ``sleep 300`` (neither gone nor a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
    except OSError:
        return False
    return state != "Z" and cmdline == b"sleep\x00300\x00"


def gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture(autouse=True)
def no_sleeper_left(tmp_path):
    yield
    pidfile = tmp_path / "pid"
    if pidfile.exists() and alive(sleeper(pidfile)):  # a failed test leaves nothing behind either
        os.kill(sleeper(pidfile), signal.SIGKILL)


@pytest.mark.parametrize("how", HOW)
def test_timeout_ends_a_process_that_left_the_session(tmp_path, escapes, how):
    pidfile, target = tmp_path / "pid", tmp_path / "run.gvtrace"
    proc = start_cli("record", escapes, "-o", target, "--timeout", "5", "--", pidfile, how, "wait")
    wait_for_line(proc, "escaped True")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert gone(sleeper(pidfile), within=0.5), "the script's process outlived the run's time limit"
    assert read_trace(target).events[-1]["status"] == "timeout"


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("then, code, status", [("end", 0, "ok"), ("raise", 1, "error")])
def test_the_end_of_the_script_ends_its_processes(tmp_path, escapes, how, then, code, status):
    pidfile, target = tmp_path / "pid", tmp_path / "run.gvtrace"
    proc = start_cli("record", escapes, "-o", target, "--", pidfile, how, then)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "escaped True" in out
    assert gone(sleeper(pidfile), within=0.5), "the script's process outlived the run"
    assert read_trace(target).events[-1]["status"] == status


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_ctrl_c_or_a_killed_cli_ends_a_process_that_left_the_session(tmp_path, escapes, sig):
    pidfile, target = tmp_path / "pid", tmp_path / "run.gvtrace"
    proc = start_cli("record", escapes, "-o", target, "--", pidfile, "double-fork", "wait")
    wait_for_line(proc, "escaped True")
    proc.send_signal(sig)
    proc.wait(timeout=20)
    assert gone(sleeper(pidfile)), "the script's process outlived the CLI"
    if sig == signal.SIGINT:
        err = proc.stderr.read()
        assert proc.returncode == 130, err
        assert graphview_lines(err)[-1].startswith("graphview: interrupted (SIGINT)"), err


@pytest.mark.parametrize("how", HOW)
def test_the_apps_stop_ends_a_process_that_left_the_session(app, qtbot, tmp_path, escapes, how):
    pidfile = tmp_path / "pid"
    assert app.open(escapes, [str(pidfile), how, "wait"])
    qtbot.waitUntil(lambda: pidfile.exists() and alive(sleeper(pidfile)), timeout=60000)
    app.stop()
    qtbot.waitUntil(lambda: app.live is None or app.live.done.is_set(), timeout=20000)
    assert gone(sleeper(pidfile)), "the script's process outlived the app's Stop"
    assert app.wait_idle(30)  # the window is done with the run before the next test's window comes


def test_closing_the_window_ends_a_process_that_left_the_session(app, qtbot, tmp_path, escapes):
    pidfile = tmp_path / "pid"
    assert app.open(escapes, [str(pidfile), "double-fork", "wait"])
    qtbot.waitUntil(lambda: pidfile.exists() and alive(sleeper(pidfile)), timeout=60000)
    app.window.close()
    assert gone(sleeper(pidfile)), "the script's process outlived the window"


def test_kill_descendants_finds_processes_whose_parent_is_gone(tmp_path):
    """The walk itself: a subreaper's grandchild, orphaned, re-parents to it and is found and killed."""
    import subprocess

    code = ("import os, sys, time\n"
            "from graphview.core.processes import become_subreaper\n"
            "assert become_subreaper()\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        os.execvp('sleep', ['sleep', '300'])\n"
            "    os._exit(0)\n"
            "print('ready', flush=True)\n"
            "time.sleep(300)\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert holder.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 5
        while not [p for p, state in descendants(holder.pid).items() if state != "Z" and alive(p)]:
            assert time.monotonic() < deadline, "the orphan did not re-parent to the subreaper"
            time.sleep(0.02)
        orphan = next(p for p, state in descendants(holder.pid).items() if alive(p))
        assert kill_descendants(holder.pid) >= 1
        assert gone(orphan, within=1.0)
    finally:
        holder.kill()
        holder.wait()
