"""A trace read in pieces gives what reading it whole gives: the same events, warnings and refusals."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphview.core.trace import TraceError, parse_trace
from graphview.core.trace_pieces import TracePieces
from tests.app.test_bad_traces import mutated


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
