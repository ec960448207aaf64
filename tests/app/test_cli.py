"""The command line, end to end: real runner processes, real trace files, bad input. A command that
runs no script (``info``, ``check`` or ``export`` of a trace, a refusal of bad input) is run by the
CLI's ``main`` in this process where nothing outside Python's own output is asserted (no process of
its own to start: under a second each); the others run ``python -m graphview.app.cli``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from graphview.core.run import Run
from graphview.core.trace import read_trace
from tests.conftest import ROOT, lesson, model

pytestmark = pytest.mark.e2e


def graphview(*args, timeout=120, unset=()):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for name in unset:
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "graphview.app.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def graphview_here(capsys, *args):
    """``graphview ARGS`` by the CLI's ``main`` in this process: its exit status and what it wrote
    (an exception escaping it fails the test, as a traceback would)."""
    from graphview.app import cli

    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as exc:  # argparse's refusals and --help
        code = exc.code
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, captured.out, captured.err)


def assert_one_line_reason(result):
    # the script's own traceback may be shown; graphview's never
    assert "graphview/" not in result.stderr and "Traceback (most recent" not in result.stderr, result.stderr
    lines = [l for l in result.stderr.splitlines() if l.startswith("graphview:")]
    assert lines, result.stderr


def test_record_info_export_round_trip(tmp_path):
    trace = tmp_path / "run.gvtrace"
    result = graphview("record", lesson("prediction"), "-o", trace)
    assert result.returncode == 0, result.stderr
    assert "tensor(-18.)" in result.stdout  # the script's own output is echoed
    info = json.loads(graphview("info", trace, "--json").stdout)
    assert info["status"] == "ok" and info["backward_calls"] == 1 and info["errors"] == []
    assert info["nodes"] == 6  # Mul, Add, Sub, Pow + two AccumulateGrad
    assert result.stderr.splitlines()[-1] == (f"graphview: wrote {trace}: {info['events']} events, {info['ops']} ops, "
                                              "6 autograd nodes, 1 backward call")
    text = graphview("info", trace).stdout
    assert "grad w: -18" in text and "grad b: -6" in text
    graph = tmp_path / "g.json"
    assert graphview("export", trace, "-o", graph).returncode == 0
    data = json.loads(graph.read_text())
    w = next(n for n in data["nodes"] if n.get("name") == "w")
    assert w["grad"]["values"] == [-18.0]


def test_export_straight_from_a_script_with_options(tmp_path):
    out = tmp_path / "g.dot"
    result = graphview("export", model("mlp_optimizer"), "-o", out, "--steps", "2", "--retain-graph")
    assert result.returncode == 0, result.stderr
    assert out.read_text().startswith("digraph")


def exported_caption(path) -> str:
    import pypdf

    return " ".join(pypdf.PdfReader(str(path)).pages[0].extract_text().split())


def test_export_of_a_step_script_shows_the_run_the_app_runs(app, tmp_path):
    """The app ran the transformer sample for three steps ("/ 1491" in its window) and ``graphview
    export`` for one (its PDF said "event 229 of 511"). The export records the run the app records,
    and its caption says which moment of it, and which step of how many, it shows."""
    from graphview.core import timeline

    assert app.open(model("mlp_optimizer"))
    assert app.wait_idle(90)
    watched = app.window.run
    assert watched.status == "ok" and [s["step"] for s in watched.steps] == [1, 2, 3]
    out = tmp_path / "mlp.pdf"
    result = graphview("export", model("mlp_optimizer"), "-o", out)
    assert result.returncode == 0, result.stderr
    at = timeline.overview(watched)  # the last step's backward, its graph complete
    assert watched.steps[-1]["start"] < at < watched.steps[-1]["end"]
    assert f"mlp_optimizer.py · step 3 of 3 · event {at} of {len(watched.events) - 1}: " in exported_caption(out)


def test_record_and_diff_run_a_step_script_for_the_steps_the_app_runs(mlp_recording):
    """The app, export and check run a step script 3 times; record and diff ran it once: a trace
    recorded of the run one watched held a third of it, and ``diff SCRIPT --step-a 1 --step-b 3``
    was refused ("the run has no step 3 (it has 1)"). Every command now runs the app's steps."""
    from graphview.app.cli import build_parser
    from graphview.core.options import APP_STEPS

    script = model("mlp_optimizer")
    for command in (["record", script, "-o", "x.gvtrace"], ["export", script, "-o", "x.png"], ["check", script],
                    ["diff", script]):
        assert build_parser().parse_args(command).steps == APP_STEPS == 3, command[0]
    trace, recorded = mlp_recording  # graphview record SCRIPT -o TRACE -q
    assert recorded.returncode == 0, recorded.stderr
    info = json.loads(graphview("info", trace, "--json").stdout)
    assert info["steps"] == APP_STEPS and info["options"]["steps"] == APP_STEPS and info["backward_calls"] == 3
    result = graphview("diff", script, "--step-a", "1", "--step-b", str(APP_STEPS))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1].startswith("graphview: 0 nodes removed, 0 added, ")  # (one graph a step)


def test_export_steps_n_records_n_steps(record, tmp_path):
    from graphview.core import timeline

    out = tmp_path / "mlp.pdf"
    result = graphview("export", model("mlp_optimizer"), "-o", out, "--steps", "2")
    assert result.returncode == 0, result.stderr
    run = record(model("mlp_optimizer"), steps=2)
    assert len(run.steps) == 2
    at = timeline.overview(run)
    assert f"mlp_optimizer.py · step 2 of 2 · event {at} of {len(run.events) - 1}: " in exported_caption(out)


def test_step_script_loss_matches_a_plain_run(mlp_recording):
    """Recorded losses of 3 steps (the app's steps, which record runs) equal what the script prints
    when run by python itself."""
    trace, recorded = mlp_recording
    assert recorded.returncode == 0, recorded.stderr
    run = Run(read_trace(trace).events)
    assert len(run.steps) == 3
    losses = []
    for index, op in run.ops:
        if op["op"] == "cross_entropy":
            losses.append(run.tensors[op["outputs"][0][0]]["values"][0])
    plain = subprocess.run([sys.executable, model("mlp_optimizer")], capture_output=True, text=True).stdout
    expected = [float(line.split()[1]) for line in plain.splitlines()][:3]
    assert losses == pytest.approx(expected, rel=1e-6)


def test_script_that_raises_keeps_its_trace(tmp_path):
    trace = tmp_path / "err.gvtrace"
    result = graphview("record", lesson("error_backward_twice"), "-o", trace)
    assert result.returncode == 1
    assert_one_line_reason(result)
    assert "RuntimeError at line 8: Trying to backward through the graph a second time" in result.stderr
    run = Run(read_trace(trace).events)
    assert run.status == "error" and len(run.backwards) == 2 and run.op_nodes


def test_syntax_error(write_script, tmp_path):
    script = write_script("import torch\nx = torch.ones(2\nprint(x)\n")
    result = graphview("record", script, "-o", tmp_path / "s.gvtrace")
    assert result.returncode == 1
    assert_one_line_reason(result)
    assert "syntax error at line 2" in result.stderr
    err = Run(read_trace(tmp_path / "s.gvtrace").events).errors[0][1]
    assert err["type"] == "SyntaxError" and err["line"] == 2


def test_sys_exit(write_script, tmp_path):
    script = write_script("import sys, torch\nx = torch.ones(2, requires_grad=True) * 2\nsys.exit(3)\n")
    result = graphview("record", script, "-o", tmp_path / "e.gvtrace")
    assert result.returncode == 1 and "sys.exit(3)" in result.stderr
    run = Run(read_trace(tmp_path / "e.gvtrace").events)
    assert run.status == "exit" and run.end["exit_code"] == 3 and len(run.ops) == 2


def test_endless_loops_are_stopped_by_timeout(write_script, tmp_path):
    python_loop = write_script("import torch\nx = torch.ones(3, requires_grad=True)\ny = x * 2\nwhile True:\n    pass\n")
    native_wait = write_script("import time, torch\nx = torch.ones(3, requires_grad=True)\ny = x * 2\ntime.sleep(600)\n")
    for script in (python_loop, native_wait):
        trace = tmp_path / "loop.gvtrace"
        started = time.monotonic()
        result = graphview("record", script, "-o", trace, "--timeout", "4")
        assert time.monotonic() - started < 40
        assert result.returncode == 1
        assert_one_line_reason(result)
        run = Run(read_trace(trace).events)
        assert run.status == "timeout"
        assert [op["op"] for _, op in run.ops] == ["ones", "mul"]  # recorded before the loop


@pytest.mark.parametrize("crash, signal_name", [
    ("import ctypes\nctypes.string_at(0)\n", "SIGSEGV"),
    ("import os\nos.abort()\n", "SIGABRT"),
])
def test_crashing_script_leaves_a_readable_trace(write_script, tmp_path, crash, signal_name):
    script = write_script("import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * 3).sum()\n" + crash)
    trace = tmp_path / "crash.gvtrace"
    result = graphview("record", script, "-o", trace)
    assert result.returncode == 1
    assert_one_line_reason(result)
    assert signal_name in result.stderr
    run = Run(read_trace(trace).events)
    assert run.status == "crashed"
    assert len(run.ops) == 3 and run.errors[-1][1]["line"] == 5


def test_megabytes_of_output_are_capped(write_script, tmp_path):
    script = write_script("import torch\nfor i in range(100000):\n    print('x' * 60)\nprint(torch.ones(1) * 2)\n")
    trace = tmp_path / "loud.gvtrace"
    result = graphview("record", script, "-o", trace, "--quiet")
    assert result.returncode == 0
    assert trace.stat().st_size < 3 * 1024 * 1024
    events = read_trace(trace).events
    assert any(e["ev"] == "output_capped" and e["bytes"] > 4_000_000 for e in events)
    assert Run(events).status == "ok"


def test_bad_input_one_line_and_exit_2(tmp_path, capsys):
    bad_utf8 = tmp_path / "latin1.py"
    bad_utf8.write_bytes(b"# caf\xe9\nimport torch\n")
    corrupt = tmp_path / "corrupt.gvtrace"
    corrupt.write_bytes(b"\x00\x01garbage")
    cases = [
        (("record", tmp_path / "missing.py", "-o", tmp_path / "m.gvtrace"), "no such file"),
        (("record", bad_utf8, "-o", tmp_path / "b.gvtrace"), "not UTF-8"),
        (("record", lesson("chain_rule"), "-o", tmp_path / "no" / "dir" / "x.gvtrace"), "cannot write"),
        (("info", corrupt), "not a graphview trace"),
        (("info", tmp_path / "missing.gvtrace"), "no such file"),
        (("export", lesson("chain_rule"), "-o", tmp_path / "graph.xyz"), "format"),
        (("export", lesson("chain_rule"), "-o", tmp_path / "missing" / "graph.png"), "does not exist"),
        (("record", lesson("chain_rule"), "-o", tmp_path / "x.gvtrace", "--steps", "0"), "at least 1"),
    ]
    for args, reason in cases:  # each refused before a runner would start
        result = graphview_here(capsys, *args)
        assert result.returncode == 2, (args, result.stderr)
        assert_one_line_reason(result)
        assert reason in result.stderr, (args, result.stderr)


def test_truncated_trace_opens_with_a_warning(tmp_path, traces, capsys):
    trace = tmp_path / "t.gvtrace"
    data = traces["ok"].read_bytes()  # chain_rule, recorded by graphview record
    trace.write_bytes(data[: len(data) * 3 // 4])  # (a third of it is the run's start with its notes)
    result = graphview_here(capsys, "info", trace)
    assert result.returncode == 0
    assert "warning" in result.stderr and "status:          incomplete" in result.stdout


def test_output_of_child_processes_and_raw_descriptors_is_kept(write_script, tmp_path):
    script = write_script(
        "import os, sys, torch\n"
        "os.system('echo from a child process')\n"
        "sys.stdout.buffer.write(b'raw bytes\\n')\n"
        "print('fileno', sys.stdout.fileno() >= 0)\n"
    )
    trace = tmp_path / "out.gvtrace"
    result = graphview("record", script, "-o", trace)
    assert result.returncode == 0, result.stderr
    text = "".join(e["text"] for e in read_trace(trace).events if e["ev"] == "stdout")
    # output of another process arrives on its own pipe: present, though not ordered with print()
    assert "from a child process" in text and "raw bytes" in text and "fileno" in text and "True" in text


def test_check_reports_pitfalls_and_exits_1(tmp_path):
    from tests.conftest import SAMPLES

    result = graphview("check", SAMPLES / "pitfalls" / "inplace_on_saved.py")
    assert result.returncode == 1
    assert "inplace_on_saved.py:6: an in-place op changed a tensor saved for backward [inplace-saved]" in result.stdout
    clean = graphview("check", lesson("chain_rule"))
    assert clean.returncode == 0 and "no autograd pitfalls" in clean.stderr


def test_gradcheck_command_in_a_runner_process():
    from tests.conftest import SAMPLES

    bad = graphview("gradcheck", SAMPLES / "pitfalls" / "wrong_custom_backward.py", "--tensor", "x")
    assert bad.returncode == 1 and "ABOVE" in bad.stderr
    assert "       1                 6                  12" in bad.stdout
    good = graphview("gradcheck", lesson("chain_rule"), "--tensor", "x")
    assert good.returncode == 0 and "within" in good.stderr


RAISES = "import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * 3).sum()\nraise ValueError('boom')\n"


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Two traces recorded once for the tests below: a run that ended well and one that raised."""
    folder = tmp_path_factory.mktemp("traces")
    script = folder / "raises.py"
    script.write_text(RAISES, encoding="utf-8")
    ok, failed = folder / "ok.gvtrace", folder / "failed.gvtrace"
    assert graphview("record", lesson("chain_rule"), "-o", ok, "-q").returncode == 0
    assert graphview("record", script, "-o", failed, "-q").returncode == 1
    return {"ok": ok, "failed": failed}


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_export_of_a_failed_run_writes_what_was_recorded_and_exits_1(write_script, tmp_path, traces):
    for out in (tmp_path / "g.png", tmp_path / "g.json"):
        result = graphview("export", traces["failed"], "-o", out)
        assert result.returncode == 1, result.stderr
        lines = [l for l in result.stderr.splitlines() if l.startswith("graphview:")]
        assert len(lines) == 1 and "the script failed (ValueError at line 4: boom)" in lines[0], result.stderr
        assert "recorded up to the error" in lines[0] and "wrote" in lines[0]
        assert out.stat().st_size > 0
    assert any(n.get("name") == "w" for n in json.loads((tmp_path / "g.json").read_text())["nodes"])
    # nothing recorded (a syntax error): no blank image
    broken = write_script("import torch\nx = torch.ones(2)\ny = (x\n")
    out = tmp_path / "s.png"
    result = graphview("export", broken, "-o", out)
    assert result.returncode == 1, result.stderr
    assert_one_line_reason(result)
    assert "SyntaxError at line 3" in result.stderr and "nothing written" in result.stderr
    assert not out.exists()


def test_check_and_diff_of_a_failed_run_exit_1(traces, capsys):
    for args in (("check", traces["failed"]), ("diff", traces["failed"], traces["failed"])):
        result = graphview_here(capsys, *args)
        assert result.returncode == 1, (args, result.stderr)
        assert "the script failed (ValueError at line 4: boom)" in result.stderr


def test_unknown_export_format_lists_every_format(tmp_path, traces, capsys):
    result = graphview_here(capsys, "export", traces["ok"], "-o", tmp_path / "out.bmp")
    assert result.returncode == 2
    assert_one_line_reason(result)
    for suffix in (".png", ".svg", ".pdf", ".json", ".dot", ".gv", ".graphml"):
        assert suffix in result.stderr, result.stderr


def test_unwritable_output_one_line_with_the_reason(tmp_path, traces):
    cases = []
    for suffix in (".png", ".svg", ".pdf", ".json"):
        folder = tmp_path / f"folder{suffix}"
        folder.mkdir()
        cases.append((folder, "it is a folder"))
    if sys.platform.startswith("linux") and os.path.isdir("/proc"):
        cases += [(f"/proc/x{suffix}", None) for suffix in (".png", ".svg", ".pdf")]
    for out, reason in cases:
        result = graphview("export", traces["ok"], "-o", out)
        assert result.returncode == 2, (out, result.stderr)
        assert result.stderr.splitlines() == [result.stderr.strip()], result.stderr  # one line, no Qt warnings
        assert result.stderr.startswith(f"graphview: cannot write {out}: "), result.stderr
        if reason:
            assert reason in result.stderr, result.stderr
        else:  # the OS's reason
            assert result.stderr.strip() != f"graphview: cannot write {out}:", result.stderr


def test_scale_must_be_positive_and_a_lowered_scale_is_reported(tmp_path, traces, capsys):
    out = tmp_path / "g.png"
    for bad in ("0", "-1", "nan"):
        result = graphview_here(capsys, "export", traces["ok"], "-o", out, "--scale", bad)
        assert result.returncode == 2, (bad, result.stderr)
        assert "--scale" in result.stderr and "greater than 0" in result.stderr
        assert not out.exists()
    result = graphview("export", traces["ok"], "-o", out, "--scale", "1000")
    assert result.returncode == 0, result.stderr
    note = [l for l in result.stderr.splitlines() if "used scale" in l]
    assert len(note) == 1 and "16384 pixels" in note[0], result.stderr
    assert max(png_size(out)) <= 16384
    result = graphview("export", traces["ok"], "-o", out, "--scale", "1")
    assert result.returncode == 0 and "used scale" not in result.stderr


def test_exported_pictures_carry_a_caption_and_the_legend_unless_left_out(tmp_path, traces):
    import pypdf

    from graphview.core import timeline
    from graphview.core.captions import caption
    from graphview.qt.widgets.legend import LEGEND

    def pdf_text(path):
        return " ".join(pypdf.PdfReader(str(path)).pages[0].extract_text().split())

    run = Run(read_trace(traces["ok"]).events)
    expected = " ".join(caption(run, timeline.overview(run)).split())
    assert expected.startswith("chain_rule.py · event ")
    full, bare = tmp_path / "full.pdf", tmp_path / "bare.pdf"
    assert graphview("export", traces["ok"], "-o", full).returncode == 0
    assert graphview("export", traces["ok"], "-o", bare, "--no-legend", "--no-caption").returncode == 0
    full_text, bare_text = pdf_text(full), pdf_text(bare)
    for label in ("MulBackward0", "PowBackward0", "AccumulateGrad"):
        assert label in full_text and label in bare_text, label
    assert expected in full_text and expected not in bare_text
    for entry in LEGEND:  # "AccumulateGrad" is a node's label too
        assert full_text.count(entry.text) > bare_text.count(entry.text), entry.text
    png, png_bare = tmp_path / "g.png", tmp_path / "bare.png"
    assert graphview("export", traces["ok"], "-o", png, "--scale", "1").returncode == 0
    assert graphview("export", traces["ok"], "-o", png_bare, "--scale", "1", "--no-legend").returncode == 0
    assert png_size(png)[1] > png_size(png_bare)[1]
    result = graphview("export", traces["ok"], "-o", tmp_path / "g.json", "--no-legend")
    assert result.returncode == 0 and "apply to pictures only" in result.stderr


def test_info_on_a_damaged_trace(tmp_path, traces, capsys):
    lines = traces["ok"].read_bytes().splitlines(keepends=True)
    header_only, damaged_after_header, damaged_later, no_start = (tmp_path / f"{n}.gvtrace" for n in range(4))
    header_only.write_bytes(lines[0])
    damaged_after_header.write_bytes(lines[0] + b"garbage{\n" + b"".join(lines[1:]))
    damaged_later.write_bytes(b"".join(lines[:3]) + b"garbage{\n" + b"".join(lines[3:]))
    no_start.write_bytes(lines[0] + b'{"ev": "stdout", "text": "hi"}\n' + b"garbage{\n")
    for trace, reason in ((header_only, "holds no events"), (damaged_after_header, "damaged")):
        result = graphview_here(capsys, "info", trace)
        assert result.returncode == 2, result.stderr
        assert_one_line_reason(result)
        assert reason in result.stderr and result.stdout == ""
    for trace in (damaged_later, no_start):
        result = graphview_here(capsys, "info", trace)
        assert result.returncode == 0, result.stderr
        assert "graphview: warning:" in result.stderr and "damaged" in result.stderr
        assert "None" not in result.stdout and "damaged" in result.stdout, result.stdout
    result = graphview_here(capsys, "info", no_start)
    assert "torch:           unknown" in result.stdout
    assert "chain_rule.py" in result.stdout  # the script, from the trace's header


def test_help_names_every_export_format_and_how_to_open_the_app(capsys):
    top = graphview_here(capsys, "--help")
    assert top.returncode == 0
    text = " ".join(top.stdout.split())
    assert "graphview SCRIPT" in text and "desktop app" in text
    for fmt in ("PNG", "SVG", "PDF", "JSON", "DOT", "GraphML"):
        assert fmt in text, fmt
    export = " ".join(graphview_here(capsys, "export", "--help").stdout.split())
    for fmt in ("PNG", "SVG", "PDF", "JSON", "DOT", "GraphML"):
        assert fmt in export, fmt


def test_missing_file_is_reported_before_the_display(tmp_path):
    no_display = ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    result = graphview(tmp_path / "nonexistent.py", unset=no_display)
    assert result.returncode == 2
    assert result.stderr.strip() == f"graphview: no such file: {tmp_path / 'nonexistent.py'}"
    result = graphview(tmp_path, unset=no_display)
    assert result.returncode == 2 and "folder" in result.stderr and "display" not in result.stderr


def test_a_torch_warning_names_the_script_line_not_graphview(tmp_path):
    script = tmp_path / "warns.py"
    script.write_text("import torch\nx = torch.ones(3, requires_grad=True)\ny = (x * 2).sum()\nprint(float(y))\n")
    result = graphview("record", script, "-o", tmp_path / "warns.gvtrace")
    assert result.returncode == 0, result.stderr
    assert f"{script}:4: UserWarning" in result.stderr
    assert "recorder.py" not in result.stderr


def test_check_of_a_script_that_fails_before_backward_claims_no_clean_bill(write_script):
    result = graphview("check", write_script("import torch\nx = torch.ones(2\n"))
    assert result.returncode == 1
    assert "no autograd pitfalls" not in result.stderr, result.stderr
    assert ("graphview: nothing to check: the script failed (SyntaxError at line 2: '(' was never closed) "
            "before any backward") in result.stderr


def _stderr_on_a_terminal(*args, columns: int) -> str:
    """What graphview writes to a terminal ``columns`` wide (a pseudo-terminal)."""
    import pty

    main, tty = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS=str(columns))
    try:
        subprocess.run([sys.executable, "-m", "graphview.app.cli", *map(str, args)], stdout=subprocess.DEVNULL,
                       stderr=tty, env=env, timeout=120)
        os.close(tty)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the terminal's other end is closed and all of it read
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(main)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_check_wraps_torchs_long_error_at_the_terminal_width():
    """torch's RuntimeError of a second backward is ~400 characters: on a terminal it is wrapped, its
    continuation lines indented, its words intact; into a pipe it stays one line."""
    piped = graphview("check", lesson("error_backward_twice"))
    line = next(l for l in piped.stderr.splitlines() if l.startswith("graphview: the script failed"))
    assert "Trying to backward through the graph a second time" in line and len(line) > 300
    shown = _stderr_on_a_terminal("check", lesson("error_backward_twice"), columns=72)
    lines = shown[shown.index("graphview: the script failed"):].splitlines()
    wrapped = lines[:1] + [l for l in lines[1:] if l.startswith("    ")]
    assert len(wrapped) >= 5 and all(len(l) <= 72 for l in wrapped), shown
    assert " ".join(l.strip() for l in wrapped) == line


def test_info_says_the_most_held_at_once_only_where_it_is_not_the_activations_peak(write_script, tmp_path, traces):
    """info's first lines give what backward holds at the activations' peak, weights and inputs
    included; a second figure (the most held at any moment) is printed only where it differs."""
    import torch

    from graphview.core.held import human

    lines = graphview("info", traces["ok"]).stdout.splitlines()
    assert any(l.startswith("held for backward at the peak (cpu, event ") for l in lines)
    assert not any("most held" in l or "peak saved" in l for l in lines), lines
    # the first backward holds an input of 1,000 floats (and no activation); the second 10 floats
    script = write_script("import torch\n"
                          "w = torch.randn(1000, requires_grad=True)\n"
                          "big = torch.randn(1000)\n"
                          "(w * big).sum().backward()\n"
                          "x = torch.randn(10, requires_grad=True)\n"
                          "(x.exp() * 2).sum().backward()\n")
    trace = tmp_path / "two.gvtrace"
    assert graphview("record", script, "-o", trace, "-q").returncode == 0
    lines = graphview("info", trace).stdout.splitlines()
    input_bytes, activation_bytes = 1000 * torch.float32.itemsize, 10 * torch.float32.itemsize
    at_peak = next(i for i, l in enumerate(lines) if l.startswith("held for backward at the peak (cpu, event "))
    assert lines[at_peak + 1].strip() == f"{human(activation_bytes)}: {human(activation_bytes)} of activations"
    assert (f"most held for backward at once (cpu): {human(input_bytes)} ({input_bytes} bytes), weights and inputs "
            "included, more than at the activations' peak") in lines


def test_the_runner_freezes_torchs_compiler_when_the_script_will_import_it(write_script, tmp_path):
    """An optimizer's constructor imports torch's compiler (~10^5 objects): imported after the
    runner froze what torch left, every full collection scanned them again (10-15% of a recorded
    256-layer MLP step). A script that names an optimizer finds it imported and frozen; one that
    does not starts without it."""
    seen = {}
    for names_an_optimizer in (True, False):
        script = write_script(
            "import gc, sys\n"
            + ("# then torch.optim.SGD(...)\n" if names_an_optimizer else "")
            # (the script's text must not name what it looks for: the runner reads it)
            + "print('torch._dyn' + 'amo' in sys.modules, gc.get_freeze_count())\n")
        trace = tmp_path / f"start{names_an_optimizer}.gvtrace"
        result = graphview("record", script, "-o", trace)
        assert result.returncode == 0, result.stderr
        imported, frozen = "".join(e["text"] for e in read_trace(trace).events if e["ev"] == "stdout").split()
        seen[names_an_optimizer] = (imported == "True", int(frozen))
    assert seen[True][0] and not seen[False][0]
    assert seen[True][1] > seen[False][1] + 50_000  # the compiler's objects, frozen with torch's


def test_an_animation_export_says_how_far_it_is(tmp_path, mlp_recording):
    """A GIF of a Llama backward (200 frames) took 37 s with nothing said: the export says the
    frame it is at on stderr, a line every tenth of the frames when stderr is a file or a pipe, in
    place on one line when it is a terminal."""
    from PIL import Image

    trace, recorded = mlp_recording
    assert recorded.returncode == 0, recorded.stderr
    gif = tmp_path / "run.gif"
    result = graphview("export", trace, "-o", gif, "--max-frames", "20", "--size", "320x200")
    assert result.returncode == 0, result.stderr
    frames = Image.open(gif).n_frames
    assert frames == 20
    lines = [line for line in result.stderr.splitlines() if line.startswith("graphview: frame ")]
    assert lines == [f"graphview: frame {n}/20" for n in range(2, 21, 2)], result.stderr
    assert "\r" not in result.stderr
    # a terminal: the count rewritten in place, every frame, the line cleared before the last word
    import pty

    main, side = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.run([sys.executable, "-m", "graphview.app.cli", "export", str(trace), "-o", str(gif),
                              "--max-frames", "20", "--size", "320x200"], stderr=side, stdout=subprocess.DEVNULL,
                             env=env, timeout=120)
    os.close(side)
    said = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        said += chunk
    os.close(main)
    assert process.returncode == 0
    text = said.decode()
    assert [f"\rgraphview: frame {n}/20" in text for n in range(1, 21)] == [True] * 20
    assert text.rstrip().splitlines()[-1].strip("\r\x1b[K").startswith("graphview: wrote a GIF animation of 20 frames")
