"""The inspector's layout: a histogram sized for the panel it is shown in."""

from __future__ import annotations

from graphview.qt.panels.inspector import Inspector
from tests.conftest import model


def test_a_histogram_drawn_while_hidden_is_drawn_again_for_the_width_it_is_shown_at(qtbot, record):
    """A parameter selected while the inspector sits behind another tab was sized for a width it
    does not have once shown: the table came out too wide, its keys wrapped letter by letter."""
    run = record(model("mlp_optimizer"))
    param = next(n for n in run.tensor_nodes.values() if run.tensors.get(n.tid, {}).get("kind") == "param"
                 and "stats" in run.tensors[n.tid])
    inspector = Inspector()
    qtbot.addWidget(inspector)
    inspector.resize(700, 500)
    inspector.show_node(run, param.id, len(run.events) - 1)  # not shown yet: a stale width
    inspector.resize(300, 500)
    inspector.show()
    qtbot.waitExposed(inspector)
    image = inspector._images["value"]
    assert image.width() <= inspector.viewport().width() - inspector._key_width()
