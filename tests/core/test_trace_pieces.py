"""A trace read in pieces gives what reading it whole gives: the same events, warnings and refusals."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphview.core.events import CUT_MARK, SCHEMA_VERSION, STRING_CAP, may_hold_long_string, tidy_text
from graphview.core.records import RecordBuffer
from graphview.core.trace import TraceError, parse_trace
from graphview.core.trace_pieces import TracePieces
from tests.app.test_bad_traces import chain_rule, first, mutated


def whole_and_pieces(path, piece_bytes):
    data = path.read_bytes()
    try:
        whole = parse_trace(data, str(path))
    except TraceError as exc:
        whole = str(exc)
    try:
        reader = TracePieces(path, piece_bytes=piece_bytes)
        pieces = []
        while not reader.done:
            piece = reader.next_piece()
            pieces.append(piece)
        read = (reader.header, [e for p in pieces for e in p], reader.warnings)
    except TraceError as exc:
        read, pieces = str(exc), []
    return whole, read, pieces


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data(), piece_bytes=st.sampled_from([1, 300, 5000, 1 << 22]))
def test_pieces_read_what_the_whole_file_reads(tmp_path, data, piece_bytes):
    path = tmp_path / "t.gvtrace"
    path.write_bytes(data.draw(mutated()))
    whole, read, _ = whole_and_pieces(path, piece_bytes)
    if isinstance(whole, str):
        assert read == whole
    else:
        assert read == (whole.header, whole.events, whole.warnings)


def test_a_big_trace_comes_in_several_pieces(tmp_path, record):
    from graphview.core.trace import write_trace
    from tests.conftest import model

    path = tmp_path / "mlp.gvtrace"
    run = record(model("mlp_optimizer"))
    write_trace(str(path), run.events)
    whole, read, pieces = whole_and_pieces(path, 2000)
    assert len(pieces) > 5 and read == (whole.header, whole.events, whole.warnings) and not whole.warnings
    assert sum(map(len, pieces)) == len(run.events)


@pytest.mark.parametrize("text, reason", [("", "is empty"), ("\n\n", "is empty"),
                                          ("{}\n", "no 'graphview-trace' header"),
                                          ("nope\n", "its first line is not a trace header")])
def test_a_file_that_is_no_trace_is_refused_on_opening(tmp_path, text, reason):
    path = tmp_path / "t.gvtrace"
    path.write_text(text)
    with pytest.raises(TraceError, match=reason):
        TracePieces(path)
    with pytest.raises(TraceError, match="no such file"):
        TracePieces(tmp_path / "missing.gvtrace")


def _longest_string(value) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max([0] + [max(len(k), _longest_string(v)) for k, v in value.items()])
    if isinstance(value, list):
        return max([0] + [_longest_string(v) for v in value])
    return 0


@pytest.mark.parametrize("value, may", [
    ([["tensor", i, f"t{i}", [8, 16]] for i in range(2000)], False),  # a long line of short strings
    ({"a": "x" * (STRING_CAP + 1)}, True),  # one long string
    ({"a": 'say "' + "x" * STRING_CAP + '"'}, True),  # a long string split by its escaped quotes
    ({"x" * (STRING_CAP + 5): 1}, True),  # a long key
    ({"a": "\\" * (STRING_CAP // 2 + 1)}, True),  # backslashes: long in JSON only (looked at: harmless)
    (["é" * (STRING_CAP // 2 + 1)], True),  # \u escapes: six bytes a character, likewise
])
def test_a_line_may_hold_a_long_string_only_where_a_decoded_one_is(value, may):
    line = json.dumps(value).encode()
    assert len(line) > STRING_CAP and may_hold_long_string(line) == may
    assert may or _longest_string(json.loads(line)) <= STRING_CAP  # never misses one


def test_a_record_with_a_long_string_among_escaped_quotes_is_cut_where_it_is_read(tmp_path):
    header, events = chain_rule()
    header["version"] = SCHEMA_VERSION
    name = first(events, "name", tid=1)
    name["name"] = '"quoted" ' * STRING_CAP  # (no stretch of its JSON text between quotes is long)
    buffer = RecordBuffer()
    for event in events:
        buffer.add(dict(event))
    path = tmp_path / "long.gvtrace"
    path.write_text(json.dumps(header) + "\n" + buffer.take())
    read = TracePieces(path).read_all().events
    assert name["name"] != tidy_text(name["name"]) and tidy_text(name["name"]).endswith(CUT_MARK)
    name["name"] = tidy_text(name["name"])
    assert read == events
