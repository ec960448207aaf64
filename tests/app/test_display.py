"""The README's app command opens a real window on an X display (Xvfb, as on a fresh Debian server)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import model

pytestmark = pytest.mark.e2e

# Runs under xvfb-run: starts the app as the README does, waits for its top-level window to be
# mapped on the display with the script's name in its title (the title names the script once it
# is opened), reads the window's name and size from the X server, then ends the app.
PROBE = r"""
import json, os, shutil, subprocess, sys, time
app = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
script = os.path.basename(sys.argv[-1])
found, seen, started = None, [], time.monotonic()
while found is None and time.monotonic() - started < 60 and app.poll() is None:
    time.sleep(0.25)
    if shutil.which("xdotool"):
        ids = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "^graphview"],
                             capture_output=True, text=True).stdout.split()
    else:
        tree = subprocess.run(["xwininfo", "-root", "-tree"], capture_output=True, text=True).stdout
        ids = [line.split()[0] for line in tree.splitlines() if '"graphview' in line]
    for wid in ids:
        info = subprocess.run(["xwininfo", "-id", wid], capture_output=True, text=True).stdout
        fields = dict(line.strip().split(": ", 1) for line in info.splitlines() if ": " in line)
        name = info.split('"', 2)[1] if '"' in info else ""
        seen.append(name)
        if fields.get("Map State") == "IsViewable" and int(fields.get("Width", 0)) > 200 and script in name:
            found = {"name": name, "width": int(fields["Width"]), "height": int(fields["Height"]),
                     "seconds": round(time.monotonic() - started, 1)}
            break
alive = app.poll() is None
app.terminate()
try:
    app.wait(15)
    ended = True
except subprocess.TimeoutExpired:
    app.kill()
    ended = False
print(json.dumps({"window": found, "seen": sorted(set(seen)), "alive": alive, "ended": ended,
                  "output": app.stdout.read()[-2000:]}))
"""


def test_the_readme_app_command_opens_its_window_under_xvfb(tmp_path):
    if shutil.which("xvfb-run") is None:
        if os.geteuid() == 0:
            pytest.fail("xvfb-run is missing; ./setup.sh installs it (xvfb, xauth, xdotool) when run as root")
        pytest.skip("xvfb-run is not installed and installing it needs root (Debian: apt-get install xvfb xauth xdotool)")
    graphview = Path(sys.executable).parent / "graphview"  # .venv/bin/graphview, as the README says
    assert graphview.exists(), f"{graphview} is missing: ./setup.sh installs graphview into the environment"
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run(["xvfb-run", "-a", "--server-args=-screen 0 1366x768x24", sys.executable, "-c", PROBE,
                           str(graphview), model("mlp_optimizer")],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    window = result["window"]
    assert window is not None, (f"no graphview window naming the script appeared (windows seen: {result['seen']}); "
                                f"the app said: {result['output']}")
    assert window["name"].startswith("graphview") and "mlp_optimizer.py" in window["name"]
    assert window["width"] >= 640 and window["height"] >= 400
    assert result["alive"]  # it was still running when its window was seen
    assert result["ended"]  # and SIGTERM ended it


# Under X: the window maximized on a 1366x768 screen steps through the MLP sample with the
# Inspector in front, following the cursor; prints the most tables its page held at one step.
INSPECTOR_PROBE = r"""
import json, sys
from PySide6.QtWidgets import QApplication
app = QApplication([])
from graphview.capture.script import run_script
from graphview.core import timeline
from graphview.core.options import RunOptions
from graphview.core.run import Run
from graphview.qt.main_window import MainWindow
events = []
run_script(sys.argv[1], events.append, RunOptions(steps=1))
run = Run(events)
window = MainWindow(samples=[])
window.showMaximized()
window.begin_run(run.start["script"], RunOptions(), run)
window.inspector_dock.raise_()
app.processEvents()
tables, index = [], 0
while index < len(run.events) - 1:
    index = timeline.step_forward(run, index)
    window.set_cursor(index)
    tables.append(window.inspector.toHtml().count("<table"))
print(json.dumps({"steps": len(tables), "most": max(tables), "visible": window.inspector.isVisible()}))
"""


def test_the_inspector_holds_one_page_while_it_follows_the_cursor_under_x(tmp_path):
    """Maximized at 1366x768 under X, the dock's layout resized the Inspector while its page was
    being set (the page's scroll bar came), and the page was set again inside that: it held the
    node's table twice, at 12 of the MLP sample's 22 stops (one step; offscreen, the resize never comes)."""
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run is not installed (Debian: apt-get install xvfb xauth)")
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(["xvfb-run", "-a", "--server-args=-screen 0 1366x768x24", sys.executable, "-c",
                           INSPECTOR_PROBE, model("mlp_optimizer")],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["visible"] and result["steps"] > 15
    assert result["most"] == 1, result
