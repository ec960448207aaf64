"""The window on a small screen: its size, where the docks go, the overview out of the way."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, QRect, QSize
from PySide6.QtGui import QTextDocument

from graphview.core import timeline
from graphview.core.options import APP_STEPS, RunOptions
from graphview.qt.canvas import NodeItem
from graphview.qt.window_layout import LARGEST, window_size
from tests.conftest import model


def settle(qtbot, window) -> None:
    for _ in range(5):
        qtbot.wait(10)


def small_window(window, qtbot, run):
    window.resize(1366, 768)
    window.begin_run(run.start["script"], RunOptions(), run)
    settle(qtbot, window)
    assert window.size() == QSize(1366, 768)
    return window


@pytest.mark.parametrize("screen", [(1366, 768), (1280, 720), (1920, 1080), (2560, 1440), (3840, 2160)])
def test_the_window_opens_within_the_screen_and_takes_a_share_of_a_big_one(screen):
    available = QRect(0, 0, *screen)
    size = window_size(available)
    assert size.width() <= screen[0] - 16 and size.height() <= screen[1] - 40  # room for the frame
    if screen[0] <= 1600:
        assert (size.width(), size.height()) == (screen[0] - 16, screen[1] - 40)  # a laptop: all of it
    else:
        assert size.width() <= LARGEST.width() and size.height() <= LARGEST.height()
        assert size.width() >= 0.6 * screen[0] or size.width() == LARGEST.width()


def test_a_new_window_is_no_larger_than_its_screen(window):
    from graphview.qt.main_window import MainWindow

    fresh = MainWindow(samples=[])
    try:
        available = fresh.screen().availableGeometry()
        assert available.contains(fresh.geometry())
        minimum = fresh.minimumSizeHint()
        assert minimum.width() <= 1024 and minimum.height() <= 600  # small screens can hold it
    finally:
        fresh.deleteLater()


def test_at_1366x768_the_canvas_gets_most_of_the_window_and_every_panel_is_inside_it(window, record, qtbot):
    small_window(window, qtbot, record(model("transformer_block")))
    port = window.view.viewport()
    area = port.width() * port.height()
    assert area >= 0.6 * 1366 * 768, (port.size(), "the canvas is squeezed")
    inside = window.rect()
    for dock in (window.code_dock, window.inspector_dock, window.toggles_dock, window.bottom_dock):
        assert not dock.isFloating()
        if dock.visibleRegion().isEmpty():  # a tab behind another: shown when its tab is picked
            assert window.tabifiedDockWidgets(dock)
            continue
        widget = dock.widget()
        top_left = widget.mapTo(window, widget.rect().topLeft())
        assert inside.contains(QRect(top_left, widget.size())), (dock.windowTitle(), top_left, widget.size())
    # the side panels fold into tabs in one column beside the canvas
    assert set(window.tabifiedDockWidgets(window.code_dock)) == {window.inspector_dock, window.toggles_dock}
    memory = window.memory
    corner = memory.mapTo(window, memory.rect().bottomRight())
    assert inside.contains(corner) and memory.width() >= 250  # the chart is whole
    bar = window.statusBar()
    assert bar.isVisible() and inside.contains(bar.geometry()) and bar.height() > 10
    # the Diagnostics tab (what a pitfall's run found) is in sight, not behind the tab bar's arrows
    tabs = window.bottom_tabs.tabBar()
    assert tabs.rect().contains(tabs.tabRect(window.bottom_tabs.indexOf(window.diagnostics)))
    # and every tab's title reads whole (they were cut to "Mem…", "Diagnos…", "Cons…", "Grad led…")
    assert [tabs.tabText(i) for i in range(tabs.count())] == ["Memory", "Diagnostics", "Console", "Grad ledger"]
    for i in range(tabs.count()):
        assert tabs.tabRect(i).width() >= tabs.tabSizeHint(i).width(), (tabs.tabText(i), tabs.tabRect(i))
        assert tabs.rect().contains(tabs.tabRect(i))
    # a click on a node brings its details forward
    window.set_cursor(window.overview_index())
    node = next(i for i in window.scene.node_items.values() if i.isVisible() and i.node.kind == "op")
    window.scene.select_node(node.node.id)
    assert not window.inspector_dock.visibleRegion().isEmpty()


def test_a_large_window_shows_every_panel_at_once(window, record, qtbot):
    window.resize(1800, 1100)
    run = record(model("mlp_optimizer"))
    window.begin_run(run.start["script"], RunOptions(), run)
    settle(qtbot, window)
    assert not window.tabifiedDockWidgets(window.code_dock)
    for dock in (window.code_dock, window.inspector_dock, window.toggles_dock, window.bottom_dock):
        assert not dock.visibleRegion().isEmpty(), dock.windowTitle()
    code, canvas = window.code_dock.geometry(), window.view.mapTo(window, window.view.rect().topLeft())
    assert code.right() < canvas.x() < window.inspector_dock.geometry().x()  # code | canvas | inspector
    # shrunk to a laptop's size, the panels fold into tabs again; one the user closed stays closed
    window.toggles_dock.close()
    window.resize(1366, 768)
    settle(qtbot, window)
    assert window.inspector_dock in window.tabifiedDockWidgets(window.code_dock)
    assert window.toggles_dock.isHidden() and window.bottom_dock.isVisible()


def test_the_overview_moves_off_the_node_being_shown(window, record, qtbot):
    run = record(model("transformer_block"))
    small_window(window, qtbot, run)
    view, overview = window.view, window.view.overview
    view.change_level(None)  # every module box open: the nodes themselves are shown
    view.resetTransform()
    view.scale(2.5, 2.5)  # most of the graph out of view: the overview is wanted
    window.set_cursor(0)
    item = None
    while not isinstance(item, NodeItem) or item.node.kind != "op":  # step onto a grad_fn node
        window.move(timeline.step_forward)
        item = window.scene.item_at_event(window.cursor)
    port = view.viewport().rect()
    home = overview.corners()[0]  # bottom right
    # scroll so that the node sits in the bottom-right corner, where the overview lives
    node_center = view.mapToScene(port.center()) + (item.sceneBoundingRect().center()
                                                    - view.mapToScene(QPointF(home.x() + 60, home.y() + 50).toPoint()))
    view.centerOn(node_center)
    overview.redraw()
    settle(qtbot, window)
    shown = view.mapFromScene(item.sceneBoundingRect()).boundingRect()
    assert shown.intersects(QRect(home, overview.size())), "the node is where the overview would be"
    assert overview.isVisible()
    assert not overview.geometry().intersects(shown)
    assert overview.pos() != home
    # it went where it covers the least of the nodes drawn: none where some corner covers none
    moved = overview.pos()
    drawn = [view.mapFromScene(i.sceneBoundingRect()).boundingRect() for i in window.scene.items()
             if i.isVisible() and isinstance(i, NodeItem)]
    if any(not any(QRect(c, overview.size()).intersects(r) for r in drawn) for c in overview.corners()[1:]):
        assert not any(overview.geometry().intersects(r) for r in drawn)
    # with the node scrolled away from the corner, the overview stays where it went: it went back
    # and forth (a GPT-2's minimap went bottom left on the loss node, back over it at the next step)
    view.centerOn(item)
    settle(qtbot, window)
    assert overview.pos() == moved and overview.isVisible()
    # stepping on: it changes corner only where the corner it is in would cover the cursor's node
    for index in [i for i, e in enumerate(window.run.events) if e["ev"] == "op"][:40]:
        before, corner = overview.pos(), overview.geometry().adjusted(-4, -4, 4, 4)
        window.set_cursor(index)
        settle(qtbot, window)
        if overview.isVisible() and overview.pos() != before:
            assert any(corner.intersects(r) for r in overview.shown_rects()), (index, before, overview.pos())


def test_the_user_puts_the_overview_in_a_corner_and_it_stays_there_while_stepping(window, record, qtbot):
    """Its context menu moves the overview to another corner; stepping on, it stays there but where
    it would cover the cursor's node."""
    from graphview.qt.canvas.overview_place import corner_menu

    small_window(window, qtbot, record(model("transformer_block")))
    view, overview = window.view, window.view.overview
    view.change_level(None)
    view.resetTransform()
    view.scale(2.5, 2.5)
    ops = [i for i, e in enumerate(window.run.events) if e["ev"] == "op"]
    window.set_cursor(ops[10])
    overview.redraw()
    settle(qtbot, window)
    menu = corner_menu(overview, overview.put_in_corner)
    top_left = next(a for a in menu.actions() if a.text() == "Move to the top left corner")
    top_left.trigger()
    settle(qtbot, window)
    assert overview.pos() == overview.corners()[3] and overview.isVisible()
    assert corner_menu(overview, overview.put_in_corner).actions()[3].isChecked()
    for index in ops[11:50]:
        window.set_cursor(index)
        settle(qtbot, window)
        box = QRect(overview.corners()[3], overview.size()).adjusted(-4, -4, 4, 4)
        forced = any(box.intersects(r) for r in overview.shown_rects())
        assert forced or overview.pos() == overview.corners()[3], (index, overview.pos())


def test_a_long_status_message_ends_before_the_run_summary(window, record, qtbot):
    """An error's message is longer than the room the run's summary leaves on the right: it ends
    in "…" there (it ran under the summary, "...already been fr|run error: 35 events"), whole in the tooltip."""
    small_window(window, qtbot, record(model("mlp_optimizer")))
    bar = window.statusBar()
    message = "the script failed at line 8: RuntimeError: " + "Trying to backward through the graph a second time " * 4
    bar.showMessage(message, 5000)
    shown = bar.currentMessage()
    assert shown.endswith("…") and message.startswith(shown[:-1])
    summary = window.status_label.mapTo(bar, window.status_label.rect().topLeft()).x()
    assert bar.fontMetrics().horizontalAdvance(shown) < summary
    from graphview.qt.plain import text_tip

    assert bar.toolTip() == text_tip(message) and bar.message() == message  # (the tooltip shows it as plain text)
    bar.showMessage("wrote graph.svg", 5000)
    assert bar.currentMessage() == "wrote graph.svg" and bar.toolTip() == ""


def test_at_1366x768_the_step_script_note_says_how_graphview_runs_it_in_two_lines(window, record, qtbot):
    run = record(model("mlp_optimizer"), steps=APP_STEPS)
    small_window(window, qtbot, run)
    note = window.code_note
    assert note.isVisible()
    document = QTextDocument()
    document.setHtml(note.text())
    words = document.toPlainText()
    for fact in ("step()", f"{APP_STEPS}×", "Run options → steps", "backward", "optimizer", "__main__"):
        assert fact in words, fact
    margins = note.contentsMargins()  # the theme's padding and border
    text_height = note.heightForWidth(note.width()) - margins.top() - margins.bottom()
    assert text_height / note.fontMetrics().lineSpacing() < 2.5, (note.width(), words)
    assert "__main__" in note.toolTip() and f"step()</b> {APP_STEPS} times" in note.toolTip()
