"""A trace bigger than one piece is shown while it is read, and reading can be cancelled."""

from __future__ import annotations

from graphview.core.trace import read_trace, write_trace
from tests.conftest import model


def big_trace(tmp_path, record):
    path = tmp_path / "big.gvtrace"
    write_trace(str(path), record(model("mlp_optimizer"), steps=40).events)
    return path


def test_a_big_trace_is_read_on_and_ends_as_the_whole_file_would(app, tmp_path, record, monkeypatch):
    from graphview.core import trace_pieces

    monkeypatch.setattr(trace_pieces, "PIECE_BYTES", 20000)  # the first piece: a small part of the file
    monkeypatch.setattr("graphview.app.trace_load.SLICE_BYTES", 20000)
    path = big_trace(tmp_path, record)
    whole = read_trace(str(path))
    assert app.open(str(path))
    window = app.window
    assert 0 < len(window.run.events) < len(whole.events)  # shown before the whole file was read
    assert window.progress.isVisibleTo(window) and window.progress.cancel.isVisibleTo(window)
    assert "reading big.gvtrace" in window.progress.text()
    app.wait_idle(120)
    assert window.run.events == whole.events and window.run.end is not None
    assert not window.progress.isVisibleTo(window)
    assert window.cursor == 0 and "run ok" in window.status_label.text()


def test_cancel_keeps_what_was_read(app, tmp_path, record, monkeypatch, qtbot):
    from graphview.core import trace_pieces

    monkeypatch.setattr(trace_pieces, "PIECE_BYTES", 20000)
    monkeypatch.setattr("graphview.app.trace_load.SLICE_BYTES", 4000)
    path = big_trace(tmp_path, record)
    whole = read_trace(str(path))
    assert app.open(str(path))
    window = app.window
    window.progress.cancel.click()
    app.wait_idle(60)
    kept = len(window.run.events)
    assert 0 < kept < len(whole.events) and window.run.events == whole.events[:kept]
    assert "stopped reading big.gvtrace" in window.statusBar().message()
    window.set_cursor(kept - 1)  # what was read can be stepped through
    assert window.cursor == kept - 1 and any(i.isVisible() for i in window.scene.node_items.values())
