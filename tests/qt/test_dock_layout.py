"""The docks as a user arranges and reads them: the run options' button in sight, a layout the
user made kept."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, QRect, Qt
from PySide6.QtGui import QColor, QMouseEvent, QPalette
from PySide6.QtWidgets import QApplication, QScrollArea, QStyle, QStyleOptionButton, QStyleOptionTab

from graphview.core.options import RunOptions
from graphview.qt import theme as themes
from tests.conftest import model
from tests.qt.window_geometry import rect_in, settle

TRANSFORMER = model("transformer_block")


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("size", [(1600, 1000), (1366, 768), (1920, 1080)])
def test_run_again_is_in_sight_in_the_run_options_dock_without_scrolling(window, record, qtbot, restore_theme,
                                                                         size, theme):
    """At 1600x1000 the run options' dock is 256 px tall and its form 333: "Run again" came last in
    the scrolled form, at 318-340 px, below the fold (at 1366x768 and 1920x1080 too). A user who
    changed an option did not see how to apply it. The button stays in the dock's sight; the form
    above it scrolls."""
    themes.apply(theme)
    window.resize(*size)
    run = record(model("mlp_optimizer"))
    window.begin_run(run.start["script"], RunOptions(), run)
    settle(qtbot)
    dock, button = window.toggles_dock, window.toggles.run_button
    dock.raise_()  # at 1366x768 a tab beside the code and the inspector
    settle(qtbot)
    assert window.size().width() == size[0] and window.size().height() == size[1]
    assert_in_sight(window, dock, button)


def assert_in_sight(window, dock, widget) -> None:
    """``widget`` is shown whole in ``dock``: within it, within every scroll area around it where
    it is scrolled now (nothing to scroll to see it), and the window shows it at its centre."""
    assert widget.isVisible() and not dock.visibleRegion().isEmpty()
    seen = rect_in(dock, dock.widget())
    assert seen.contains(rect_in(dock, widget)), (seen, rect_in(dock, widget))
    assert dock.visibleRegion().boundingRect().contains(rect_in(dock, widget))
    parent = widget.parentWidget()
    while parent is not None and parent is not dock:
        if isinstance(parent, QScrollArea):
            port = parent.viewport()
            assert rect_in(port, widget).top() >= 0 and port.rect().contains(rect_in(port, widget)), \
                (rect_in(port, widget), port.rect())
        parent = parent.parentWidget()
    # in the window and not under another dock
    assert window.rect().contains(rect_in(window, widget))
    assert window.childAt(rect_in(window, widget).center()) is widget

def drag_separator(window, qtbot, above, below, pixels: int) -> None:
    """Drag the separator between the docks ``above`` and ``below`` down by ``pixels``, with the
    mouse, as a user does (the window moves a separator on a timer: the loop turns between moves)."""
    x = below.geometry().center().x()
    y = (above.geometry().bottom() + below.geometry().top() + 1) // 2
    assert window.childAt(QPoint(x, y)) is None  # the separator: the window's own, no widget there

    def send(kind, point: QPoint, button, buttons) -> None:
        event = QMouseEvent(kind, QPointF(point), QPointF(window.mapToGlobal(point)), button, buttons,
                            Qt.NoModifier)
        QApplication.sendEvent(window, event)

    send(QEvent.MouseButtonPress, QPoint(x, y), Qt.LeftButton, Qt.LeftButton)
    steps = 10
    for step in range(1, steps + 1):
        send(QEvent.MouseMove, QPoint(x, y + pixels * step // steps), Qt.NoButton, Qt.LeftButton)
        qtbot.wait(5)
    send(QEvent.MouseButtonRelease, QPoint(x, y + pixels), Qt.LeftButton, Qt.NoButton)
    settle(qtbot)


def rerun_checkpointed(window, qtbot, record, first) -> None:
    """The transformer's re-run with every layer checkpointed: the what-if summary appears below the chart."""
    options = RunOptions(checkpoint=["encoder.layers.*"])
    window.runs.note_rerun(options)
    second = record(TRANSFORMER, checkpoint=["encoder.layers.*"])
    window.begin_run(first.start["script"], options, second)
    window.bottom_tabs.setCurrentWidget(window.memory_tab)
    qtbot.waitUntil(lambda: window.whatif.isVisibleTo(window), timeout=30000)
    settle(qtbot, 15)


@pytest.mark.parametrize("tab_first", ["memory", "diagnostics"])
def test_the_memory_tabs_room_ask_keeps_the_docks_as_the_user_sized_them(window, record, qtbot, tab_first):
    """At 1366x768 a user drags the separator above the timeline views down (the graph's code and
    inspector get the room): when a re-run's what-if summary then appeared below the chart, the
    memory tab asked for room and the window gave it, taking the timeline views from the 162 px the
    user left them back to 441 px. With the Diagnostics tab in front while they dragged, the memory
    tab's first show took them back from 166 px to 312 px. The user's sizes stay; the tab scrolls
    within them."""
    window.resize(1366, 768)
    first = record(TRANSFORMER)
    window.begin_run(first.start["script"], RunOptions(), first)
    if tab_first == "diagnostics":
        window.bottom_tabs.setCurrentWidget(window.diagnostics)
    settle(qtbot, 15)
    code, timeline = window.code_dock, window.bottom_dock
    before = timeline.height()
    drag_separator(window, qtbot, code, timeline, 150)
    user_code, user_timeline = code.height(), timeline.height()
    assert user_timeline <= before - 100 and user_timeline < window.memory.readable_height(), \
        (before, user_timeline)  # the drag took
    window.bottom_tabs.setCurrentWidget(window.memory_tab)  # (its first show, behind Diagnostics)
    settle(qtbot, 15)
    assert (code.height(), timeline.height()) == (user_code, user_timeline)
    rerun_checkpointed(window, qtbot, record, first)
    assert (code.height(), timeline.height()) == (user_code, user_timeline)
    # the chart keeps its readable height; the tab scrolls to it
    tab = window.memory_tab
    assert window.memory.height() >= window.memory.readable_height()
    assert tab.verticalScrollBar().maximum() > 0



def test_the_memory_tabs_room_ask_keeps_a_dock_the_user_moved(window, record, qtbot):
    """At 1366x768 a user takes the run options out of the tabs and puts them below the timeline
    views (what a drop on the lower edge of that dock does: splitDockWidget, dockLocationChanged),
    then sizes the column as they like: the room asked for the re-run's summary took the code
    pane's share and resized the column again. Every dock keeps the size the user gave it."""
    window.resize(1366, 768)
    first = record(TRANSFORMER)
    window.begin_run(first.start["script"], RunOptions(), first)
    settle(qtbot, 15)
    code, timeline, options = window.code_dock, window.bottom_dock, window.toggles_dock
    window.splitDockWidget(timeline, options, Qt.Vertical)
    settle(qtbot)
    assert window.dock_arrangement.moved_by_user
    window.resizeDocks([code, timeline, options], [300, 200, 150], Qt.Vertical)
    settle(qtbot)
    sizes = [dock.height() for dock in (code, timeline, options)]
    rerun_checkpointed(window, qtbot, record, first)
    assert [dock.height() for dock in (code, timeline, options)] == sizes


def test_the_memory_tab_still_asks_for_room_in_the_windows_own_arrangement(window, record, qtbot):
    """Untouched by the user, the 1366x768 column gives the timeline views room for the chart and
    the first lines of a re-run's summary (what the room ask is for)."""
    window.resize(1366, 768)
    first = record(TRANSFORMER)
    window.begin_run(first.start["script"], RunOptions(), first)
    settle(qtbot, 15)
    before = window.bottom_dock.height()
    rerun_checkpointed(window, qtbot, record, first)
    tab = window.memory_tab
    assert window.bottom_dock.height() > before
    assert tab.viewport().height() >= window.memory.readable_height() + 40


def indicator_in(ancestor, box) -> QRect:
    """Where ``box``'s box is drawn, in ``ancestor``'s coordinates (the box's style says)."""
    option = QStyleOptionButton()
    option.initFrom(box)
    option.text = box.text()
    inside = box.style().subElementRect(QStyle.SE_CheckBoxIndicator, option, box)
    return inside.translated(box.mapTo(ancestor, QPoint(0, 0)))


def edge_contrast(picture, left: int, y: int) -> tuple[float, str, str]:
    """The contrast of the pixel at ``(left, y)`` (a control's left edge) with the one 3 px left of it."""
    from tests.qt.test_themes import contrast

    edge, outside = picture.pixelColor(left, y), picture.pixelColor(left - 3, y)
    return contrast(edge, outside), edge.name(), outside.name()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_run_options_controls_are_outlined_to_be_seen_on_either_theme(window, record, qtbot, restore_theme,
                                                                          theme):
    """On the dark theme retain_graph, create_graph, skip zero_grad and save_on_cpu had a box
    #181a1f outlined in #191b20 on the #202329 panel (1.1:1): a bare word, not a control; the
    fields (detach at, checkpoint, arguments, steps, the combo boxes) had edges as faint, an empty
    one no field at all. On the light theme the edges were #bcbcbc on #efefef (1.6:1). Each edge
    now stands 3:1 and more from the panel outside it (a box's from its fill inside too), on the
    pixels the dock shows, and a checked box still shows its mark."""
    from tests.qt.test_themes import contrast

    themes.apply(theme)
    window.resize(1366, 768)
    run = record(model("mlp_optimizer"))
    window.begin_run(run.start["script"], RunOptions(), run)
    toggles = window.toggles
    toggles.retain.setChecked(True)
    window.toggles_dock.setFloating(True)  # tall enough to show every option without scrolling
    window.toggles_dock.resize(320, 520)
    window.setFocus()  # (a focused field keeps the style's focus outline instead)
    settle(qtbot)
    dock = window.toggles_dock
    picture = dock.grab().toImage()
    for box in (toggles.retain, toggles.create, toggles.accumulate, toggles.save_on_cpu):
        assert box.isVisible(), box.text()
        mark = indicator_in(dock, box)
        ratio, edge, outside = edge_contrast(picture, mark.left(), mark.center().y())
        inside = picture.pixelColor(mark.left() + 2, mark.top() + mark.height() * 3 // 4)
        assert ratio >= 3 and contrast(picture.pixelColor(mark.left(), mark.center().y()), inside) >= 3, \
            (box.text(), edge, outside, inside.name())
    for field in (toggles.mode, toggles.device, toggles.steps, toggles.detach, toggles.checkpoint,
                  toggles.autocast, toggles.arguments):
        place = rect_in(dock, field)
        assert dock.rect().contains(place) and not field.hasFocus()
        ratio, edge, outside = edge_contrast(picture, place.left(), place.center().y())
        assert ratio >= 3, (type(field).__name__, edge, outside)
    # the mark of a checked box is kept (the outline is drawn over the style's own box)
    mark = indicator_in(dock, toggles.retain)
    fill = picture.pixelColor(mark.left() + 2, mark.bottom() - 2)
    inner = [picture.pixelColor(x, y) for x in range(mark.left() + 3, mark.right() - 2)
             for y in range(mark.top() + 3, mark.bottom() - 2)]
    assert sum(contrast(pixel, fill) >= 3 for pixel in inner) >= 5


def test_the_image_export_dialogs_controls_are_outlined_on_the_dark_theme(window, qtbot, restore_theme):
    """File > Export > Graph image had the same unseen boxes and field on the dark theme (1.1:1)."""
    from graphview.qt.image_export_dialog import ImageExportDialog

    themes.apply("dark")
    dialog = ImageExportDialog(window, "/tmp/graph.png", "caption")
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.setFocus()
    qtbot.wait(20)
    picture = dialog.grab().toImage()
    for box in (dialog.legend, dialog.caption, dialog.light):
        mark = indicator_in(dialog, box)
        assert edge_contrast(picture, mark.left(), mark.center().y())[0] >= 3, box.text()
    for field in (dialog.file, dialog.format):
        place = rect_in(dialog, field)
        assert edge_contrast(picture, place.left(), place.center().y())[0] >= 3, type(field).__name__


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_grad_ledgers_changes_to_come_read_and_stand_apart(window, record, qtbot, restore_theme, theme):
    """At the MLP sample's second backward the ``.grad`` changes before it are in and the rest
    are to come: the ledger wrote those in the theme's disabled grey, 2.5:1 on the light theme's
    white (3.6:1 dark), below the 4.5:1 text needs. They read now (4.5:1 and more against the
    tree's base) and stand apart from the changes reached, which keep the text colour, by italics."""
    from tests.qt.test_themes import contrast

    themes.apply(theme)
    window.resize(1366, 768)
    run = record(model("mlp_optimizer"), steps=3)
    window.begin_run(run.start["script"], RunOptions(steps=3), run)
    window.bottom_tabs.setCurrentWidget(window.ledger)
    cursor = [i for i, e in enumerate(run.events) if e["ev"] == "backward_start"][1]
    window.set_cursor(cursor)
    settle(qtbot)
    ledger = window.ledger
    base = ledger.viewport().palette().color(QPalette.Base)
    tops = {ledger.topLevelItem(t).text(0): ledger.topLevelItem(t) for t in range(ledger.topLevelItemCount())}
    to_come = reached = 0
    for tid, entries in run.grads.items():
        top = tops[run.tensor_name(tid)]
        assert top.childCount() == len(entries)  # (a short run: every change listed, none counted)
        for entry, child in zip(entries, (top.child(c) for c in range(top.childCount()))):
            if entry.index > cursor:
                to_come += 1
                for column in (0, 1):
                    colour = child.foreground(column).color()
                    assert contrast(colour, base) >= 4.5, (child.text(0), colour.name(), base.name())
                    assert child.font(column).italic()
            else:
                reached += 1
                assert child.foreground(0).style() == Qt.NoBrush and not child.font(0).italic()
    assert to_come and reached


def elided_tab_titles(tabs) -> list[str]:
    """The titles the tab bar draws cut short (the text its style option carries, as painted)."""
    bar = tabs.tabBar()
    cut = []
    for i in range(bar.count()):
        option = QStyleOptionTab()
        bar.initStyleOption(option, i)
        if option.text != bar.tabText(i) or not bar.rect().contains(bar.tabRect(i)):
            cut.append(option.text)
    return cut


def test_a_diagnostics_count_leaves_every_timeline_tab_title_whole_at_1366x768(window, record, qtbot):
    """A run with a finding titles its tab "Diagnostics (1)": at 1366x768 the four titles then
    needed a few pixels more than the 314 px column, and every one was elided ("Mem…",
    "Diagnostics …" with its count cut off, "Cons…", "Grad ledq…"). The room beside each title
    narrows to fit the column before any title is cut, and widens again with the column."""
    from tests.conftest import lesson

    window.resize(1366, 768)
    run = record(lesson("error_backward_twice"))
    window.begin_run(run.start["script"], RunOptions(), run)
    settle(qtbot, 15)
    tabs = window.bottom_tabs
    assert tabs.tabText(tabs.indexOf(window.diagnostics)) == "Diagnostics (1)"
    assert elided_tab_titles(tabs) == []
    bar = tabs.tabBar()
    assert sum(bar.tabRect(i).width() for i in range(bar.count())) <= tabs.width()
    # a wider column (the user drags it): the titles get their full room back
    window.resizeDocks([window.bottom_dock], [480], Qt.Horizontal)
    settle(qtbot)
    assert tabs.width() >= 470
    for i in range(bar.count()):
        text = bar.fontMetrics().size(Qt.TextShowMnemonic, bar.tabText(i)).width()
        assert bar.tabRect(i).width() >= text + 14, (bar.tabText(i), bar.tabRect(i).width(), text)


def strongest_contrast(image, background) -> float:
    """The highest contrast of any pixel of ``image`` with ``background`` (a text's glyphs)."""
    from tests.qt.test_themes import contrast

    colours = {image.pixel(x, y) for x in range(image.width()) for y in range(image.height())}
    return max(contrast(QColor.fromRgb(rgb), background) for rgb in colours)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_run_options_say_why_run_again_refused_in_sight_and_in_words_that_read(window, record, qtbot,
                                                                                  restore_theme, theme):
    """Arguments with an open quote are refused with a line in red. It came last in the scrolled
    form: at 1366x768 below the fold of the run options' dock, so "Run again" seemed to do nothing;
    and in a fixed #b91c1c, 2.4:1 on the dark theme's #202329 panel. The line is now above the
    button, outside the scrolled form, in the theme's error colour (following a change of theme):
    in sight, and 4.5:1 and more on the pixels the label shows."""
    themes.apply("light" if theme == "dark" else "dark")  # (the other first: the label follows the change)
    window.resize(1366, 768)
    run = record(model("mlp_optimizer"))
    window.begin_run(run.start["script"], RunOptions(), run)
    dock, toggles = window.toggles_dock, window.toggles
    dock.raise_()
    settle(qtbot)
    toggles.arguments.setText('--name "open')
    requested = []
    toggles.sigRunRequested.connect(requested.append)
    toggles.run_button.click()
    themes.apply(theme)
    settle(qtbot)
    label = toggles.arguments_error
    assert requested == [] and "close the quote" in label.text()
    assert_in_sight(window, dock, label)
    assert_in_sight(window, dock, toggles.run_button)
    assert not rect_in(dock, label).intersects(rect_in(dock, toggles.run_button))
    picture = dock.grab().toImage()
    place = rect_in(dock, label)
    background = picture.pixelColor(place.left() - 3, place.center().y())
    assert background == toggles.palette().color(QPalette.Window)
    assert strongest_contrast(picture.copy(place), background) >= 4.5
