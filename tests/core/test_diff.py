"""Graph diff between steps (a dynamic model) and between runs (what a toggle removed)."""

from __future__ import annotations

from graphview.core.diff import describe, diff, step_index
from tests.conftest import model


def test_lstm_graph_changes_with_the_sequence_length(record):
    run = record(model("lstm_variable_steps"), steps=3)  # lengths 3, 5, 2
    grown = diff(run, step_index(run, 1), run, step_index(run, 2))
    shrunk = diff(run, step_index(run, 2), run, step_index(run, 3))
    assert grown.changed and not grown.removed and grown.added
    assert shrunk.removed and not shrunk.added
    # two more unrolled time steps: the LSTM cell's nodes appear twice more
    assert all(count % 2 == 0 for count in grown.added.values())
    assert all(count % 3 == 0 for count in shrunk.removed.values())


def test_detach_toggle_removes_the_first_layer(record):
    full = record(model("mlp_optimizer"))
    cut = record(model("mlp_optimizer"), detach_at=["model.1"])
    result = diff(full, None, cut, None)
    removed = {describe(sig) for sig in result.removed}
    assert "AccumulateGrad(model.0.weight)" in removed and "AccumulateGrad(model.0.bias)" in removed
    assert not result.added


def test_same_run_same_graph(record):
    run = record(model("mlp_optimizer"), steps=2)
    assert not diff(run, step_index(run, 1), run, step_index(run, 2)).changed

