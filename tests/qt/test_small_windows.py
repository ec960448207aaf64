"""The window at 1366x768 and smaller: the memory chart keeps a readable plot beside a what-if
summary, the legend never takes the canvas's room, every tab is in sight, lines wrap."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSize
from PySide6.QtWidgets import QLabel, QScrollBar

from graphview.core.options import RunOptions
from tests.conftest import model
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
    # the user's choice after that stays: a shorter dock is not grown back
    window.resizeDocks([window.bottom_dock], [160], __import__("PySide6.QtCore").QtCore.Qt.Vertical)
    settle(qtbot)
    assert tab.viewport().height() < chart.readable_height()


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
