"""Trace files: round trip, truncation, damage, foreign files and versions."""

from __future__ import annotations

import json

import pytest

from graphview.core.trace import SUFFIX, TraceError, read_trace, write_trace

EVENTS = [
    {"ev": "run_start", "script": "s.py", "mode": "plain", "torch": "2.13.0", "python": "3.11.7", "devices": ["cpu"],
     "options": {}, "notes": [], "source": "x = torch.ones(2)\n"},
    {"ev": "tensor", "tid": 1, "version": 0, "name": "x", "kind": "input", "shape": [2], "dtype": "float32",
     "device": "cpu", "requires_grad": False, "is_leaf": True, "grad_fn": None, "base": None, "line": 1,
     "values": [1.0, 2.0]},
    {"ev": "run_end", "status": "ok", "exit_code": 0, "message": ""},
]


def test_round_trip(tmp_path):
    path = tmp_path / f"run{SUFFIX}"
    write_trace(path, EVENTS)
    trace = read_trace(path)
    assert trace.events == EVENTS and trace.warnings == []
    assert trace.header["format"] == "graphview-trace" and trace.header["version"] == 3


def test_truncated_file_opens_up_to_last_complete_event(tmp_path):
    path = tmp_path / f"run{SUFFIX}"
    write_trace(path, EVENTS)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 20])  # cut inside the last event
    trace = read_trace(path)
    assert trace.events == EVENTS[:2]
    assert any("incomplete event" in w for w in trace.warnings)


def test_missing_run_end_warns(tmp_path):
    path = tmp_path / f"run{SUFFIX}"
    write_trace(path, EVENTS[:2])
    trace = read_trace(path)
    assert trace.events == EVENTS[:2]
    assert any("stopped before the script ended" in w for w in trace.warnings)


def test_damaged_line_in_the_middle(tmp_path):
    path = tmp_path / f"run{SUFFIX}"
    write_trace(path, EVENTS)
    lines = path.read_text().splitlines()
    lines[2] = "{not json"
    path.write_text("\n".join(lines) + "\n")
    trace = read_trace(path)
    assert trace.events == EVENTS[:1]
    assert any("damaged at line 3" in w for w in trace.warnings)


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00binary", "not a graphview trace"),
        (b'{"hello": "world"}\n', "not a graphview trace"),
        (b"import torch\nprint(1)\n", "not a graphview trace"),
        (json.dumps({"format": "graphview-trace", "version": 99}).encode() + b"\n", "version 99"),
    ],
)
def test_foreign_or_future_files_are_refused_with_a_reason(tmp_path, content, reason):
    path = tmp_path / "x.gvtrace"
    path.write_bytes(content)
    with pytest.raises(TraceError, match=reason):
        read_trace(path)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        read_trace(tmp_path / "nope.gvtrace")
    with pytest.raises(TraceError, match="folder"):
        read_trace(tmp_path)


def test_opening_never_executes_code(tmp_path):
    """A trace is JSON: a value that looks like code stays a string."""
    path = tmp_path / "x.gvtrace"
    write_trace(path, [{"ev": "stdout", "text": "__import__('os').system('touch pwned')"}])
    trace = read_trace(path)
    assert trace.events[0]["text"].startswith("__import__")
    assert not (tmp_path / "pwned").exists()


def _trace_with(tmp_path, event: str) -> str:
    path = tmp_path / "bad.gvtrace"
    lines = [json.dumps({"format": "graphview-trace", "version": 1})] + [json.dumps(e) for e in EVENTS[:2]]
    path.write_text("\n".join(lines + [event]) + "\n")
    return str(path)


@pytest.mark.parametrize("event, reason", [
    ('{"ev": "value", "version": 1, "shape": []}', "line 4: value event without its 'tid' field"),
    ('{"ev": "op", "oid": 1, "op": "mul", "line": 3, "module": null, "inputs": [1, 2], "outputs": [], '
     '"grad_fn": null, "mode": "grad", "inplace": false}', "line 4: op event with a bad 'inputs' field ([1, 2])"),
    ('{"ev": "name", "tid": 7, "name": "y"}', "line 4: name event refers to tid 7, which no earlier event introduced"),
    ('{"ev": "tensor_grad", "bid": null, "tid": 1, "grad": {"shape": [2], "values": [1.0]}}',
     "line 4: tensor_grad event with a bad 'grad' field"),
    ('{"ev": "teleport", "to": 3}', "line 4: unknown kind of event 'teleport'"),
    ("[" * 100_000 + "]" * 100_000, "line 4 nests deeper than any event"),
    ('{"ev": "step_end", "step": 1, "result": ' + '{"a": ' * 40 + "1" + "}" * 41, "line 4: step_end event with a bad 'result'"),
])
def test_an_event_breaking_the_schema_refuses_the_trace_with_its_line_and_field(tmp_path, event, reason):
    with pytest.raises(TraceError) as raised:
        read_trace(_trace_with(tmp_path, event))
    assert reason in str(raised.value) and "\n" not in str(raised.value)


def test_bad_run_options_are_refused(tmp_path):
    start = dict(EVENTS[0], options=["retain_graph"])
    path = tmp_path / "bad.gvtrace"
    write_trace(path, [start])
    with pytest.raises(TraceError, match="line 2: run_start event with a bad 'options' field"):
        read_trace(path)
