"""The fuzz suite: mutated real recordings against the whole app, not only the reader.

Each example is a recording of a bundled sample model with a few mutations, most of them within
the schema (tests/fuzz_traces.py), so that the trace reaches every view. The window (offscreen)
opens it, whole or a piece at a time as it reads a big trace (stepping while it reads), and is
driven as a user drives it: the cursor moved with every stepping command and played from the start,
every node selected and its tooltip made, every link of the inspector and the console clicked, every
module box level, every panel, every finding, a search, the About box, and every export (PNG, SVG,
PDF, JSON, DOT, GraphML, the memory chart, the trace itself). The command line gets the same
traces: ``info``, ``check``, ``diff`` (with itself and with an unchanged recording) and ``export``
to each format. What must hold (docs/safety.md):

- no exception escapes (the window's handlers included) and no signal kills the process;
- a command exits 0, 1 (the recorded run failed, or ``check`` found pitfalls) or 2 with one line
  ``graphview: ...``, never a traceback; ``info`` and the window accept and refuse alike;
- what the window accepted, it exports: SVG and GraphML that parse as XML, a trace that reads back.

The examples are derandomized (the same ones on every run) and few, to keep the suite fast; the
reader alone gets many more in tests/app/test_bad_traces.py.
"""

from __future__ import annotations

import functools
import os
import xml.etree.ElementTree as ElementTree

import pytest
from PySide6.QtCore import QUrl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphview.app import cli
from graphview.core.trace import parse_trace, read_trace
from tests.conftest import app_for_mutated_traces
from tests.fuzz_traces import mutated_trace, record_samples

FUZZ = settings(derandomize=True, database=None, deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])
#: how many nodes of one trace are selected (a mutated list can make thousands)
NODES_CAP = 40
DATA_FORMATS = (".json", ".dot", ".graphml")
PICTURES = (".png", ".svg", ".pdf")
#: every stepping command of the Run menu, in an order that goes forward, back and to both ends
MOVES = ("to_end", "back", "back", "to_start", "step", "over", "to_backward", "bw_node", "end_step", "next_step",
         "step", "to_end")


@functools.cache
def real_traces() -> list[tuple[dict, list[dict]]]:
    """The sample recordings, made once per session (a function, not a fixture: hypothesis would
    print a fixture's whole value with each failing example)."""
    return record_samples()


@pytest.fixture(scope="module")
def fuzz_app(qapp, tmp_path_factory):
    """One window for every example (opening a trace replaces the run it shows), closed at the end
    of the module and deleted then (a window that shows many malformed runs must be destroyed
    cleanly, as the app destroys its window at exit)."""
    yield from app_for_mutated_traces(tmp_path_factory)
    qapp.processEvents()


def fresh_folder(tmp_path) -> str:
    import tempfile

    return tempfile.mkdtemp(dir=tmp_path)


def run_command(capsys, *args) -> tuple[int, str, list[str]]:
    code = cli.main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, [line for line in captured.err.splitlines() if line.strip()]


def assert_answered(code: int, out: str, err: list[str], args) -> None:
    """Exit 0, 1 or 2; every line on stderr graphview's; a refusal (2) is one line (after the
    warnings about the trace that the command read, if it read one)."""
    assert code in (0, 1, 2), (args, code, err)
    assert "Traceback" not in out + "\n".join(err), (args, err)
    assert all(line.startswith("graphview: ") for line in err), (args, err)
    if code == 2:
        assert len([line for line in err if not line.startswith("graphview: warning: ")]) == 1, (args, err)


# ------------------------------------------------------------------ the command line
@settings(FUZZ, max_examples=150)
@given(data=st.data())
def test_commands_on_mutated_traces_answer_in_one_line(fuzz_app, tmp_path, capsys, data):
    folder = fresh_folder(tmp_path)
    trace = os.path.join(folder, "t.gvtrace")
    with open(trace, "wb") as f:
        f.write(data.draw(mutated_trace(real_traces())))
    original = str(tmp_path / "sample0.gvtrace")  # an unchanged recording to compare with
    if not os.path.exists(original):
        write_sample(str(tmp_path))
        os.rename(os.path.join(str(tmp_path), "sample0.gvtrace"), original)
    suffix = data.draw(st.sampled_from(DATA_FORMATS + PICTURES))
    out = os.path.join(folder, "out" + suffix)
    at = data.draw(st.sampled_from([(), ("--at", "0"), ("--at", "7"), ("--at", "-1"), ("--at", "1000000")]))
    codes = {}
    for args in (("info", trace), ("check", trace), ("diff", trace, trace), ("diff", original, trace),
                 ("info", "--json", trace), ("export", trace, *at, "-o", out)):
        code, stdout, err = run_command(capsys, *args)
        assert_answered(code, stdout, err, args)
        codes[args[:2]] = code
    if codes["info", trace] == 2:  # refused: by every command, and nothing written
        assert set(codes.values()) == {2}, codes
        assert sorted(os.listdir(folder)) == ["t.gvtrace"]
    elif codes["export", trace] != 2:  # (2: an --at outside the run)
        assert os.path.getsize(out) > 0, codes
        assert sorted(os.listdir(folder)) == ["out" + suffix, "t.gvtrace"]  # no partial file left
        if suffix in (".svg", ".graphml"):
            ElementTree.parse(out)
    else:
        assert at and sorted(os.listdir(folder)) == ["t.gvtrace"], codes


# ------------------------------------------------------------------ the window
@settings(FUZZ, max_examples=180)
@given(data=st.data())
def test_the_window_shows_and_exports_every_mutated_trace_it_opens(fuzz_app, tmp_path, qtbot, capsys, monkeypatch,
                                                                   data):
    from graphview.app import trace_load
    from graphview.core import trace_pieces

    folder = fresh_folder(tmp_path)
    trace = os.path.join(folder, "t.gvtrace")
    with open(trace, "wb") as f:
        f.write(data.draw(mutated_trace(real_traces())))
    # whole at once, or read a piece at a time between repaints as a big trace is (a trace refused
    # part way is then shown up to where it was refused)
    streamed = data.draw(st.booleans())
    monkeypatch.setattr(trace_pieces, "PIECE_BYTES", 3000 if streamed else 256 << 10)
    monkeypatch.setattr(trace_load, "SLICE_BYTES", 1500 if streamed else 16 << 10)
    refused = cli.main(["info", trace]) == 2
    capsys.readouterr()
    window = fuzz_app.window
    before = window.run
    with qtbot.captureExceptions() as exceptions:
        opened = fuzz_app.open(trace)
        if opened:
            if streamed:  # stepping while it is read: a step not read yet is waited for
                for move in ("step", "to_end", "bw_node", "back"):
                    fuzz_app.qt.processEvents()
                    window.actions[move].trigger()
            assert fuzz_app.wait_idle()
            message = window.statusBar().message()
            drive(window)
            export_everything(window, folder)
        qtbot.wait(50)  # what the window does on its timers after (the overview, the drawing's slices)
    assert not exceptions, format_exceptions(exceptions)
    if not opened:  # refused: what the window showed stays, the reason is one line naming the file
        message = window.statusBar().message()
        assert refused and window.run is before and trace in message and "\n" not in message, message
    elif refused:  # refused part way: what came before is shown, and the window says where it stopped
        assert streamed and "stopped reading there" in message, message


def format_exceptions(exceptions) -> str:
    import traceback

    return "\n".join("".join(traceback.format_exception(*info)) for info in exceptions)


def drive(window) -> None:
    """Everything a user does with an open trace, short of re-running it."""
    for move in MOVES:
        window.actions[move].trigger()
    play(window)
    for level in (1, 1, -1, None):
        window.actions[{1: "open_level", -1: "shut_level", None: "open_all"}[level]].trigger()
    select_every_node(window)
    click_links(window.console)  # a traceback's lines
    for i in range(window.bottom_tabs.count()):
        window.bottom_tabs.setCurrentIndex(i)
        window.bottom_tabs.currentWidget().grab()  # painted: the chart's axes, the ledger's rows
    for dock in (window.code_dock, window.inspector_dock, window.toggles_dock, window.bottom_dock):
        dock.raise_()
    findings = window.diagnostics.list
    for i in range(findings.topLevelItemCount()):
        findings.setCurrentItem(findings.topLevelItem(i))
        window.diagnostics._chosen(findings.topLevelItem(i))
    for text in ("a", "<img", "\x1b"):
        window.search.setText(text)
        window.find()
    for action in ("fit", "zoom_selection", "zoom_in", "zoom_out"):
        window.actions[action].trigger()
    about = window.show_about()
    about.close()
    window.view.grab()


def play(window, steps: int = 60) -> None:
    """Play from the start: the cursor steps forward, animated (a finished backward node sends its
    gradient along its edges as a pulse), for up to ``steps`` steps."""
    from graphview.core import timeline

    window.set_cursor(0)
    for _ in range(steps):
        at = timeline.step_forward(window.run, window.cursor)
        if at == window.cursor:
            break
        window.set_cursor(at, animate=True)
        window.keep_in_view()


def click_links(browser) -> None:
    for href in links(browser)[:8]:
        browser.anchorClicked.emit(QUrl(href))


def links(browser) -> list[str]:
    """The targets of the links a text browser shows."""
    found = []
    block = browser.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            href = it.fragment().charFormat().anchorHref()
            if href:
                found.append(href)
            it += 1
        block = block.next()
    return found


def select_every_node(window) -> None:
    """At the end of the run and at its middle: each node (up to :data:`NODES_CAP`) revealed,
    selected (the inspector fills), its tooltip made; every module box's tooltip."""
    scene = window.scene
    for at in (len(window.run.events) - 1, len(window.run.events) // 2):
        window.set_cursor(at)
        for node_id in list(scene.drawing.nodes)[:NODES_CAP] if scene.drawing is not None else []:
            scene.reveal([node_id])
            scene.select_node(node_id)
            item = scene.item_for(node_id)
            if item is not None:
                item.toolTip()
            click_links(window.inspector)  # the lines that made the node, used its tensors
        for group in list(scene.groups.values())[:NODES_CAP]:
            group.toolTip()


def export_everything(window, folder: str) -> None:
    """Every format of File > Export, each written whole (no failure message, no partial file);
    the SVG and the GraphML parse as XML; the saved trace reads back."""
    written = []
    for suffix in PICTURES + DATA_FORMATS + ("-memory.png", "-memory.csv", ".gvtrace"):
        path = os.path.join(folder, "export" + suffix)
        {".json": window.export_data, ".dot": window.export_data, ".graphml": window.export_data,
         "-memory.png": window.export_chart_png, "-memory.csv": window.export_chart_csv,
         ".gvtrace": window.export_trace}.get(suffix, window.export_image)(path)
        assert window.statusBar().message() == f"wrote {path}", window.statusBar().message()
        assert os.path.getsize(path) > 0
        written.append(os.path.basename(path))
    assert not [name for name in os.listdir(folder) if name.endswith(".partial")]
    for suffix in (".svg", ".graphml"):
        ElementTree.parse(os.path.join(folder, "export" + suffix))
    saved = os.path.join(folder, "export.gvtrace")
    assert len(read_trace(saved).events) == len(window.run.events)
    parse_trace(open(saved, "rb").read(), saved)


# ------------------------------------------------------------------ what the fuzzing found
def write_sample(folder, index: int = 0) -> str:
    from graphview.core.trace import write_trace

    header, events = real_traces()[index]
    path = os.path.join(folder, f"sample{index}.gvtrace")
    write_trace(path, events, header)
    return path


def test_a_trace_opened_while_a_node_is_selected_at_any_cursor(fuzz_app, tmp_path, qtbot):
    """Opening a trace clears the scene; the selected item's going announces a selection change,
    on which the overview looks for the cursor's node: it found the last run's node, made an item
    for it and routed its edges to items already deleted (RuntimeError from the selection handler)."""
    trace = write_sample(str(tmp_path))
    window = fuzz_app.window
    with qtbot.captureExceptions() as exceptions:
        assert fuzz_app.open(trace) and fuzz_app.wait_idle()
        for at in range(len(window.run.events)):
            window.set_cursor(at)
            for node_id in list(window.scene.drawing.nodes)[:5]:
                window.scene.select_node(node_id)
            fuzz_app.qt.processEvents()
            assert fuzz_app.open(trace) and fuzz_app.wait_idle()
    assert not exceptions, format_exceptions(exceptions)


def changed_sample(folder: str, index: int, change) -> str:
    """Sample ``index`` with ``change(header, events)`` applied, written to ``folder``."""
    import copy

    from graphview.core.trace import write_trace

    header, events = copy.deepcopy(real_traces()[index])
    change(header, events)
    path = os.path.join(folder, "changed.gvtrace")
    write_trace(path, events, header)
    return path


@pytest.mark.parametrize("steps", [2**31, 2**53])
def test_a_count_of_steps_past_a_c_int_opens(fuzz_app, tmp_path, qtbot, capsys, steps):
    """The run options' steps reach a QSpinBox, which takes a C int: 2**31 raised OverflowError from
    the middle of opening the trace. Shown as the most the box holds (a trace's options are read-only)."""
    def change(header, events):
        header["options"]["steps"] = events[0]["options"]["steps"] = steps

    trace = changed_sample(str(tmp_path), 1, change)
    with qtbot.captureExceptions() as exceptions:
        assert fuzz_app.open(trace) and fuzz_app.wait_idle()
    assert not exceptions, format_exceptions(exceptions)
    toggles = fuzz_app.window.toggles
    assert toggles.steps.value() == toggles.steps.maximum() and not toggles.isEnabled()
    assert run_command(capsys, "info", trace)[0] == 0


def test_a_traceback_line_past_a_c_int_links_to_no_line(fuzz_app, tmp_path, qtbot):
    """A traceback's line went to the code pane through a signal of C ints: 2**32 + 3 arrived as
    line 3, and the click marked a line the trace never named."""
    def change(header, events):
        for event in events:
            for frame in event.get("traceback") or () if event["ev"] == "error" else ():
                frame["line"] = 2**32 + 3

    trace = changed_sample(str(tmp_path), 6, change)  # (error_backward_twice)
    window = fuzz_app.window
    assert fuzz_app.open(trace) and fuzz_app.wait_idle()
    window.set_cursor(len(window.run.events) - 1)
    assert links(window.console) == [f"line:{2**32 + 3}"]
    window.console.anchorClicked.emit(QUrl(f"line:{2**32 + 3}"))
    assert window.code.current_line == 2**32 + 3
    assert not window.code.extraSelections() or all(
        sel.cursor.blockNumber() != 2 for sel in window.code.extraSelections())


def test_the_console_shows_the_last_mebibyte_of_endless_errors(fuzz_app, tmp_path):
    """Errors have no count a recording keeps to: the console, built again at each step that adds
    output, showed all of them (20,000 errors: 0.4 s a step). It shows the last MiB before the
    cursor, in whole pieces, and says how many earlier pieces it leaves out."""
    from graphview.qt.panels.console import SHOWN_CAP

    def change(header, events):
        error = next(e for e in events if e["ev"] == "error")
        at = events.index(error)
        for n in range(20000):
            events.insert(at + n, {**error, "message": f"error number {n}"})

    trace = changed_sample(str(tmp_path), 6, change)  # (error_backward_twice)
    window = fuzz_app.window
    assert fuzz_app.open(trace) and fuzz_app.wait_idle()
    window.set_cursor(len(window.run.events) - 1)
    text = window.console.toPlainText()
    assert len(text) < SHOWN_CAP
    assert text.startswith("── ") and "earlier pieces of output are not shown" in text.splitlines()[0]
    assert "error number 19999" in text and "error number 0\n" not in text and text.rstrip().endswith("──")
    window.set_cursor(len(window.run.events) // 2)  # the last MiB before the cursor
    middle = window.console.toPlainText()
    assert "error number 19999" not in middle and "error number 9" in middle


def test_the_inspector_lists_the_first_hundred_of_a_nodes_next_functions(fuzz_app, tmp_path):
    """A node with 50,000 next functions (a trace decides how many): the inspector listed every one,
    half a second at each click. It lists the first hundred and says how many more there are."""
    from graphview.qt.panels.inspector import LIST_SHOWN

    def change(header, events):
        node = next(e for e in events if e["ev"] == "node" and e["name"] == "MulBackward0")
        node["next"] = node["next"] * 25000
        next(e for e in events if e["ev"] == "op" and e["op"] == "mul")["inputs"] *= 25000

    trace = changed_sample(str(tmp_path), 0, change)  # (chain_rule: x * 2)
    window = fuzz_app.window
    assert fuzz_app.open(trace) and fuzz_app.wait_idle()
    window.set_cursor(len(window.run.events) - 1)
    vid = next(op.vid for op in window.run.op_nodes.values() if op.name == "MulBackward0")
    window.scene.select_node(f"op{vid}")
    text = window.inspector.toPlainText()
    assert f"… and {50000 - LIST_SHOWN:,} more" in text
    assert text.count("AccumulateGrad") <= LIST_SHOWN + 5 and len(text) < 100 * LIST_SHOWN, len(text)
