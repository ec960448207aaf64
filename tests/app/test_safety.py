"""Safe to share, safe to write: a trace someone sends is only data, and graphview writes only the file
a user names (docs/safety.md). Most tests call the CLI's main in this process: every refusal here
comes before a runner would start."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from graphview.app.cli import main
from graphview.core.files import PARTIAL_SUFFIX, OutputError, open_partial, write_file
from graphview.core.trace import TraceError, TraceWriter, make_header, read_trace, write_trace
from tests.conftest import ROOT, lesson

#: a script that leaves a marker file beside itself when it runs: graphview must never run it here
MARKER_SCRIPT = "import pathlib\npathlib.Path(__file__).with_name('RAN').write_text('ran')\n"


def run_cli(capsys, *args) -> tuple[int, list[str]]:
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if line.strip()]


def refused(capsys, *args) -> str:
    """Run the CLI; it must refuse with exit 2 and exactly one line ``graphview: ...``; that line."""
    code, lines = run_cli(capsys, *args)
    assert code == 2, lines
    assert len(lines) == 1 and lines[0].startswith("graphview: "), lines
    return lines[0]


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """A small real trace (chain_rule, recorded in this process)."""
    from graphview.capture.script import run_script
    from graphview.core.options import RunOptions

    events: list[dict] = []
    run_script(lesson("chain_rule"), events.append, RunOptions())
    path = tmp_path_factory.mktemp("trace") / "run.gvtrace"
    write_trace(path, events, make_header(script=lesson("chain_rule"), options=RunOptions().to_dict()))
    return path


# ------------------------------------------------------------------ writes go only where they should
def test_a_link_planted_at_the_partial_name_is_never_followed(tmp_path, capsys, trace):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    out = tmp_path / "g.json"
    os.symlink(victim, str(out) + PARTIAL_SUFFIX)
    line = refused(capsys, "export", trace, "-o", out)
    assert f"{out}{PARTIAL_SUFFIX} is in the way (a symbolic link" in line
    record_out = tmp_path / "r.gvtrace"
    os.symlink(victim, str(record_out) + PARTIAL_SUFFIX)
    refused(capsys, "record", lesson("chain_rule"), "-o", record_out)
    with pytest.raises(OutputError):
        write_file(str(out), "x")
    with pytest.raises(TraceError):
        TraceWriter(record_out)
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not out.exists() and not record_out.exists()


def test_graphview_record_in_process_does_not_follow_a_planted_link(tmp_path, monkeypatch):
    import graphview

    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    os.symlink(victim, "run.gvtrace" + PARTIAL_SUFFIX)
    with pytest.raises(OSError, match="in the way"):
        with graphview.record("run.gvtrace"):
            pass
    assert victim.read_text(encoding="utf-8") == "precious"


def test_a_hard_link_at_the_partial_name_is_replaced_not_written_through(tmp_path, trace, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    out = tmp_path / "g.json"
    os.link(victim, str(out) + PARTIAL_SUFFIX)  # as a killed writer's partial file: no one holds it
    code, lines = run_cli(capsys, "export", trace, "-o", out)
    assert code == 0, lines
    assert victim.read_text(encoding="utf-8") == "precious"
    assert json.loads(out.read_text(encoding="utf-8"))["nodes"]


@pytest.mark.timeout(60)  # a FIFO opened for writing would wait for a reader for ever
def test_an_output_that_is_a_fifo_or_a_link_to_one_is_refused(tmp_path, capsys, trace):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    assert "it is a FIFO (named pipe), not a regular file" in refused(capsys, "export", trace, "-o", fifo)
    link = tmp_path / "null.gvtrace"
    os.symlink(fifo, link)
    assert "it is a symbolic link to a FIFO" in refused(capsys, "record", lesson("chain_rule"), "-o", link)
    assert os.path.islink(link) and not os.path.isfile(fifo)  # both still what they were


def test_an_output_that_is_a_dangling_link_is_refused(tmp_path, capsys, trace):
    target = tmp_path / "elsewhere" / "planted.json"
    target.parent.mkdir()
    link = tmp_path / "g.json"
    os.symlink(target, link)
    line = refused(capsys, "export", trace, "-o", link)
    assert "symbolic link" in line and "does not exist" in line
    trace_link = tmp_path / "r.gvtrace"
    os.symlink(target.with_suffix(".gvtrace"), trace_link)
    assert "does not exist" in refused(capsys, "record", lesson("chain_rule"), "-o", trace_link)
    assert not target.exists() and not target.with_suffix(".gvtrace").exists()
    assert os.path.islink(link) and os.path.islink(trace_link)


def test_an_output_that_is_the_input_is_refused(tmp_path, capsys, trace):
    script = tmp_path / "x.py"
    script.write_text("import torch\n", encoding="utf-8")
    line = refused(capsys, "record", script, "-o", script)
    assert "x.py" in line
    link = tmp_path / "x.gvtrace"
    os.symlink(script, link)  # the script under a trace's name
    assert "which graphview is reading" in refused(capsys, "record", script, "-o", link)
    assert script.read_text(encoding="utf-8") == "import torch\n"
    data = tmp_path / "trace.json"  # a trace with a data export's name: export onto itself
    data.write_bytes(trace.read_bytes())
    assert "which graphview is reading" in refused(capsys, "export", data, "-o", data)
    assert data.read_bytes() == trace.read_bytes()


def test_an_output_named_partial_is_refused_and_a_writer_in_progress_keeps_its_file(tmp_path, capsys, trace):
    out = tmp_path / "run.gvtrace"
    events = read_trace(trace).events
    writer = TraceWriter(out)  # a record of run.gvtrace in progress
    writer.write_all(events[:3])
    # a second record into the first one's partial file would be renamed away under it
    line = refused(capsys, "record", lesson("chain_rule"), "-o", str(out) + PARTIAL_SUFFIX)
    assert f"names ending in {PARTIAL_SUFFIX} are graphview's files being written" in line
    line = refused(capsys, "record", lesson("chain_rule"), "-o", out)
    assert line == f"graphview: cannot write {out}: another graphview process is writing it (into {out}{PARTIAL_SUFFIX})"
    writer.write_all(events[3:])
    writer.close()
    assert read_trace(out).events == events


def test_a_killed_writers_partial_file_is_replaced(tmp_path):
    out = tmp_path / "g.json"
    stale = open_partial(str(out))
    stale.write("half")
    stale.close()  # the lock goes with it, as when its process is killed
    write_file(str(out), "whole")
    assert out.read_text() == "whole" and not os.path.exists(str(out) + PARTIAL_SUFFIX)


def test_a_link_at_the_output_is_replaced_its_target_never_written(tmp_path, capsys, trace):
    victim = tmp_path / "victim.json"
    victim.write_text("precious", encoding="utf-8")
    link = tmp_path / "g.json"
    os.symlink(victim, link)
    code, lines = run_cli(capsys, "export", trace, "-o", link)
    assert code == 0, lines
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not os.path.islink(link) and json.loads(link.read_text(encoding="utf-8"))["nodes"]


def test_a_planted_link_is_refused_in_a_real_cli_process(tmp_path, trace):
    """One end to end: the installed entry point refuses with one line and exit 2."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    out = tmp_path / "run.gvtrace"
    os.symlink(victim, str(out) + PARTIAL_SUFFIX)
    done = subprocess.run([sys.executable, "-m", "graphview.app.cli", "record", lesson("chain_rule"), "-o", out],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"graphview: cannot write {out}: {out}{PARTIAL_SUFFIX} is in the way (a symbolic link, where graphview "
        "writes a new file first); remove it"]
    assert victim.read_text(encoding="utf-8") == "precious"


def test_the_window_writes_no_export_over_the_file_it_has_open(app, tmp_path, trace):
    opened = tmp_path / "run.json"  # a trace under a data export's name: read as a trace (not .py)
    opened.write_bytes(trace.read_bytes())
    assert app.open(str(opened)) and app.wait_idle(60)
    app.window.exports.data(str(opened))
    assert "which graphview is reading" in app.window.statusBar().message()
    assert opened.read_bytes() == trace.read_bytes()
    elsewhere = tmp_path / "graph.json"
    app.window.exports.data(str(elsewhere))
    assert "nodes" in json.loads(elsewhere.read_text(encoding="utf-8"))  # any other name is written


# ------------------------------------------------------------------ nothing runs that the user did not name
def test_check_measure_of_a_trace_runs_nothing_the_trace_names(tmp_path, capsys, trace):
    """The trace names a script (and its arguments) that would leave a marker: --measure refuses, saying to
    pass the script, and nothing runs. (The trace has checkpoint suggestions: measuring them re-ran the
    script it names.)"""
    from graphview.capture.script import run_script
    from graphview.core.options import RunOptions
    from tests.conftest import model

    evil = tmp_path / "zipfile.py"
    evil.write_text(MARKER_SCRIPT, encoding="utf-8")
    events: list[dict] = []
    run_script(model("transformer_block"), events.append, RunOptions())
    events[0] = dict(events[0], script=str(evil), argv=[str(evil), "-e", "figures.zip", "/elsewhere/"])
    sent = tmp_path / "sent.gvtrace"
    write_trace(sent, events, make_header(script=str(evil), options=RunOptions().to_dict(),
                                          argv=[str(evil), "-e", "figures.zip", "/elsewhere/"]))
    from graphview.core.run import Run
    from graphview.core.whatif import checkpoint_suggestions

    assert checkpoint_suggestions(Run(read_trace(sent).events))  # what --measure would re-record
    line = refused(capsys, "check", sent, "--measure")
    assert "pass the script itself" in line and "zipfile.py -e figures.zip /elsewhere/" in line
    assert not (tmp_path / "RAN").exists()
    # without --measure the trace is checked as data: still nothing runs
    code, _ = run_cli(capsys, "check", sent)
    assert code in (0, 1) and not (tmp_path / "RAN").exists()


def test_a_trace_names_control_characters_they_are_shown_escaped(tmp_path, capsys, trace):
    header = json.loads(trace.read_text(encoding="utf-8").splitlines()[0])
    header["script"] = "/tmp/x\x1b]0;owned\x07.py"
    sent = tmp_path / "sent.gvtrace"
    lines = trace.read_text(encoding="utf-8").splitlines()
    sent.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n", encoding="utf-8")
    line = refused(capsys, "check", sent, "--measure")
    assert "\x1b" not in line and "\x07" not in line and "\\x1b]0;owned\\x07" in line


@pytest.mark.parametrize("command", [["export", "{src}", "-o", "{out}"], ["check", "{src}"], ["diff", "{src}", "{src}"],
                                     ["info", "{src}"]])
def test_a_file_not_named_py_is_read_as_a_trace_never_run(tmp_path, capsys, command):
    """Python in a file named as no script (and not starting with a trace header): refused as no trace."""
    source = tmp_path / "notes.txt"
    source.write_text(MARKER_SCRIPT, encoding="utf-8")
    args = [a.format(src=source, out=tmp_path / "g.json") for a in command]
    line = refused(capsys, *args)
    assert "not a graphview trace" in line
    assert not (tmp_path / "RAN").exists() and not (tmp_path / "g.json").exists()


def test_commands_that_run_a_script_take_only_a_file_named_py(tmp_path, capsys, trace):
    source = tmp_path / "train"
    source.write_text(MARKER_SCRIPT, encoding="utf-8")
    for args in (["record", source, "-o", tmp_path / "t.gvtrace"], ["gradcheck", source, "--tensor", "x"],
                 ["check", trace, "--fidelity"]):
        line = refused(capsys, *args)
        assert ".py" in line, line
    assert not (tmp_path / "RAN").exists()


def test_the_notebook_display_imports_nothing_from_the_notebooks_folder(tmp_path, monkeypatch, trace):
    """``rec._repr_svg_()`` draws with the CLI in a process of its own, started in the notebook's folder:
    an argparse.py there (which the CLI imports first) must not run."""
    from graphview.capture.showing import export_svg

    (tmp_path / "argparse.py").write_text(MARKER_SCRIPT + "raise SystemExit('imported from the cwd')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", "")  # graphview is found from its own folder, not from the environment
    svg = export_svg(str(trace))
    assert svg.lstrip().startswith("<?xml") or "<svg" in svg
    assert not (tmp_path / "RAN").exists()


def test_the_app_starts_isolated_from_the_folder_it_is_started_in(tmp_path, monkeypatch):
    from graphview.core.isolated import graphview_command

    (tmp_path / "argparse.py").write_text(MARKER_SCRIPT)
    done = subprocess.run(graphview_command("graphview.app.cli", "--help"), cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, PYTHONPATH=""))
    assert done.returncode == 0 and "usage: graphview" in done.stdout, done.stderr
    assert not (tmp_path / "RAN").exists()


def test_a_trace_is_never_written_under_a_script_name(tmp_path, capsys):
    script = lesson("chain_rule")
    line = refused(capsys, "record", script, "-o", tmp_path / "other.py")
    assert "would be taken for a script" in line
    assert not (tmp_path / "other.py").exists()


@pytest.fixture
def device(tmp_path):
    """A character device to write to: a node of /dev/null's kind made here where this user may
    (root), else a link to /dev/null itself. Nothing is written through either when graphview refuses."""
    import stat

    node = tmp_path / "null.json"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        os.symlink(os.devnull, node)
    return node


def test_an_output_that_is_a_device_is_refused_and_stays_a_device(tmp_path, capsys, trace, device):
    """``-o /dev/null`` (as root) replaced the device with a regular file: every command that writes
    refuses a device, or a link to one, in one line."""
    import stat

    assert "device" in refused(capsys, "export", trace, "-o", device)
    trace_out = tmp_path / "null.gvtrace"
    os.symlink(os.devnull, trace_out)
    assert "a symbolic link to a device" in refused(capsys, "record", lesson("chain_rule"), "-o", trace_out)
    assert stat.S_ISCHR(os.stat(device).st_mode) and stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert os.path.islink(trace_out) and not os.path.exists(str(device) + PARTIAL_SUFFIX)


def test_the_windows_exports_go_only_where_they_should(app, tmp_path, trace, device):
    """File > Export and Save run as trace go through the same checks as the command line: a planted
    link at the partial name, a link to nothing, a FIFO, a device and a file another writer is writing
    are refused with a message, and nothing outside the named output changes."""
    assert app.open(str(trace)) and app.wait_idle(60)
    window = app.window
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    planted = tmp_path / "planted.json"
    os.symlink(victim, str(planted) + PARTIAL_SUFFIX)
    dangling = tmp_path / "dangling.json"
    os.symlink(tmp_path / "elsewhere" / "g.json", dangling)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    busy = tmp_path / "busy.gvtrace"
    writer = TraceWriter(busy)  # a recording in progress
    exports = [(window.export_data, planted, "in the way"), (window.export_image, planted.with_suffix(".svg"), None),
               (window.export_data, dangling, "does not exist"), (window.export_data, fifo, "FIFO"),
               (window.export_data, device, "device"), (window.export_chart_csv, device, "device"),
               (window.export_trace, busy, "another graphview process is writing it")]
    os.symlink(victim, str(planted.with_suffix(".svg")) + PARTIAL_SUFFIX)
    before = sorted(os.listdir(tmp_path))
    for export, path, words in exports:
        export(str(path))
        message = window.statusBar().message()
        assert message.startswith(f"cannot write {path}") and (words or "in the way") in message, message
    assert victim.read_text(encoding="utf-8") == "precious" and sorted(os.listdir(tmp_path)) == before
    assert not (tmp_path / "elsewhere").exists() and os.path.islink(dangling)
    writer.write_all(read_trace(trace).events)
    writer.close()  # the recording in progress ends whole, its own
    assert read_trace(busy).events == read_trace(trace).events
