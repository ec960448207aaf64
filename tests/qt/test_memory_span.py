"""The memory chart's areas are stacked: the activations' peak is marked at its height on the stack,
and the tooltip says the areas are stacked (a GPT-2's chart said "activations peak 545.3 KiB" above
a blue area that topped out near 950 KiB, the weights under it, and nothing said why)."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QTextDocument

from graphview.core.held import held_at
from graphview.core.run import Run
from graphview.qt.formatting import human_bytes
from tests.conftest import model, record_each

MLP = model("mlp_optimizer")


@pytest.fixture(scope="module")
def run():
    return Run(record_each([MLP])[MLP])


def test_the_activations_peak_is_a_bar_as_tall_as_the_headlines_figure_on_top_of_the_weights(qtbot, run):
    from graphview.qt.panels.memory import MemoryChart

    chart = MemoryChart()
    qtbot.addWidget(chart)
    chart.resize(310, 260)
    chart.show()
    chart.show_run(run, "cpu")
    held = [held_at(run, i, "cpu") for i in range(len(run.events))]
    peak = max(h.activations for h in held)
    event = next(i for i, h in enumerate(held) if h.activations == peak)
    xs, ys = chart.span.line.getData()
    assert list(xs) == [event, event]
    # from the weights' and inputs' top to the stack's top: the activations' own bytes, no more
    assert list(ys) == [held[event].weights + held[event].inputs, held[event].total]
    assert ys[1] - ys[0] == peak and held[event].weights > 0  # (stacked on weights: the bar starts above 0)
    assert f"activations peak {human_bytes(peak)}" in chart._title_text
    tip = QTextDocument()
    tip.setHtml(chart.toolTip())
    text = tip.toPlainText()
    assert "The areas are stacked" in text and "marks the activations' peak" in text, text
    chart.set_run(Run())  # a new run: no bar until it has a peak
    assert chart.span.shown is None and len(chart.span.line.getData()[0]) == 0
