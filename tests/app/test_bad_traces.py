"""Mutated traces against the reader, ``graphview info``, ``graphview export`` and the window.

Real recordings are mutated (a field removed, retyped or renumbered, an event dropped, doubled
or of another kind, bytes cut or inserted, nesting far beyond any event) and every consumer must
either read the result or refuse it with a one-line reason: no exception escapes, the CLI exits
0 or 2 (``export`` 1 for a run that failed), and nothing is written on refusal."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphview.app import cli
from graphview.core.diagnostics import diagnose
from graphview.core.events import SCHEMA
from graphview.core.export import graph_data, to_dot, to_graphml
from graphview.core.run import Run
from graphview.core.trace import TraceError, make_header, parse_trace, read_trace
from tests.conftest import app_for_mutated_traces, lesson, model

JSON_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from(["nan", "inf", "", "op1", "t1"]),
)
JSON_VALUES = st.recursive(JSON_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=12)


@functools.cache
def recordings() -> list[list[str]]:
    """Lines of a few real traces: a lesson, a step script with an optimizer, a failed run."""
    from graphview.capture.script import run_script
    from graphview.core.options import RunOptions

    traces = []
    for path, options in ((lesson("chain_rule"), RunOptions()), (model("mlp_optimizer"), RunOptions(steps=2)),
                          (lesson("error_backward_twice"), RunOptions())):
        events: list[dict] = []
        run_script(path, events.append, options)
        header = make_header(script=path, options=options.to_dict())
        traces.append([json.dumps(header)] + [json.dumps(e) for e in events])
    return traces


@st.composite
def mutated(draw):
    lines = list(draw(st.sampled_from(recordings())))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(1, len(lines) - 1))
        how = draw(st.sampled_from(["retype", "drop_field", "renumber", "kind", "drop", "double", "bytes",
                                    "deep", "header"]))
        if how == "bytes":
            data = "\n".join(lines).encode()
            at = draw(st.integers(0, len(data)))
            junk = draw(st.binary(max_size=8))
            return data[:at] + junk + data[at + draw(st.integers(0, 40)):]
        if how == "deep":
            lines[i] = "[" * draw(st.sampled_from([100, 5000, 100_000])) + "]" * 3
            continue
        if how == "header":
            header = json.loads(lines[0])
            if not isinstance(header, dict):
                continue
            header[draw(st.sampled_from(["options", "version", "script"]))] = draw(JSON_VALUES)
            lines[0] = json.dumps(header)
            continue
        try:
            event = json.loads(lines[i])
        except (ValueError, RecursionError):  # a line an earlier mutation made deep
            continue
        if not isinstance(event, dict):
            continue
        fields = sorted(k for k in event if k != "ev") or ["ev"]
        field = draw(st.sampled_from(fields))
        if how == "retype":
            event[field] = draw(JSON_VALUES)
        elif how == "drop_field":
            event.pop(field, None)
        elif how == "renumber":
            event[field] = draw(st.integers(-3, 10_000))
        elif how == "kind":
            event["ev"] = draw(st.sampled_from(sorted(SCHEMA) + ["nope", 3]))
        elif how == "drop":
            del lines[i]
            continue
        elif how == "double":
            lines.insert(i, lines[i])
            continue
        lines[i] = json.dumps(event)
    return ("\n".join(lines) + "\n").encode()


def consume(trace_events) -> None:
    """What every view does with a trace it accepted: the model, the summary, the exports, the checks."""
    run = Run(trace_events)
    run.info()
    if not run.events:
        return  # refused by every command and the window (nothing to show)
    for at in (None, len(run.events) // 2):
        data = graph_data(run, at)
        to_dot(data)
        to_graphml(data)
    diagnose(run)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(data=st.data())
def test_reader_and_model_accept_or_refuse_with_a_reason(data):
    raw = data.draw(mutated())
    try:
        trace = parse_trace(raw, "t.gvtrace")
    except TraceError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("t.gvtrace")
        return
    consume(trace.events)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
def test_info_and_export_exit_0_or_2_and_write_nothing_on_refusal(tmp_path, capsys, data):
    raw = data.draw(mutated())
    path = tmp_path / "t.gvtrace"
    path.write_bytes(raw)
    out = tmp_path / "g.json"
    if out.exists():
        out.unlink()
    info = cli.main(["info", str(path)])
    assert info in (0, 2)
    exported = cli.main(["export", str(path), "-o", str(out)])
    assert exported in (0, 1, 2)
    assert os.path.exists(out) == (exported != 2)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if info == 2:
        assert exported == 2 and len([line for line in err.splitlines() if line.startswith("graphview:")]) == 2


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
def test_the_window_opens_or_refuses_a_mutated_trace(live_app, tmp_path, data):
    raw = data.draw(mutated())
    path = tmp_path / "t.gvtrace"
    path.write_bytes(raw)
    before = live_app.window.run
    if live_app.open(str(path)):
        window = live_app.window
        window.set_cursor(len(window.run.events) - 1)
        for item in list(window.scene.node_items.values())[:4]:  # the inspector on a few nodes
            window.scene.clearSelection()
            item.setSelected(True)
        window.set_cursor(0)
    else:
        assert live_app.window.run is before  # refused: what the window showed stays
        assert "t.gvtrace" in live_app.window.statusBar().message()


@pytest.fixture(scope="module")
def live_app(qapp, tmp_path_factory):
    yield from app_for_mutated_traces(tmp_path_factory)  # (deleted at the module's end)


def test_a_refused_trace_leaves_a_running_script_running(live_app, tmp_path, qtbot):
    from tests.app.test_faults import gone, processes_with, stubborn_script

    script, marker = stubborn_script(tmp_path)
    assert live_app.open(script)
    qtbot.waitUntil(lambda: bool(processes_with(marker)), timeout=60000)
    bad = tmp_path / "bad.gvtrace"
    bad.write_text('{"format": "graphview-trace", "version": 1}\n{"ev": "op", "inputs": 3}\n')
    live = live_app.live
    assert not live_app.open(str(bad))
    message = live_app.window.statusBar().message()
    assert message.startswith(f"{bad} is not a valid graphview trace: line 2: op event without its 'oid' field")
    time.sleep(0.5)
    assert live_app.live is live and not live.process_ended and processes_with(marker)
    live_app.stop()
    assert gone(marker)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_compiled_check_of_an_event_agrees_with_the_check_field_by_field(data):
    """The checker tests each event with a function compiled from the schema for its kind, and
    only when that fails goes field by field (to say what is wrong): on every event of mutated real
    traces, in order, the two accept and refuse alike."""
    import copy

    from graphview.core.events import _PASSES, EventChecker, SchemaError

    raw = data.draw(mutated())
    checker = EventChecker()
    for line in raw.split(b"\n")[1:]:
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        kind = event.get("ev") if isinstance(event, dict) else None
        passes = _PASSES.get(kind) if type(kind) is str else None
        slow = EventChecker()
        slow.known = copy.deepcopy(checker.known)
        try:
            slow.check_slowly(event)
            accepted = True
        except SchemaError:
            accepted = False
        known = copy.deepcopy(checker.known)
        assert (passes is not None and passes(event, known)) == accepted, event
        if accepted:
            checker.known = slow.known
            assert known == slow.known  # the same ids introduced


# ------------------------------------------------------------------ traces that hold no limits of their own
# Each attack of the hostile-input review, on a real recording (chain_rule): the reader holds the
# limits (docs/safety.md, "A trace holds no limits of its own"), so every command refuses or reads
# it with one line, and the window refuses it with a message or shows it and its nodes when clicked.
EXPORTS = ("svg", "json", "graphml", "dot")


def chain_rule() -> tuple[dict, list[dict]]:
    """The header and events of a real recording, as fresh dicts to mutate."""
    lines = recordings()[0]
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def write_lines(path, header: dict, events: list) -> str:
    with open(path, "w", encoding="utf-8") as f:  # (json.dumps escapes a lone surrogate: the file is UTF-8)
        for item in [header, *events]:
            f.write((item if isinstance(item, str) else json.dumps(item)) + "\n")
    return str(path)


def first(events: list[dict], kind: str, **fields) -> dict:
    return next(e for e in events if e["ev"] == kind and all(e.get(k) == v for k, v in fields.items()))


def cli_lines(capsys, *args) -> tuple[int, list[str]]:
    code = cli.main([str(a) for a in args])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, [line for line in captured.err.splitlines() if line.strip()]


def assert_every_command_refuses(capsys, tmp_path, trace: str, *words: str) -> None:
    """info, export to every data format and a picture, and diff: exit 2, one line ``graphview: ...``
    holding ``words``, and nothing written (no output, no partial file)."""
    runs = [("info", trace), ("diff", trace, trace)]
    runs += [("export", trace, "-o", tmp_path / f"out.{suffix}") for suffix in EXPORTS]
    for args in runs:
        code, lines = cli_lines(capsys, *args)
        assert code == 2 and len(lines) == 1 and lines[0].startswith("graphview: "), (args, lines)
        for word in words:
            assert word in lines[0], (args, lines[0])
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("out.")]


def assert_every_command_reads(capsys, tmp_path, trace: str) -> dict:
    """info, the exports and diff read it (exit 0, no traceback, nothing partial left): {command: stdout}."""
    outputs = {}
    for args in [("info", trace), ("diff", trace, trace)] + [
            ("export", trace, "-o", tmp_path / f"out.{suffix}") for suffix in EXPORTS]:
        code = cli.main([str(a) for a in args])
        captured = capsys.readouterr()
        assert code == 0 and "Traceback" not in captured.err, (args, captured.err)
        outputs[args[0] if args[0] != "export" else args[-1].suffix] = captured.out
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    return outputs


def window_refuses(live_app, path: str, *words: str) -> str:
    before = live_app.window.run
    assert not live_app.open(path)
    assert live_app.window.run is before
    message = live_app.window.statusBar().message()
    assert "\n" not in message and path in message, message
    for word in words:
        assert word in message, message
    return message


def open_and_click(live_app, path: str, qtbot) -> dict[str, str]:
    """Open ``path`` in the window, wait until it is read whole, and click every node."""
    assert live_app.open(path)
    assert live_app.wait_idle()
    said = click_every_node(live_app.window, qtbot)
    assert said
    return said


def click_every_node(window, qtbot) -> dict[str, str]:
    """Click each node of the graph in the view (centred on it first); what the inspector says of each."""
    from PySide6.QtCore import Qt

    said = {}
    window.set_cursor(len(window.run.events) - 1)
    for node_id in list(window.scene.drawing.nodes):
        window.scene.reveal([node_id])
        item = window.scene.item_for(node_id)
        if item is None or not item.isVisible():
            continue
        window.view.centerOn(item)
        qtbot.mouseClick(window.view.viewport(), Qt.LeftButton,
                         pos=window.view.mapFromScene(item.sceneBoundingRect().center()))
        window.scene.select_node(node_id)  # (the click, even where another item lies on top of it)
        said[node_id] = window.inspector.toPlainText()
    return said


@pytest.mark.parametrize("number", [10**4000, 2**63, 2**53 + 1, -1])
def test_saved_bytes_out_of_range_are_refused_by_every_command(tmp_path, capsys, number):
    header, events = chain_rule()
    first(events, "saved")["bytes"] = number
    trace = write_lines(tmp_path / "bytes.gvtrace", header, events)
    with pytest.raises(TraceError, match=r"line \d+: saved event with a bad 'bytes' field .*out of range"):
        parse_trace(open(trace, "rb").read(), trace)
    assert_every_command_refuses(capsys, tmp_path, trace, "not a valid graphview trace", "'bytes'", "out of range")


def test_saved_bytes_that_add_up_past_2_53_are_refused(tmp_path, capsys):
    """Each within 2**53, but a thousand of them: the memory sums would overflow the model's int64 arrays."""
    header, events = chain_rule()
    at = events.index(first(events, "saved"))
    for sid in range(100, 1100):
        events.insert(at, {"ev": "saved", "sid": sid, "bytes": 2**52, "storage": f"s{sid}", "device": "cpu",
                           "kind": "activation", "shape": [], "dtype": "float32", "owner": None, "attr": None})
    trace = write_lines(tmp_path / "sum.gvtrace", header, events)
    assert_every_command_refuses(capsys, tmp_path, trace, "saved tensors add up to more than 2**53 bytes")


@pytest.mark.parametrize("field, number", [("tid", -3), ("tid", 2**64), ("version", -1), ("line", 2**60)])
def test_ids_and_counts_out_of_range_are_refused(tmp_path, capsys, field, number):
    header, events = chain_rule()
    first(events, "tensor")[field] = number
    trace = write_lines(tmp_path / "id.gvtrace", header, events)
    code, lines = cli_lines(capsys, "info", trace)
    assert code == 2 and f"tensor event with a bad '{field}' field" in lines[0] and "out of range" in lines[0]


def test_saved_bytes_of_2_63_never_reach_the_window(live_app, tmp_path):
    header, events = chain_rule()
    first(events, "saved")["bytes"] = 2**63
    window_refuses(live_app, write_lines(tmp_path / "bytes.gvtrace", header, events), "'bytes'", "out of range")


STATS = {"min": -1.0, "max": 2.0, "mean": 0.5, "norm": 3.0, "numel": 100, "nan": 0, "inf": 0, "hist": [10, 80, 10]}


@pytest.mark.parametrize("change", [{"min": "nan"}, {"max": "inf"}, {"min": None}, {"min": 3.0}],
                         ids=["min-nan", "max-inf", "no-min", "min-above-max"])
def test_a_histogram_needs_a_finite_min_and_max(tmp_path, capsys, live_app, change):
    header, events = chain_rule()
    tensor = first(events, "tensor", tid=1)
    tensor.pop("values")
    tensor["shape"] = [100]
    tensor["stats"] = {**STATS, **change}
    if change.get("min", 0) is None:
        del tensor["stats"]["min"]
    trace = write_lines(tmp_path / "hist.gvtrace", header, events)
    assert_every_command_refuses(capsys, tmp_path, trace, "stats.hist without a finite min and max")
    window_refuses(live_app, trace, "stats.hist")


def test_statistics_of_nan_without_a_histogram_open_and_show(tmp_path, capsys, live_app, qtbot):
    """What the recorder writes for a tensor holding NaN: min "nan" and no histogram. Read, and clicked."""
    header, events = chain_rule()
    tensor = first(events, "tensor", tid=1)
    tensor.pop("values")
    tensor["shape"] = [100]
    tensor["stats"] = {"min": "nan", "max": "nan", "mean": "nan", "norm": "nan", "numel": 100, "nan": 100, "inf": 0}
    trace = write_lines(tmp_path / "nan.gvtrace", header, events)
    assert_every_command_reads(capsys, tmp_path, trace)
    said = open_and_click(live_app, trace, qtbot)
    assert any("nan=100" in text for text in said.values())


@pytest.mark.parametrize("argv", [3, [1, 2], "train.py", [None]])
def test_a_header_argv_that_is_not_a_list_of_strings_is_refused(tmp_path, capsys, live_app, argv):
    header, events = chain_rule()
    header["argv"] = argv
    first(events, "run_start").pop("argv", None)  # the header's is the one read
    trace = write_lines(tmp_path / "argv.gvtrace", header, events)
    assert_every_command_refuses(capsys, tmp_path, trace, "its header has a bad 'argv' field")
    window_refuses(live_app, trace, "'argv'")


@pytest.mark.parametrize("field, value", [("rank", -1), ("rank", "0"), ("world_size", 2**70), ("script", 7),
                                          ("origin", ["x"])])
def test_other_header_fields_are_checked_too(tmp_path, capsys, field, value):
    header, events = chain_rule()
    header[field] = value
    trace = write_lines(tmp_path / "header.gvtrace", header, events)
    code, lines = cli_lines(capsys, "info", trace)
    assert code == 2 and lines == [f"graphview: {trace} is not a valid graphview trace: its header has a bad "
                                   f"'{field}' field"]


def test_a_node_introduced_again_with_an_edge_to_itself_is_refused(tmp_path, capsys, live_app):
    header, events = chain_rule()
    node = first(events, "node", name="AddBackward0")
    again = {**node, "next": [[node["vid"], 0]]}
    events.insert(events.index(node) + 1, again)
    trace = write_lines(tmp_path / "loop.gvtrace", header, events)
    assert_every_command_refuses(capsys, tmp_path, trace, f"node event introduces vid {node['vid']} again")
    window_refuses(live_app, trace, "again")


def test_a_graph_with_a_cycle_is_drawn_without_recursion(tmp_path):
    """Past the reader (a run built from events directly): a node whose edge leads to itself, and a
    leaf whose AccumulateGrad is its grad_fn. The drawing walks its chains with stacks of its own."""
    from graphview.core.drawing import Drawing

    _, events = chain_rule()
    node = first(events, "node", name="AddBackward0")
    events.insert(events.index(node) + 1, {**node, "next": [[node["vid"], 0], *node["next"]]})
    accumulate = first(events, "node", name="torch::autograd::AccumulateGrad")
    leaf = first(events, "tensor", tid=accumulate["leaf"])
    events.insert(events.index(accumulate) + 1, {**leaf, "version": 1, "grad_fn": accumulate["vid"]})
    run = Run(events)
    drawing = Drawing(run)
    drawing.update(final=True)
    assert drawing.nodes and all(n.placed for n in drawing.nodes.values())
    data = graph_data(run, None)
    to_dot(data)
    to_graphml(data)
    diagnose(run)


def test_a_chain_longer_than_the_interpreters_stack_is_drawn(tmp_path, capsys):
    """Three thousand views of views of an unnamed input, made before any step: each waits for its
    first user, and then goes above it, each above the next (a walk as long as the trace likes: it
    ran out of Python's stack when it recursed). A valid trace: every command reads it."""
    from graphview.core.drawing import Drawing

    n = 3000

    def tensor(tid, **fields):
        return {"ev": "tensor", "tid": tid, "version": 0, "name": None, "kind": "input", "shape": [],
                "dtype": "float32", "device": "cpu", "requires_grad": False, "is_leaf": True, "grad_fn": None,
                "base": None, "line": 1, "values": [1.0], **fields}

    def op(oid, op_name, inputs, outputs, grad_fn=None):
        return {"ev": "op", "oid": oid, "op": op_name, "line": 1, "module": None, "inputs": inputs,
                "outputs": outputs, "grad_fn": grad_fn, "mode": "grad", "inplace": False}

    header, recorded = chain_rule()
    events = [first(recorded, "run_start"), tensor(1), op(1, "zeros", [], [[1, 0]])]
    for tid in range(2, n):
        events += [tensor(tid, base=tid - 1), op(tid, "view", [[tid - 1, 0]], [[tid, 0]])]
    events += [tensor(n, name="w", kind="param", requires_grad=True),
               {"ev": "node", "vid": 1, "name": "MulBackward0", "next": [], "seq": 1, "leaf": None, "custom": False},
               tensor(n + 1, kind="activation", requires_grad=True, is_leaf=False, grad_fn=1),
               op(n, "mul", [[n - 1, 0], [n, 0]], [[n + 1, 0]], grad_fn=1),
               {"ev": "run_end", "status": "ok", "exit_code": 0, "message": ""}]
    path = write_lines(tmp_path / "chain.gvtrace", header, events)
    run = Run(parse_trace(open(path, "rb").read(), path).events)
    drawing = Drawing(run)
    drawing.update(final=True)
    assert len(drawing.nodes) == n + 2 and all(node.placed for node in drawing.nodes.values())  # (and the op)
    code, lines = cli_lines(capsys, "export", path, "-o", tmp_path / "chain.svg")
    assert code == 0 and (tmp_path / "chain.svg").stat().st_size > 0, lines


def test_lone_surrogates_are_replaced_where_the_trace_is_read(tmp_path, capsys, live_app, qtbot):
    """A name, a node's name and a module path holding half a UTF-16 pair (JSON's "\\ud800"), escaped
    or as the bytes UTF-8 would have: read as U+FFFD, so every command prints and writes them (the
    GraphML is XML, no DOT is left partial) and the window shows them."""
    import xml.etree.ElementTree as ElementTree

    header, events = chain_rule()
    first(events, "name", tid=1)["name"] = "x\ud800y"
    first(events, "node", name="MulBackward0")["name"] = "Mul\udfffBackward0"
    first(events, "op", op="mul")["module"] = "enc\udc00der"
    header["argv"] = first(events, "run_start")["argv"] = ["run.py", "--tag=\ud83d"]
    trace = write_lines(tmp_path / "halves.gvtrace", header, events)
    half = "Mul\udfffBackward0".encode("utf-8", "surrogatepass")  # (the bytes UTF-8 would give it)
    raw = open(trace, "rb").read().replace(b"Mul\\udfffBackward0", half)
    open(trace, "wb").write(raw)
    run = Run(parse_trace(raw, trace).events)
    assert run.tensor_name(1) == "x\ufffdy"
    assert any(node.name == "Mul\ufffdBackward0" for node in run.op_nodes.values())
    out = assert_every_command_reads(capsys, tmp_path, trace)
    assert "x\ufffdy" in out["info"] and "--tag=\ufffd" in out["info"]
    ElementTree.parse(tmp_path / "out.graphml")
    assert "x\ufffdy" in (tmp_path / "out.dot").read_text(encoding="utf-8")
    said = open_and_click(live_app, trace, qtbot)
    assert any("x\ufffdy" in text for text in said.values())


def test_names_of_ten_mebibytes_are_cut_where_the_trace_is_read(tmp_path, capsys, live_app, qtbot):
    """Three 10 MiB names (a tensor's, a node's, a module's): each is cut to a few KiB with a visible
    mark, so drawing and exporting take what a normal trace takes, and clicking the node shows it."""
    from graphview.core.events import CUT_MARK, STRING_CAP

    header, events = chain_rule()
    huge = 10 << 20
    first(events, "name", tid=1)["name"] = "x" * huge
    first(events, "node", name="MulBackward0")["name"] = "M" * huge
    first(events, "op", op="mul")["module"] = "m" * huge
    trace = write_lines(tmp_path / "long.gvtrace", header, events)
    run = Run(parse_trace(open(trace, "rb").read(), trace).events)
    assert run.tensor_name(1) == "x" * STRING_CAP + CUT_MARK
    assert max(len(node.name) for node in run.op_nodes.values()) == STRING_CAP + len(CUT_MARK)
    out = assert_every_command_reads(capsys, tmp_path, trace)
    assert CUT_MARK in out["info"]
    for suffix in EXPORTS:  # each name at most a few times, cut
        assert (tmp_path / f"out.{suffix}").stat().st_size < 200 * STRING_CAP
    said = open_and_click(live_app, trace, qtbot)
    assert any("x" * 100 in text and CUT_MARK in text for text in said.values()), {k: v[:300] for k, v in said.items()}
    assert max(map(len, said.values())) < 20 * STRING_CAP


def test_free_text_keeps_more_but_is_capped_too(tmp_path):
    from graphview.core.events import CUT_MARK, OUTPUT_CAP, TEXT_CAP

    header, events = chain_rule()
    first(events, "stdout")["text"] = "o" * (OUTPUT_CAP + 10)
    events.insert(-1, {"ev": "error", "type": "E" * 9000, "message": "m" * (TEXT_CAP + 1), "traceback": [],
                       "line": None, "vid": None, "bid": None})
    trace = write_lines(tmp_path / "text.gvtrace", header, events)
    run = Run(parse_trace(open(trace, "rb").read(), trace).events)
    assert run.stdout[0][2] == "o" * OUTPUT_CAP + CUT_MARK
    error = run.errors[0][1]
    assert error["message"] == "m" * TEXT_CAP + CUT_MARK and error["type"].endswith(CUT_MARK)


def test_a_line_over_the_cap_ends_the_trace_there_with_its_line_number(tmp_path, capsys, live_app):
    from graphview.core.trace import LINE_CAP

    header, events = chain_rule()
    lines = [json.dumps(header)] + [json.dumps(e) for e in events]
    at = 10
    long = '{"ev": "stdout", "text": "' + "x" * (LINE_CAP + 1) + '"}'
    path = tmp_path / "long_line.gvtrace"
    path.write_text("\n".join(lines[:at] + [long] + lines[at:]) + "\n", encoding="utf-8")
    code = cli.main(["info", str(path)])
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err
    warning = f"{path}: line {at + 1} is longer than {LINE_CAP >> 20} MiB, longer than any event graphview writes; " \
              f"opened the {at - 1} events before it"
    assert f"graphview: warning: {warning}" in err.splitlines()
    assert live_app.open(str(path))
    live_app.wait_idle()
    assert len(live_app.window.run.events) == at - 1


def test_a_line_over_the_cap_is_never_read_whole(tmp_path, monkeypatch):
    """The reader holds at most the cap of a line and a piece: a line of 8 MiB against a cap of 64 KiB,
    read in the window's pieces of 16 KiB."""
    import tracemalloc

    from graphview.core import trace_pieces
    from graphview.core.trace_pieces import TracePieces

    monkeypatch.setattr(trace_pieces, "LINE_CAP", 64 << 10)
    header, events = chain_rule()
    path = tmp_path / "long_line.gvtrace"
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(header) + "\n" + json.dumps(events[0]) + "\n")
        f.write('{"ev": "stdout", "text": "' + "x" * (8 << 20) + '"}\n')
    tracemalloc.start()
    try:
        trace = TracePieces(path, piece_bytes=16 << 10).read_all()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(trace.events) == 1 and "line 3 is longer than" in trace.warnings[0]
    assert peak < 1 << 20


def test_a_first_line_over_the_cap_is_no_trace(tmp_path, capsys):
    from graphview.core import trace_pieces

    path = tmp_path / "zeros.gvtrace"
    with open(path, "wb") as f:
        f.truncate(trace_pieces.LINE_CAP + 100)  # zero bytes, no newline
    code, lines = cli_lines(capsys, "info", path)
    assert code == 2 and lines == [f"graphview: {path} is not a graphview trace (its first line is longer than "
                                   f"{trace_pieces.LINE_CAP >> 20} MiB, longer than any trace header)"]


def graphview_process(*args, timeout: float = 60) -> subprocess.CompletedProcess:
    from tests.conftest import ROOT

    code = "import sys; from graphview.app.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_a_fifo_named_as_a_trace_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "x.gvtrace"
    os.mkfifo(fifo)
    for args in (("info", fifo), ("export", fifo, "-o", tmp_path / "g.json"), ("diff", fifo, fifo),
                 ("check", fifo)):
        done = graphview_process(*args)  # (a process: if it waited for a writer, the timeout ends it)
        assert done.returncode == 2 and done.stderr.splitlines() == [
            f"graphview: {fifo} is a FIFO, not a trace file: graphview reads traces only from regular files"], args


def test_a_link_to_dev_zero_is_refused_without_reading(tmp_path):
    link = tmp_path / "zero.gvtrace"
    os.symlink("/dev/zero", link)
    done = graphview_process("info", link)
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"graphview: {link} is a character device, not a trace file: graphview reads traces only from regular files"]


def test_the_window_refuses_a_fifo_and_a_device(tmp_path, live_app):
    import threading

    fifo = tmp_path / "x.gvtrace"
    os.mkfifo(fifo)

    def unblock():  # if opening the FIFO waited for a writer, this one comes (and the test fails, not hangs)
        if not done.wait(20):
            with open(fifo, "wb"):
                pass

    done = threading.Event()
    threading.Thread(target=unblock, daemon=True).start()
    try:
        window_refuses(live_app, str(fifo), "is a FIFO")
    finally:
        done.set()
    link = tmp_path / "zero.gvtrace"
    os.symlink("/dev/zero", link)
    window_refuses(live_app, str(link), "is a character device")


def test_info_into_a_pipe_closed_early_ends_quietly():
    """graphview info TRACE | head: the reader leaves; graphview stops without a traceback."""
    import tempfile

    from tests.conftest import ROOT

    lines = recordings()[1]
    with tempfile.TemporaryDirectory() as folder:
        trace = os.path.join(folder, "t.gvtrace")
        with open(trace, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        code = "import sys; from graphview.app.cli import main; sys.exit(main(sys.argv[1:]))"
        process = subprocess.Popen([sys.executable, "-c", code, "info", trace], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, cwd=ROOT)
        process.stdout.close()  # the reader is gone before the first line
        err = process.stderr.read().decode()
        assert process.wait(timeout=60) == cli.EXIT_BROKEN_PIPE
        assert err == ""


def test_opening_a_trace_while_a_node_is_selected(tmp_path, live_app, qtbot):
    """The selected node's item goes with the run it belongs to, and nothing looks for it after."""
    header, events = chain_rule()
    trace = write_lines(tmp_path / "plain.gvtrace", header, events)
    open_and_click(live_app, trace, qtbot)
    assert live_app.window.scene.selectedItems()
    open_and_click(live_app, trace, qtbot)
