"""The script runs as ``python script.py`` runs it: same sys.path, argv, __file__ and cwd,
nothing imported from where graphview was started, BOM and CRLF accepted, and the ways a
script can leave (input() without stdin, os._exit, native output at the end) told plainly."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from graphview.core.options import RunOptions
from graphview.core.trace import read_trace
from tests.conftest import ROOT

pytestmark = pytest.mark.e2e

ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "graphview.app.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=120, env=ENV, cwd=cwd)


def stdout_of(trace_path) -> str:
    return "".join(e["text"] for e in read_trace(trace_path).events if e["ev"] == "stdout")


def test_the_script_sees_what_python_gives_it_and_nothing_from_the_cwd(tmp_path):
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    # a module in the folder graphview is started from, shadowing one graphview itself imports
    (work / "json.py").write_text("open('PWNED', 'w').write('imported from the cwd')\n")
    (work / "sub" / "s.py").write_text(
        "import json, os, sys\n"
        "print(json.dumps({'path': sys.path, 'argv': sys.argv, 'file': __file__, 'cwd': os.getcwd()}))\n")
    plain = subprocess.run([sys.executable, "sub/s.py", "--lr", "0.1"], capture_output=True, text=True,
                           env=ENV, cwd=work, check=True)
    # started as a user starts it (``python -m`` would import the cwd's json.py into the CLI itself)
    entry = os.path.join(os.path.dirname(sys.executable), "graphview")
    result = subprocess.run([entry, "record", "sub/s.py", "-q", "-o", tmp_path / "t.gvtrace", "--", "--lr", "0.1"],
                            capture_output=True, text=True, timeout=120, env=ENV, cwd=work)
    assert result.returncode == 0, result.stderr
    assert json.loads(stdout_of(tmp_path / "t.gvtrace")) == json.loads(plain.stdout)
    assert not (work / "PWNED").exists()


def test_a_script_with_a_byte_order_mark_and_windows_line_ends_runs(tmp_path):
    script = tmp_path / "bom.py"
    script.write_bytes(b"\xef\xbb\xbfimport torch\r\nx = torch.ones(2, requires_grad=True)\r\n"
                       b"(x * 3).sum().backward()\r\nprint(x.grad)\r\n")
    result = cli("record", script, "-o", tmp_path / "t.gvtrace")
    assert result.returncode == 0, result.stderr
    assert "tensor([3., 3.])" in result.stdout
    start = read_trace(tmp_path / "t.gvtrace").events[0]
    assert start["source"].startswith("import torch\n") and "\r" not in start["source"]


def test_input_says_that_scripts_get_no_standard_input(tmp_path):
    script = tmp_path / "ask.py"
    script.write_text("name = input('name? ')\n")
    result = cli("record", script, "-o", tmp_path / "t.gvtrace")
    assert result.returncode == 1
    assert "EOFError at line 1" in result.stderr and "without standard input" in result.stderr


def test_os_exit_is_reported_at_its_own_line(tmp_path):
    script = tmp_path / "leave.py"
    script.write_text("import os, torch\nx = torch.ones(2, requires_grad=True) * 2\nos._exit(7)\n")
    result = cli("record", script, "-o", tmp_path / "t.gvtrace")
    assert result.returncode == 1
    end = read_trace(tmp_path / "t.gvtrace").events[-1]
    assert (end["status"], end["exit_code"]) == ("exit", 7)
    assert end["message"] == "the script called os._exit(7) at line 3"


def test_native_output_comes_before_the_end_and_capped_output_is_noted(tmp_path):
    script = tmp_path / "native.py"
    script.write_text("import ctypes, os\nprint('x' * 1_100_000)\nos.write(1, b'raw, no newline')\n"
                      "ctypes.CDLL(None).printf(b'from C, buffered')\n")
    result = cli("record", script, "-o", tmp_path / "t.gvtrace")
    assert result.returncode == 0, result.stderr
    assert "the script wrote 51425 more characters to stdout than graphview keeps" in result.stderr
    trace = read_trace(tmp_path / "t.gvtrace")
    assert trace.warnings == []
    native = "".join(e["text"] for e in trace.events if e.get("native"))
    assert "raw, no newline" in native and "from C, buffered" in native
    assert trace.events[-1]["ev"] == "run_end"
    info = cli("info", tmp_path / "t.gvtrace")
    assert info.returncode == 0 and "warning" not in info.stderr


def test_the_window_names_an_exit_code_and_forgets_an_old_failure(window, record, write_script):
    failed = record(write_script("import sys, torch\nx = torch.ones(1)\nsys.exit(3)\n"))
    window.begin_run(None, RunOptions(), failed)
    message = window.statusBar().message()
    assert message.startswith("the script exited with code 3"), message
    ok = record(write_script("import torch\nx = torch.ones(1, requires_grad=True)\n(x * 2).sum().backward()\n"))
    window.begin_run(None, RunOptions(), ok)
    assert "exited" not in window.statusBar().message()


def test_a_step_scripts_setup_is_kept_out_of_the_collectors_scans_from_its_first_step(tmp_path):
    """The runner freezes what the script's top level made (a model, the libraries it imported) once,
    before the first step (NOTE [The collector during a recording] in graphview/capture/collector.py):
    Python's own full collections do not scan it again and again. The script's own gc.collect() gives
    it back first and collects as without graphview: a setup object in a reference cycle that a step
    drops is freed, and so is a cycle the step made."""
    script = tmp_path / "steps.py"
    script.write_text(
        "import gc, weakref\n"
        "import torch\n"
        "class Holder:\n"
        "    def __init__(self):\n"
        "        self.layer, self.me = torch.nn.Linear(3, 3), self  # a reference cycle\n"
        "setup = [Holder()]  # made by the top level\n"
        "w = torch.ones(3, requires_grad=True)\n"
        "def tracked(obj):\n"
        "    return any(o is obj for o in gc.get_objects())\n"
        "def step():\n"
        "    scanned = tracked(setup)\n"
        "    old = weakref.ref(setup.pop()) if setup else None\n"
        "    cycle = [torch.zeros(2)]\n"
        "    cycle.append(cycle)\n"
        "    made = weakref.ref(cycle[0])\n"
        "    del cycle\n"
        "    gc.collect()\n"
        "    print('setup scanned:', scanned, '| setup cycle freed:', old is None or old() is None,\n"
        "          '| step cycle freed:', made() is None)\n"
        "    return (w * 2).sum()\n")
    result = cli("record", script, "-o", tmp_path / "t.gvtrace", "--steps", "2")
    assert result.returncode == 0, result.stderr
    assert stdout_of(tmp_path / "t.gvtrace").splitlines() == [
        "setup scanned: False | setup cycle freed: True | step cycle freed: True",  # frozen until its gc.collect()
        "setup scanned: True | setup cycle freed: True | step cycle freed: True"]  # given back by it
