"""The recorder's channel is checked: lines the script writes into it, a script that closes it,
and graphview's own records running out of memory at the script's memory limit."""

from __future__ import annotations

import json
import sys

import pytest

from graphview.core.trace import read_trace
from tests.app.test_faults import graphview_lines, start_cli

pytestmark = pytest.mark.e2e

# records one backward, writes into graphview's event channel (the descriptor graphview moved it to:
# the highest open one) its first argument as a line of text, or, with a second argument "batch",
# the object that the first one evaluates to framed as graphview's batches are (graphview/core/channel.py),
# then records a second backward
WRITES = """\
import os, pickle, struct, sys, torch
x = torch.ones(3, requires_grad=True)
(x * 2).sum().backward()
fd = max(int(n) for n in os.listdir("/proc/self/fd"))
if sys.argv[2:] == ["batch"]:
    data = pickle.dumps(eval(sys.argv[1]), 5)
    os.write(fd, b"GVB1" + struct.pack("<Q", len(data)) + data)
else:
    os.write(fd, sys.argv[1].encode() + b"\\n")
(x * 3).sum().backward()
print("second backward done")
"""


def record(tmp_path, text: str, *args: str, name: str = "script.py") -> tuple[int, str, str, str]:
    script, target = tmp_path / name, tmp_path / "run.gvtrace"
    script.write_text(text, encoding="utf-8")
    proc = start_cli("record", script, "-o", target, "--", *args)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err, str(target)


#: what a script writes into the channel: text, or (an expression, "batch") framed as a batch
FOREIGN = {
    "text": ("hello from the script",),
    "JSON": (json.dumps({"ev": "tensor", "tid": 999_999}),),
    "an empty line": ("",),
    "a batch that is no list": ("{'ev': 'tensor'}", "batch"),
    "nested past any event": ("[{'ev': 'node_dead', 'vid': __import__('functools').reduce(lambda a, _: [a], range(99), [])}]", "batch"),
    "a set": ("[{'ev': 'node_dead', 'vid': {1, 2}}]", "batch"),
    "a key that is no string": ("[{'ev': 'node_dead', 1: 2}]", "batch"),
    "a cycle": ("(lambda a: (a.append(a), [{'ev': 'node_dead', 'vid': a}])[1])([])", "batch"),
    "a function to call": ("[os.system]", "batch"),
    "a bad field": ("[{'ev': 'tensor', 'tid': 'x'}]", "batch"),
    "an unknown kind": ("[{'ev': 'hello'}]", "batch"),
    "an id no event introduced": ("[{'ev': 'tensor_dead', 'tid': 999_999}]", "batch"),
    "a second start": ("[{'ev': 'run_start', 'script': None, 'mode': 'plain', 'torch': None, 'python': None, "
                       "'devices': [], 'options': {}, 'notes': []}]", "batch"),
    "an early end": ("[{'ev': 'run_end', 'status': 'ok', 'exit_code': 0, 'message': ''}]", "batch"),
}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the script finds the channel in /proc")
@pytest.mark.parametrize("written", FOREIGN.values(), ids=FOREIGN.keys())
def test_what_the_script_writes_into_the_channel_ends_the_run_in_one_line(tmp_path, written):
    code, out, err, target = record(tmp_path, WRITES, *written)
    assert code == 1, err
    lines = graphview_lines(err)  # no traceback
    assert len(lines) == 1 and lines[0].startswith("graphview: the script wrote to graphview's event channel ("), err
    assert "\n" not in lines[0] and len(lines[0]) < 400
    assert "second backward done" not in out  # stopped there
    trace = read_trace(target)  # what was recorded before the line opens, whole
    assert trace.warnings == []
    assert sum(e["ev"] == "backward_end" for e in trace.events) == 1
    end = trace.events[-1]
    assert end["ev"] == "run_end" and end["status"] == "error"
    assert end["message"].startswith("the script wrote to graphview's event channel")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the script looks in /proc")
def test_the_channel_is_high_and_inherited_by_nothing(tmp_path):
    text = ("import os, subprocess, sys, torch\n"
            "argv = open('/proc/self/cmdline', 'rb').read().split(b'\\0')\n"
            "given = int(argv[argv.index(b'--events-fd') + 1])\n"
            "fds = sorted(int(n) for n in os.listdir('/proc/self/fd'))\n"
            "channel = fds[-1]\n"
            "print('given', given, 'open', given in fds, 'channel', channel, 'inheritable', os.get_inheritable(channel))\n"
            "child = subprocess.run([sys.executable, '-c', 'import os; print(max(map(int, os.listdir(\"/proc/self/fd\"))))'],"
            " close_fds=False, capture_output=True, text=True)\n"
            "print('child sees', child.stdout.strip())\n"
            "x = torch.ones(2, requires_grad=True)\n"
            "(x * 2).sum().backward()\n")
    code, out, err, target = record(tmp_path, text)
    assert code == 0, err
    words = out.split()
    given, channel, child_max = int(words[1]), int(words[5]), int(words[-1])
    assert words[3] == "False"  # the descriptor named on the runner's command line is closed
    assert channel >= 1000 and words[7] == "False"
    assert child_max < channel  # a program the script runs does not get it
    assert read_trace(target).events[-1]["status"] == "ok"


CLOSES_ALL = """\
import os, resource, torch
x = torch.ones(3, requires_grad=True)
(x * 2).sum().backward()
os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
(x * 3).sum().backward()
print("after the close")
"""

REPLACES = """\
import os, sys, torch
x = torch.ones(3, requires_grad=True)
(x * 2).sum().backward()
channel = max(int(n) for n in os.listdir("/proc/self/fd"))
mine = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
os.dup2(mine, channel)  # the script's own file where the channel was
(x * 3).sum().backward()
print("after the replacement")
"""


@pytest.mark.parametrize("text", [CLOSES_ALL, REPLACES], ids=["closes every descriptor", "puts a file in its place"])
def test_a_script_that_closes_the_channel_is_told_so_not_a_crash(tmp_path, text):
    own = tmp_path / "own.txt"
    code, out, err, target = record(tmp_path, text, str(own))
    assert code == 1, err
    lines = graphview_lines(err)
    assert len(lines) == 1 and lines[0].startswith("graphview: the script closed graphview's event channel"), err
    assert "crash" not in err
    trace = read_trace(target)
    assert trace.warnings == [] and sum(e["ev"] == "backward_end" for e in trace.events) == 1
    assert trace.events[-1]["status"] == "error"
    assert not own.exists() or own.read_bytes() == b""  # graphview wrote nothing into the script's file


def test_closing_the_usual_range_leaves_the_channel_alone(tmp_path):
    import resource

    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] <= 1040:
        pytest.skip("the descriptor limit leaves no room above 1023")
    code, out, err, target = record(tmp_path, CLOSES_ALL.replace("resource.getrlimit(resource.RLIMIT_NOFILE)[0]", "1024"))
    assert code == 0, err
    assert "after the close" in out
    trace = read_trace(target)
    assert sum(e["ev"] == "backward_end" for e in trace.events) == 2 and trace.events[-1]["status"] == "ok"


# the script names a submodule with a 24 MiB string (its own, made before the limit), then limits its
# address space to what it uses and a little more: writing the module's name into graphview's records
# of its first call needs memory that is not there. (The module is not called before the limit: the
# memory graphview took to write its name then would stay in the heap, counted in ``used``, and
# the call at the limit could reuse it.)
AT_ITS_LIMIT = """\
import os, resource, torch
linear = torch.nn.Linear(2, 2)
x = torch.ones(1, 2)
linear(x)
model = torch.nn.Sequential()
model.add_module("m" * (24 << 20), linear)
used = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
resource.setrlimit(resource.RLIMIT_AS, (used + (4 << 20), resource.RLIM_INFINITY))
y = model(x)
print("not reached")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_graphview_out_of_memory_at_the_scripts_limit_is_the_limit_not_the_scripts_line(tmp_path):
    code, out, err, target = record(tmp_path, AT_ITS_LIMIT)
    assert code == 1, err
    lines = graphview_lines(err)
    assert len(lines) == 1, err
    assert lines[0].startswith("graphview: the script's memory limit (RLIMIT_AS "), err
    assert "reached at line 9" in lines[0] and "raised" not in lines[0]
    trace = read_trace(target)
    error = next(e for e in trace.events if e["ev"] == "error")
    assert error["type"] == "MemoryError" and error["limit"] and error["line"] == 9
    assert trace.events[-1]["status"] == "error"


def test_the_scripts_own_memory_error_is_still_the_scripts(tmp_path):
    code, out, err, target = record(tmp_path, "import torch\nx = torch.ones(2)\nraise MemoryError('mine')\n")
    assert code == 1, err
    assert graphview_lines(err)[-1].startswith("graphview: the script raised MemoryError at line 3: mine"), err


def test_the_app_checks_the_channel_too(app, qtbot, tmp_path):
    script = tmp_path / "writes.py"
    script.write_text(WRITES, encoding="utf-8")
    assert app.open(str(script), ["not an event"])
    assert app.wait_idle(90)
    run = app.window.run
    assert run.status == "error"
    assert run.end["message"].startswith("the script wrote to graphview's event channel")
    assert len(run.backwards) == 1
