"""The window at 1366x768 and smaller: the memory chart keeps a readable plot beside a what-if
summary, the legend never takes the canvas's room, every tab is in sight, lines wrap."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QLabel, QScrollBar

from graphview.core import timeline
from graphview.core.options import RunOptions
from tests.conftest import model, zoo
from tests.qt.window_geometry import rect_in, settle

TRANSFORMER = model("transformer_block")


def show_rerun(window, qtbot, record, size: tuple[int, int]):
    """The transformer sample, then its re-run with every layer checkpointed, as the window shows them."""
    window.resize(*size)
    first = record(TRANSFORMER)
    window.begin_run(first.start["script"], RunOptions(), first)
    settle(qtbot)
    window.runs.note_rerun(RunOptions(checkpoint=["encoder.layers.*"]))
    second = record(TRANSFORMER, checkpoint=["encoder.layers.*"])
    window.begin_run(second.start["script"], RunOptions(checkpoint=["encoder.layers.*"]), second)
    window.bottom_tabs.setCurrentWidget(window.memory_tab)
    qtbot.waitUntil(lambda: window.whatif.isVisibleTo(window), timeout=30000)
    settle(qtbot, 15)
    return window


def test_at_1366x768_the_chart_keeps_a_readable_plot_with_what_changed_below_it(window, record, qtbot):
    """The summary of a re-run went below the chart unscrolled and squeezed it to a strip 20 px
    tall, its byte axis's labels on top of each other."""
    show_rerun(window, qtbot, record, (1366, 768))
    assert window.size() == QSize(1366, 768)
    chart, tab = window.memory, window.memory_tab
    assert not tab.wide  # the side column: the summary goes below the chart
    plot = chart.plotItem.vb.sceneBoundingRect()
    assert plot.height() >= chart.READABLE_PLOT, plot
    # the chart is wholly in sight, and so is the start of the summary below it
    port = rect_in(window, tab.viewport())
    assert port.contains(rect_in(window, chart)), (port, rect_in(window, chart))
    summary = rect_in(window, tab.summary_scroll)
    assert summary.top() >= rect_in(window, chart).bottom()
    assert port.intersected(summary).height() >= 40
    # a long summary scrolls in its own room; the chart does not move
    assert tab.summary_scroll.verticalScrollBar().maximum() >= 0
    # narrower still (a user drags the column), the chart keeps its height and the tab scrolls
    window.resizeDocks([window.bottom_dock], [160], __import__("PySide6.QtCore").QtCore.Qt.Vertical)
    settle(qtbot)
    assert chart.plotItem.vb.sceneBoundingRect().height() >= chart.READABLE_PLOT


@pytest.mark.parametrize("height", [700, 728])
def test_a_short_laptop_window_shows_the_whole_chart_with_its_event_axis(window, record, qtbot, height):
    """At 1366x768 less a taskbar the timeline views' half of the column was a little short of
    the chart's readable height: the tab scrolled, the event axis's title out of sight. The
    views take that room from the code pane once; a dock the user makes shorter stays so."""
    window.resize(1366, height)
    run = record(TRANSFORMER)
    window.begin_run(run.start["script"], RunOptions(), run)
    window.bottom_tabs.setCurrentWidget(window.memory_tab)
    settle(qtbot, 15)
    chart, tab = window.memory, window.memory_tab
    assert window.memory_tab.summary.isHidden() and not tab.wide
    assert tab.viewport().height() >= chart.readable_height()
    assert rect_in(window, tab.viewport()).contains(rect_in(window, chart))
    assert tab.verticalScrollBar().maximum() == 0
    # the user's choice after that stays: a shorter dock is not grown back, the memory tab shown again
    before = window.bottom_dock.height()
    window.resizeDocks([window.bottom_dock], [160], __import__("PySide6.QtCore").QtCore.Qt.Vertical)
    settle(qtbot)
    shorter = window.bottom_dock.height()
    assert shorter < before
    window.bottom_tabs.setCurrentWidget(window.ledger)
    settle(qtbot)
    window.bottom_tabs.setCurrentWidget(window.memory_tab)
    settle(qtbot)
    assert window.bottom_dock.height() == shorter


def test_a_wide_memory_tab_puts_the_summary_beside_the_chart(window, record, qtbot):
    show_rerun(window, qtbot, record, (1800, 1100))
    tab, chart = window.memory_tab, window.memory
    assert tab.wide
    beside = rect_in(window, tab.summary_scroll)
    assert beside.left() >= rect_in(window, chart).right()
    assert chart.plotItem.vb.sceneBoundingRect().height() >= chart.READABLE_PLOT


@pytest.mark.parametrize("size", [(800, 550), (640, 400)])
def test_the_legend_never_takes_the_canvas(window, record, qtbot, size):
    """At 800x550 every legend entry took six rows, at 640x400 thirteen, half the canvas: what does
    not fit the legend's share folds behind "+N more", which unfolds more of them when asked (and
    names the rest in its tooltip), never holding the window taller than it is."""
    run = record(TRANSFORMER)
    window.resize(1366, 768)
    window.begin_run(run.start["script"], RunOptions(), run)
    settle(qtbot)
    window.resize(*size)
    settle(qtbot)
    assert window.size() == QSize(*size), "the window cannot be made as small as asked"
    legend, port = window.legend, window.view.viewport()
    legend_rect, port_rect = rect_in(window, legend), rect_in(window, port)
    assert not legend_rect.intersects(port_rect)
    assert window.rect().contains(legend_rect)
    column = window.workspace.height()
    assert legend.height() <= column * legend.SHARE + 8, (legend.height(), column)
    assert port.height() >= 0.6 * column
    folded = legend.hidden_entries()
    assert folded > 0 and legend.more.isVisible() and f"+{folded} more" in legend.more.text()
    # every entry shown is whole, inside the legend
    for cell in legend.cells:
        if cell.isVisible():
            assert legend.rect().contains(rect_in(legend, cell))
    legend.more.click()
    settle(qtbot)
    unfolded = legend.hidden_entries()
    assert unfolded < folded and "less" in legend.more.text()
    assert window.size() == QSize(*size)
    assert legend.height() <= column * legend.EXPANDED_SHARE + 8
    assert not rect_in(window, legend).intersects(rect_in(window, port))
    if unfolded:
        hidden = [cell for cell in legend.cells if cell.isHidden()]
        assert all(cell.findChild(QLabel).text() in legend.more.toolTip() for cell in hidden)
    legend.more.click()
    settle(qtbot)
    assert legend.hidden_entries() == folded


def test_a_large_window_shows_the_whole_legend(window, record, qtbot):
    run = record(TRANSFORMER)
    window.resize(1800, 1100)
    window.begin_run(run.start["script"], RunOptions(), run)
    settle(qtbot)
    assert window.legend.hidden_entries() == 0 and not window.legend.more.isVisible()


def test_every_timeline_tab_is_in_sight_at_1366x768(window, record, qtbot):
    """The Grad ledger tab was cut off behind the tab bar's scroll arrows."""
    show_rerun(window, qtbot, record, (1366, 768))
    tabs = window.bottom_tabs
    bar = tabs.tabBar()
    assert not [b for b in bar.findChildren(QScrollBar)]
    for index in range(tabs.count()):
        assert bar.rect().contains(bar.tabRect(index)), (tabs.tabText(index), bar.tabRect(index), bar.rect())
    # the tab bar's scroll arrows are gone, not hidden behind the last tab
    assert not any(button.isVisible() for button in bar.findChildren(__import__("PySide6.QtWidgets").QtWidgets.QToolButton))


def test_ledger_and_diagnostics_lines_wrap_instead_of_scrolling_sideways(window, record, qtbot):
    show_rerun(window, qtbot, record, (1366, 768))
    window.set_cursor(len(window.run.events) - 1)
    for panel, tree in ((window.ledger, window.ledger), (window.diagnostics, window.diagnostics.list)):
        window.bottom_tabs.setCurrentWidget(panel)
        settle(qtbot)
        bar = tree.horizontalScrollBar()
        assert not bar.isVisible() and bar.maximum() == 0, panel
        header = tree.header()
        width = sum(header.sectionSize(c) for c in range(tree.columnCount()))
        assert width <= tree.viewport().width(), (panel, width, tree.viewport().width())
        # a long line takes several rows of text rather than running past its column
        items = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
        items += [item.child(k) for item in items for k in range(item.childCount())]
        line = tree.fontMetrics().height()
        longest = max(items, key=lambda item: tree.fontMetrics().horizontalAdvance(item.text(0)))
        if tree.fontMetrics().horizontalAdvance(longest.text(0)) > header.sectionSize(0):
            assert tree.visualItemRect(longest).height() >= 2 * line - 2, longest.text(0)


def title_lines(chart) -> int:
    """How many lines the memory chart's title takes, as laid out for the chart's width."""
    document = chart.plotItem.titleLabel.item.document()
    lines, block = 0, document.begin()
    while block.isValid():
        lines += block.layout().lineCount()
        block = block.next()
    return lines


def assert_title_reads(window) -> str:
    """The chart's title takes one or two lines, whole inside the chart; its tooltip says what it
    shortened. Returns the title as the chart shows it (plain text)."""
    from graphview.qt.formatting import human_bytes

    chart = window.memory
    label = chart.plotItem.titleLabel
    assert title_lines(chart) <= 2, (title_lines(chart), label.item.toPlainText())
    shown = label.item.toPlainText()
    assert "activations peak" in shown and "activations" in shown.split("peak", 1)[1]
    box = chart.mapFromScene(label.item.mapRectToScene(label.item.boundingRect())).boundingRect()
    assert chart.rect().contains(box), (box, chart.rect())
    (x,), (y,) = chart.peak.getData()
    tip = QTextDocument()
    tip.setHtml(chart.toolTip())
    assert f"all saved {human_bytes(int(y))} at event {int(x)}" in tip.toPlainText().replace("\xa0", " ")
    return shown


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_the_memory_charts_title_reads_on_one_or_two_lines(window, record, qtbot, size):
    """At 1366x768 the chart's title (the peak's headline and the legend) wrapped to six lines
    above a 310 px chart: "activations peak 2.4 KiB / all saved 3.8 KiB at event 49, / weights and
    inputs included / (cpu) activations / weights / inputs and constants". It takes the chart's
    whole width and at most two lines, the headline then the legend, each shortened to its line;
    the tooltip has the whole of it."""
    window.resize(*size)
    run = record(model("mlp_optimizer"))
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(next(i for i, e in enumerate(run.events) if e["ev"] == "backward_start"))
    window.bottom_tabs.setCurrentWidget(window.memory_tab)
    settle(qtbot, 12)
    shown = assert_title_reads(window)
    if size[0] >= 1920:  # a wide chart: all of it on one line
        assert title_lines(window.memory) == 1 and "weights and inputs included (cpu)" in shown, shown


def test_the_memory_charts_title_keeps_two_lines_with_an_earlier_run(window, record, qtbot):
    """A re-run adds the earlier run's dotted line to the legend: the title still takes two lines
    at 1366x768, the earlier run's key among them, its options in the tooltip."""
    show_rerun(window, qtbot, record, (1366, 768))
    shown = assert_title_reads(window)
    assert "┅ earlier" in shown  # (the earlier run's dotted line, named)
    tip = QTextDocument()
    tip.setHtml(window.memory.toolTip())
    assert "earlier run: default options" in tip.toPlainText().replace("\xa0", " ")  # (the first run's)


def plain(html: str) -> str:
    document = QTextDocument()
    document.setHtml(html)
    return document.toPlainText().replace("\xa0", " ")


@pytest.mark.parametrize("script,steps", [(zoo("t5_seq2seq"), 1), (TRANSFORMER, 2)])
def test_the_memory_charts_title_says_what_its_red_figure_is_at_any_width(window, record, qtbot, script, steps):
    """T5 (tests/zoo) six nodes into its first backward at 1366x768, as the README's picture: the
    title fell to its shortest headline, a bare red "● 294.9 KiB" under no words (its peak one digit
    longer than the transformer's). It takes two lines, every key of the legend in them; every form
    the title takes, at this width and at any width from 130 to 700 px, says "activations peak" and
    "all saved" beside their figures."""
    from graphview.qt.formatting import human_bytes
    from graphview.qt.panels import memory_title

    if "t5" in script:
        pytest.importorskip("transformers")
    window.resize(1366, 768)
    run = record(script, steps=steps)
    window.begin_run(run.start["script"], RunOptions(steps=steps), run)
    start = next(i for i, e in enumerate(run.events) if e["ev"] == "backward_start")
    window.set_cursor(start)
    for _ in range(6):
        window.move(timeline.next_backward_node)
    window.bottom_tabs.setCurrentWidget(window.memory_tab)
    settle(qtbot, 12)
    chart = window.memory
    (_,), (y,) = chart.peak.getData()
    saved = f"● all saved {human_bytes(int(y))}"
    activations = f"activations peak {human_bytes(int(chart.series.array('activation').max()))}"
    shown = chart.plotItem.titleLabel.item.toPlainText().replace("\xa0", " ")
    assert saved in shown and activations in shown, shown
    assert title_lines(chart) <= 2 and all(f"■ {key}" in shown for key in ("activations", "weights", "inputs")), shown
    font = chart.plotItem.titleLabel.item.font()
    for width in range(130, 701, 10):
        text = plain(memory_title.fit(chart._title_parts, width, font))
        assert saved in text and activations in text, (width, text)


def test_at_1366x768_what_changed_leaves_the_code_pane_half_the_column(window, record, qtbot):
    """A re-run's summary asked the column for the chart and 120 px of it: the timeline views took
    385 of the 637 px, leaving the code pane 10 rows. They take at most half now: the chart whole,
    the summary's first lines below it (it scrolls in its room), the code pane the other half."""
    show_rerun(window, qtbot, record, (1366, 768))
    code, bottom, tab = window.code_dock, window.bottom_dock, window.memory_tab
    column = code.height() + bottom.height()
    # (the tabs of the docks tabbed with the code pane are counted in its half: 306 of 637 px)
    assert code.height() >= 0.45 * column, (code.height(), bottom.height())
    port = rect_in(window, tab.viewport())
    assert port.contains(rect_in(window, window.memory))
    assert port.intersected(rect_in(window, tab.summary_scroll)).height() >= 40
