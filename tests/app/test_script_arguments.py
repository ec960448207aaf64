"""Script arguments: ``graphview record train.py -- ARGS``, ``graphview train.py -- ARGS`` and the
Run options' Arguments field give an argparse script the sys.argv ``python train.py ARGS`` would."""

from __future__ import annotations

import subprocess
import sys

import pytest

from graphview.core.trace import read_trace
from tests.conftest import SAMPLES

pytestmark = pytest.mark.e2e

TRAIN = str(SAMPLES / "inprocess" / "train_args.py")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "graphview.app.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_record_passes_arguments_to_an_argparse_script_and_keeps_them_in_the_trace(tmp_path):
    trace = tmp_path / "run.gvtrace"
    done = _cli("record", TRAIN, "-o", trace, "--", "--epochs", "2", "--lr", "0.25")
    assert done.returncode == 0, done.stderr
    plain = subprocess.run([sys.executable, TRAIN, "--epochs", "2", "--lr", "0.25"], capture_output=True, text=True,
                           timeout=120, check=True)
    assert done.stdout == plain.stdout  # "training 2 epochs at lr 0.25", then the same two losses
    recorded = read_trace(trace)
    assert recorded.header["argv"] == [TRAIN, "--epochs", "2", "--lr", "0.25"]
    assert recorded.header["options"]["args"] == ["--epochs", "2", "--lr", "0.25"]
    assert recorded.events[0]["argv"] == [TRAIN, "--epochs", "2", "--lr", "0.25"]
    info = _cli("info", trace)
    assert "arguments:       --epochs 2 --lr 0.25" in info.stdout
    assert len([e for e in recorded.events if e["ev"] == "backward_start"]) == 2


def test_arguments_after_a_trace_are_refused_in_one_line(tmp_path):
    from graphview.capture.script import run_script
    from graphview.core.options import RunOptions
    from graphview.core.trace import make_header, write_trace

    trace = tmp_path / "run.gvtrace"  # as graphview record TRAIN -o TRACE -- --epochs 1 writes it
    options = RunOptions(args=["--epochs", "1"])
    events: list[dict] = []
    run_script(TRAIN, events.append, options)
    assert events[-1]["status"] == "ok"
    write_trace(trace, events, make_header(script=TRAIN, options=options.to_dict(), argv=[TRAIN, "--epochs", "1"]))
    done = _cli(trace, "--", "--epochs", "3")
    assert done.returncode == 2
    assert done.stderr.strip() == "graphview: arguments after -- go to a script: give a script (.py), not a trace"


def test_the_window_runs_a_script_with_arguments_shows_them_and_runs_again_with_new_ones(app):
    window = app.window
    assert app.open(TRAIN, ["--epochs", "2", "--lr", "0.5"])
    assert app.wait_idle(90)
    assert window.run.status == "ok" and window.run.start["argv"] == [TRAIN, "--epochs", "2", "--lr", "0.5"]
    window.set_cursor(len(window.run.events) - 1)  # a run opens at its start; the console shows output up to the cursor
    assert "training 2 epochs at lr 0.5" in window.console.toPlainText()
    assert len(window.run.backwards) == 2
    assert "args --epochs 2 --lr 0.5" in window.windowTitle()
    assert window.toggles.arguments.text() == "--epochs 2 --lr 0.5"

    window.toggles.arguments.setText("--epochs 3 --hidden 4 --lr '0.125'")
    window.toggles.run_button.click()
    assert app.wait_idle(90)
    assert window.run.start["argv"] == [TRAIN, "--epochs", "3", "--hidden", "4", "--lr", "0.125"]
    window.set_cursor(len(window.run.events) - 1)
    assert "training 3 epochs at lr 0.125" in window.console.toPlainText() and len(window.run.backwards) == 3

    runs_before = window.run
    window.toggles.arguments.setText("--name 'unclosed")
    window.toggles.run_button.click()
    assert window.toggles.arguments_error.isVisible()
    assert "No closing quotation" in window.toggles.arguments_error.text()
    assert window.run is runs_before and app.live is None  # nothing was started


def test_the_fidelity_check_runs_both_runs_with_the_arguments():
    done = _cli("check", "--fidelity", TRAIN, "--", "--epochs", "2", "--hidden", "5")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "identical to the plain run" in done.stdout
    assert "backward call 2 (backward, line" in done.stdout and "backward call 3" not in done.stdout
