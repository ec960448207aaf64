"""A tensor's value at an event (:mod:`graphview.core.queries.values`), against what torch itself
held (its version at an event: tests/qt/test_panel_layout.py, with the Inspector that shows it)."""

from __future__ import annotations

import pytest

from tests.conftest import model


def test_value_at_shows_parameters_as_the_optimizer_changed_them(record):
    keep: dict = {}
    run = record(model("mlp_optimizer"), keep=keep, steps=3)
    tid = run.tensor_by_name("model.2.bias")
    values = [run.value_at(tid, step["end"]) for step in run.steps]
    final = keep["model"][2].bias.detach()
    assert values[-1]["values"] == pytest.approx(final.tolist(), rel=1e-6)
    # SGD moved the bias in every step: no two steps end with the same value
    assert len({tuple(v["values"]) for v in values}) == 3
