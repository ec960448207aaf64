"""Faults from outside: a full disk, signals to the CLI, a runner that will not stop, the
script's own child processes, two writers on one path, a killed app. Each test checks that what
was recorded before the fault can be read afterwards, and that no process of the run is left."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import time
import uuid

import pytest

from graphview.core.trace import read_trace
from tests.conftest import ROOT, lesson, model

pytestmark = pytest.mark.e2e

# a script that starts a child process, records one backward, ignores SIGTERM, says so and
# spins: the worst case for stopping it (the marker names its child so the test can find it)
STUBBORN = """\
import signal, subprocess, sys, torch
child = subprocess.Popen(["sleep", "{marker}"])
x = torch.ones(3, requires_grad=True)
(x * 2).sum().backward()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("recorded", flush=True)
while True:
    pass
"""


def stubborn_script(tmp_path) -> tuple[str, str]:
    marker = f"4242.{uuid.uuid4().int % 10**6:06d}"
    path = tmp_path / "stubborn.py"
    path.write_text(STUBBORN.format(marker=marker), encoding="utf-8")
    return str(path), marker


def processes_with(marker: str) -> list[int]:
    """Pids of live processes whose command line holds ``marker`` (zombies do not count)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(pid))
    return found


def gone(marker: str, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while processes_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def start_cli(*args, **kwargs) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "graphview.app.cli", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kwargs)


def wait_for_line(proc: subprocess.Popen, text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        if text in line:
            return
        assert time.monotonic() < deadline, f"no {text!r} from the script"
    raise AssertionError(f"the script ended without printing {text!r}: {proc.stderr.read()}")


def wait_for_child(proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(f"/proc/{proc.pid}/task/{proc.pid}/children") or not open(
            f"/proc/{proc.pid}/task/{proc.pid}/children").read().strip():
        assert time.monotonic() < deadline, "the CLI started no runner"
        time.sleep(0.02)


def graphview_lines(stderr: str) -> list[str]:
    assert "Traceback (most recent" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("graphview:")]


@pytest.fixture
def tiny_disk(tmp_path):
    """A folder on a 64 KiB tmpfs where this machine allows mounting one, else ``None`` (the tests
    then limit the file size the CLI may write, which fails its writes the same way)."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True).returncode == 0
    yield folder, mounted
    if mounted:
        subprocess.run(["umount", str(folder)], capture_output=True)


def full_disk_cli(tiny_disk, *args):
    """Run the CLI writing into the tiny disk, with about 8 KB of room left."""
    folder, mounted = tiny_disk
    if mounted:
        with open(folder / "filler", "wb") as f:
            with contextlib.suppress(OSError):
                f.write(b"x" * (56 * 1024))

        def limit():
            pass
    else:
        def limit():  # no tmpfs: every file this process writes is cut at 8 KB, with EFBIG
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
    proc = start_cli(*args, preexec_fn=limit)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, err


def test_full_disk_ends_record_with_exit_1_and_keeps_the_partial_recording(tiny_disk):
    folder, _ = tiny_disk
    target = folder / "run.gvtrace"
    # (a recording of more than the 8 KB left: records pack numpy_mlp_comparison's 99 events in 8,009 bytes)
    code, err = full_disk_cli(tiny_disk, "record", model("mlp_optimizer"), "-q", "-o", target)
    lines = graphview_lines(err)
    assert code == 1, err
    assert len(lines) == 1 and str(target) in lines[0] and "partial" in lines[0], err
    assert not target.exists()
    partial = read_trace(str(target) + ".partial")
    assert partial.events and partial.events[0]["ev"] == "run_start"
    assert any("partial" in w for w in partial.warnings)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    trace = tmp_path_factory.mktemp("recorded") / "run.gvtrace"
    assert subprocess.run([sys.executable, "-m", "graphview.app.cli", "record", lesson("numpy_mlp_comparison"), "-q",
                           "-o", trace], env=dict(os.environ, PYTHONPATH=str(ROOT))).returncode == 0
    return trace


@pytest.mark.parametrize("suffix", [".json", ".graphml", ".png", ".svg", ".pdf"])
def test_full_disk_export_writes_nothing_and_exits_1(tiny_disk, recorded, suffix):
    trace = recorded
    folder, _ = tiny_disk
    target = folder / f"graph{suffix}"
    code, err = full_disk_cli(tiny_disk, "export", trace, "-o", target, *(["--scale", "4"] if suffix == ".png" else []))
    assert code == 1, err
    lines = graphview_lines(err)
    assert len(lines) == 1 and str(target) in lines[0], err
    assert "error" not in err.replace(lines[0], "").lower(), err  # no stray libpng message
    assert sorted(p.name for p in folder.iterdir() if p.name != "filler") == []


@pytest.mark.parametrize("sig, when", [
    (signal.SIGTERM, "starting"), (signal.SIGINT, "starting"),
    (signal.SIGTERM, "running"), (signal.SIGINT, "running"), (signal.SIGKILL, "running"),
])
def test_a_signal_to_the_cli_ends_the_whole_run_and_keeps_the_trace(tmp_path, sig, when):
    script, marker = stubborn_script(tmp_path)
    target = tmp_path / "run.gvtrace"
    proc = start_cli("record", script, "-o", target)
    if when == "running":
        wait_for_line(proc, "recorded")
        time.sleep(1.5)  # the writer flushes at least once a second
    else:
        wait_for_child(proc)  # the runner is still importing torch
    proc.send_signal(sig)
    proc.wait(timeout=10)
    assert gone(marker), "a process of the run outlived the CLI"
    if sig == signal.SIGKILL:
        trace = read_trace(str(target) + ".partial")
        assert any(e["ev"] == "stdout" and "recorded" in e["text"] for e in trace.events)
        assert any("partial" in w for w in trace.warnings)
        return
    err = proc.stderr.read()
    assert proc.returncode == 128 + sig, err
    assert graphview_lines(err)[-1].startswith(f"graphview: interrupted ({signal.Signals(sig).name})"), err
    trace = read_trace(target)
    assert trace.warnings == [] and trace.events[-1]["ev"] == "run_end"
    assert trace.events[-1]["status"] == "stopped"
    if when == "running":
        assert sum(e["ev"] == "backward_end" for e in trace.events) == 1


def test_timeout_ends_a_runner_that_ignores_sigterm_and_the_scripts_children(tmp_path):
    script, marker = stubborn_script(tmp_path)
    target = tmp_path / "run.gvtrace"
    proc = start_cli("record", script, "-o", target, "--timeout", "8")  # room for a slow torch import
    wait_for_line(proc, "recorded")
    proc.wait(timeout=20)
    assert proc.returncode == 1
    assert gone(marker, within=0.5)
    trace = read_trace(target)
    assert trace.events[-1]["status"] == "timeout" and trace.warnings == []
    assert sum(e["ev"] == "backward_end" for e in trace.events) == 1


def test_stop_ends_the_scripts_children_too(tmp_path):
    from graphview.app.runner_client import RunnerProcess
    from graphview.core.options import RunOptions

    script, marker = stubborn_script(tmp_path)
    events: list[dict] = []
    seen = []

    def on_event(event):
        events.append(event)
        if event["ev"] == "stdout" and "recorded" in event["text"]:
            seen.append(True)
            runner.stop()

    runner = RunnerProcess(script, RunOptions(), on_event)
    end = runner.wait(timeout=60)
    assert seen and end["status"] == "stopped"
    assert gone(marker, within=0.5)


def test_two_writers_on_one_path(tmp_path, write_script):
    slow = write_script("import time, torch\nx = torch.ones(2, requires_grad=True)\n(x * 3).sum().backward()\n"
                        "print('first', flush=True)\ntime.sleep(2)\n")
    target = tmp_path / "run.gvtrace"
    first = start_cli("record", slow, "-o", target)
    wait_for_line(first, "first")
    second = start_cli("record", lesson("chain_rule"), "-o", target)
    _, err = second.communicate(timeout=60)
    assert second.returncode == 2
    assert graphview_lines(err) == [f"graphview: cannot write {target}: another graphview process is writing it "
                                    f"(into {target}.partial)"]
    _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    trace = read_trace(target)
    assert trace.warnings == [] and trace.events[-1]["status"] == "ok"
    assert not os.path.exists(f"{target}.partial")


def test_a_killed_app_leaves_no_process_of_its_run(tmp_path):
    script, marker = stubborn_script(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen")
    app = subprocess.Popen([sys.executable, "-m", "graphview.app.cli", script], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not processes_with(marker):
            assert time.monotonic() < deadline and app.poll() is None, "the app never ran the script"
            time.sleep(0.1)
        app.kill()
        app.wait(timeout=10)
        assert gone(marker), "the script's child outlived the killed app"
        assert gone(script), "the runner outlived the killed app"
    finally:
        if app.poll() is None:
            app.kill()


def test_closing_the_window_ends_the_run_and_the_scripts_children(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(tmp_path / "settings"))
    from graphview.app.gui import App

    app = App()
    qtbot.addWidget(app.window)
    app.window.show()
    script, marker = stubborn_script(tmp_path)
    try:
        assert app.open(script)
        qtbot.waitUntil(lambda: bool(processes_with(marker)), timeout=60000)
        qtbot.waitUntil(lambda: app.window.run is not None and bool(app.window.run.backwards), timeout=60000)
        app.window.close()
        assert gone(marker) and gone(script)
    finally:
        app.stop()
        app.timer.stop()


def test_a_forked_child_holding_the_event_pipe_does_not_hold_up_the_end(tmp_path):
    marker = f"4242.{uuid.uuid4().int % 10**6:06d}"
    script = tmp_path / "forks.py"
    script.write_text(f"import os, torch\nif os.fork() == 0:\n    os.execvp('sleep', ['sleep', '{marker}'])\n"
                      "x = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\nprint('parent done')\n")
    target = tmp_path / "run.gvtrace"
    proc = start_cli("record", script, "-o", target)
    _, err = proc.communicate(timeout=30)  # the child would sleep for over an hour
    assert proc.returncode == 0, err
    assert gone(marker, within=0.5)
    trace = read_trace(target)
    assert trace.warnings == [] and trace.events[-1]["status"] == "ok"


def test_a_second_ctrl_c_kills_at_once_and_the_trace_is_still_finished(tmp_path):
    script, marker = stubborn_script(tmp_path)
    target = tmp_path / "run.gvtrace"
    proc = start_cli("record", script, "-o", target)
    wait_for_line(proc, "recorded")
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=10)
    assert proc.returncode == 130 and gone(marker)
    trace = read_trace(target)
    assert trace.warnings == [] and trace.events[-1]["status"] == "stopped"
    assert trace.events[-1]["message"] == "killed: graphview received SIGINT"
    assert sum(e["ev"] == "backward_end" for e in trace.events) == 1
