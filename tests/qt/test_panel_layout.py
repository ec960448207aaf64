"""Panels fit the room they are shown in: the inspector's histogram, the memory chart's title."""

from __future__ import annotations

import pytest

from graphview.core.run import Run
from graphview.qt.panels.inspector import Inspector
from tests.conftest import lesson, model


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


def test_the_memory_chart_fits_its_panel_when_a_run_comes_before_its_first_layout(qtbot, record):
    """`graphview script.py` opens the run before the window is laid out: the title was wrapped for
    a plot without its byte axis, and the chart stayed wider than its panel, cut off at the right."""
    from graphview.qt.panels.memory import MemoryChart

    run = record(model("mlp_optimizer"))
    chart = MemoryChart()
    qtbot.addWidget(chart)
    chart.resize(306, 240)
    chart.show()
    chart.set_run(Run())  # as the window shows a run starting: no events, no axes, "waiting"
    qtbot.waitExposed(chart)
    qtbot.wait(20)
    chart.show_run(run, "cpu")  # its events came: the axes are shown, the peak is the title
    qtbot.waitExposed(chart)
    qtbot.wait(50)
    assert chart.getAxis("left").isVisible()
    assert chart.centralWidget.geometry().width() <= chart.width()


def test_the_memory_charts_event_axis_reads_as_a_count():
    """The chart's event axis writes 500k and 1.5M, not pyqtgraph's 1e+06."""
    from graphview.qt.panels.memory import EventAxis, event_count

    assert [event_count(v) for v in (0, 1500, 10_000, 250_000, 1_000_000, 1_500_000, 1_050_000, 1_150_000)] == \
        ["0", "1500", "10k", "250k", "1M", "1.5M", "1.05M", "1.15M"]
    assert EventAxis("bottom").tickStrings([0, 500_000, 1_000_000], 1.0, 500_000) == ["0", "500k", "1M"]


def test_the_memory_charts_event_axis_has_ticks_at_whole_events_alone(qtbot):
    """A run of 4 events (a script that failed at its first line) had ticks at 0.5, 1.5 and 2.5 too:
    "0 0 1 2 2 2 3" under its chart. Each tick is a whole event and says a number of its own."""
    from graphview.qt.panels.memory import EventAxis

    axis = EventAxis("bottom")
    for last, width in ((1, 220), (3, 220), (4, 300), (12, 220), (40, 220), (1_500_000, 300)):
        ticks = [value for spacing, values in axis.tickValues(0, last, width) for value in values]
        assert ticks and all(value == int(value) for value in ticks), last
        strings = [text for spacing, values in axis.tickValues(0, last, width)
                   for text in axis.tickStrings(values, 1.0, spacing)]
        assert len(strings) == len(set(strings)) == len(ticks), (last, strings)


def test_the_code_pane_shows_the_whole_current_line_when_it_wraps(qtbot):
    """A narrow pane wraps ``return nn.functional.cross_entropy(logits, targets)``: the current
    line is scrolled into view whole, not only its first row (its call was cut off at the bottom)."""
    from graphview.qt.panels import CodeView

    view = CodeView()
    qtbot.addWidget(view)
    view.resize(260, 200)
    view.show()
    lines = [f"x{i} = {i}" for i in range(40)]
    lines[30] = "    return nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))"
    view.set_source("\n".join(lines))
    view.highlight(31)
    block = view.document().findBlockByNumber(30)
    shown = view.blockBoundingGeometry(block).translated(view.contentOffset())
    assert block.layout().lineCount() > 1, "the line wraps"
    assert shown.top() >= 0 and shown.bottom() <= view.viewport().height()


def test_the_inspector_gives_a_parameters_version_at_the_cursor(record, qtbot):
    """SGD changes a weight in place at each step (torch counts each change in ``_version``): the
    Inspector says the version it had at the cursor, not the last one of the run."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    oracle = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD(oracle.parameters(), lr=0.1)
    expected = []
    for _ in range(3):
        optimizer.zero_grad()
        nn.functional.cross_entropy(oracle(torch.randn(32, 8)), torch.randint(0, 3, (32,))).backward()
        optimizer.step()
        expected.append(oracle[2].weight._version)
    run = record(model("mlp_optimizer"), steps=3)
    tid = run.tensor_by_name("model.2.weight")
    node = run._tensor_nodes_of[tid][0]
    after_each_step = [index for index, _ in run.optimizer_steps]
    assert [run.version_at(node, index) for index in after_each_step] == expected
    assert len(set(expected)) == 3  # (it changes: the last one shown everywhere was wrong twice)
    rows = dict(Inspector()._tensor_rows(run, node, after_each_step[0]))
    assert rows["version"] == str(expected[0])


def test_the_diagnostics_list_goes_above_its_details_when_narrow(qtbot):
    """At 1366x768 the Diagnostics tab is about 310 px wide: side by side, each finding's title was
    cut to 'suggestion: checkp'. Narrow, the list goes above the selected finding; wide, beside it."""
    from PySide6.QtCore import Qt

    from graphview.qt.panels import DiagnosticsPanel

    panel = DiagnosticsPanel()
    qtbot.addWidget(panel)
    panel.resize(310, 240)
    panel.show()
    qtbot.waitUntil(lambda: panel.orientation() == Qt.Vertical)
    assert panel.list.width() > 280
    panel.resize(900, 240)
    qtbot.waitUntil(lambda: panel.orientation() == Qt.Horizontal)


def test_a_run_with_no_pitfall_says_so_once_and_its_list_takes_the_room(qtbot, record):
    """The detail beside the list said "no autograd pitfalls found in this run" again, below the
    list's own line saying so: with nothing to read in full, the list alone takes the panel; a run
    with a pitfall gets the detail back, the finding in full."""
    from graphview.core.diagnostics import diagnose
    from graphview.qt.panels import DiagnosticsPanel
    from graphview.qt.panels.diagnostics import NONE_FOUND
    from tests.conftest import SAMPLES

    panel = DiagnosticsPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 240)
    panel.show()
    clean = diagnose(record(model("mlp_optimizer")))
    assert clean == []
    panel.show_findings(clean)
    lines = [panel.list.topLevelItem(i).text(0) for i in range(panel.list.topLevelItemCount())]
    assert lines == [NONE_FOUND]
    assert not panel.detail.isVisibleTo(panel)
    qtbot.waitUntil(lambda: panel.list.width() > 850)
    findings = diagnose(record(SAMPLES / "pitfalls" / "backward_twice.py"))
    assert findings
    panel.show_findings(findings)
    assert panel.detail.isVisibleTo(panel) and findings[0].explanation in panel.detail.toPlainText()


def test_the_memory_charts_red_dot_and_the_words_it_wears_say_the_same_bytes(qtbot, record):
    """The red dot sits on the top of the stack (all saved, weights included): the red ● in the
    title is on those words and bytes, not on the activations' own peak (a smaller figure: the dot
    read as marking 2.4 KiB where it stood at 3.8 KiB)."""
    import re

    from graphview.core.held import held_at
    from graphview.qt.formatting import human_bytes

    run = record(model("mlp_optimizer"))
    chart = _chart_showing(qtbot, run)
    (x,), (y,) = chart.peak.getData()
    held = held_at(run, int(x))
    assert y == held.total > held.activations  # the stack's top, weights in
    marked = re.search(r"●(?:&nbsp;| )([^<]*)</span>", chart._title_text).group(1).replace("&nbsp;", " ")
    assert marked == f"all saved {human_bytes(int(y))} at event {int(x)}"
    assert f"activations peak {human_bytes(max(held_at(run, i).activations for i in range(len(run.events))))}" \
        in chart._title_text


@pytest.mark.parametrize("script, words", [(lesson("chain_rule"), "inputs included"),
                                             (model("mlp_optimizer"), "weights and inputs included")])
def test_the_memory_charts_caption_names_what_the_stack_holds_besides_activations(qtbot, record, script, words):
    """The caption beside the red dot names what the stack at the peak holds besides activations, as
    that run holds it: the chain rule lesson's x (torch.tensor(2.0, requires_grad=True), no
    nn.Parameter) is an input, and its caption said "weights included" with no weight saved."""
    import re

    import torch

    from graphview.core.held import held_at

    kept: dict = {}
    run = record(script, keep=kept)
    chart = _chart_showing(qtbot, run)
    (x,), _ = chart.peak.getData()
    held = held_at(run, int(x))
    parameters = [value for value in kept.values() if isinstance(value, torch.nn.Parameter)] + [
        p for value in kept.values() if isinstance(value, torch.nn.Module) for p in value.parameters()]
    assert (held.weights > 0) == bool(parameters)  # a weight is a parameter the script has
    assert held.inputs > 0
    caption = re.search(r"at event \d+</span><span[^>]*>, ([^<]*) \(cpu\)</span>", chart._title_text).group(1)
    assert caption == words


def test_the_memory_charts_byte_axis_labels_a_tick_above_the_peak(qtbot, record):
    """The byte axis ends on a tick above the highest bar: its last label is not below the peak
    (the checkpointing sample's 42 KiB peak had 32 KiB as the axis's last label)."""
    run = record(model("checkpointing"))
    chart = _chart_showing(qtbot, run)
    peak = float(chart.peak.getData()[1][0])
    low, high = chart.getViewBox().viewRange()[1]
    step = chart.getAxis("left").tickSpacing(low, high, 0)[0][0]
    assert low == 0 and high > peak
    assert high / step == pytest.approx(round(high / step))  # the top is a tick: labelled
    assert high - peak < step  # and the first tick above the peak


def _chart_showing(qtbot, run):
    """A memory chart, 420x300 on screen, showing ``run``'s CPU bytes."""
    from graphview.qt.panels.memory import MemoryChart

    chart = MemoryChart()
    qtbot.addWidget(chart)
    chart.resize(420, 300)
    chart.show()
    chart.show_run(run, "cpu")
    return chart


def test_a_suggestion_reads_whole_in_the_diagnostics_tab_at_1366x768(qtbot, record, tmp_path):
    """At 1366x768 the Diagnostics tab is about 310x235 px: the list's row held the suggestion's
    whole text, wrapped taller than the list, so it showed cut mid-sentence, and the detail below
    had a third of the room. The row says what to checkpoint and what it saves, whole; the detail
    below, with most of the room, says the rest."""
    from PySide6.QtCore import Qt

    from graphview.core.diagnostics import diagnose
    from graphview.core.whatif import checkpoint_suggestions, human
    from graphview.qt.panels import DiagnosticsPanel

    two_layers = tmp_path / "two_layers.py"
    with open(model("transformer_block"), encoding="utf-8") as f:
        two_layers.write_text(f.read().replace("num_layers=1", "num_layers=2"), encoding="utf-8")
    run = record(two_layers, steps=2)
    suggestions = checkpoint_suggestions(run)
    assert suggestions and suggestions[0].pattern == "encoder.layers.*"
    panel = DiagnosticsPanel()
    qtbot.addWidget(panel)
    panel.resize(310, 235)
    panel.show()
    panel.set_suggestions(suggestions, [])
    panel.show_findings(diagnose(run))
    qtbot.waitUntil(lambda: panel.orientation() == Qt.Vertical)
    top = suggestions[0]
    [row] = [panel.list.topLevelItem(i) for i in range(panel.list.topLevelItemCount())
             if panel.list.topLevelItem(i).data(0, DiagnosticsPanel.SUGGESTION) is top]
    # what to checkpoint and what it saves: the rest is the detail's
    assert row.text(0).startswith(f"suggestion: checkpoint encoder.layers.* ({top.types}): peak of activations "
                                  f"−{human(top.saving)}") and len(row.text(0)) < 110
    panel.list.setCurrentItem(row)
    rect = panel.list.visualItemRect(row)
    assert rect.top() >= 0 and rect.bottom() <= panel.list.viewport().height()  # the row whole in sight
    assert top.text() in " ".join(panel.detail.toPlainText().split())  # the detail says it in full
    assert panel.detail.height() > panel.list.height()  # and has the larger share of the room
