"""The table of actions: menus, toolbar, shortcuts and the shortcut sheet are built from it."""

from __future__ import annotations

from collections import Counter

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QToolBar

from graphview.core import timeline
from graphview.core.options import RunOptions
from graphview.qt.actions import ACTIONS, key_text, shortcut_sheet
from tests.conftest import lesson


def menu_texts(menu) -> list[str]:
    return [a.text() for a in menu.actions() if not a.isSeparator()]


def test_every_spec_is_an_action_in_its_menu_in_table_order(window):
    for path, menu in window.menus.items():
        specs = [s.text for s in ACTIONS if s.menu == path]
        shown = [t for t in menu_texts(menu) if t in specs]
        assert shown == specs, path
    assert set(window.actions) == {s.id for s in ACTIONS}
    file_menu = menu_texts(window.menus["&File"])
    assert file_menu == ["&Open…", "Open &recent", "&Export", "&Quit"]
    top = [a.text() for a in window.menuBar().actions()]
    assert top == ["&File", "&Run", "&View", "&Help"]


def test_the_toolbar_holds_the_specs_with_toolbar_text(window):
    bar = window.findChild(QToolBar, "stepping")
    on_bar = [a.iconText() for a in bar.actions() if a in window.actions.values()]
    assert on_bar == [s.toolbar for s in ACTIONS if s.toolbar]
    assert window.actions["next_step"].toolTip() == "Next step (Shift+Right)"


def test_no_two_commands_share_a_key(window):
    keys = Counter(QKeySequence(s).toString() for spec in ACTIONS for s in spec.shortcuts)
    assert [k for k, n in keys.items() if n > 1] == []
    assert [k.toString() for k in window.actions["zoom_in"].shortcuts()] == ["Ctrl++", "Ctrl+="]


def test_the_shortcut_sheet_lists_every_key(window):
    sheet = shortcut_sheet()
    for spec in ACTIONS:
        for shortcut in spec.shortcuts:
            assert key_text(shortcut) in sheet, spec.id
        if any(map(key_text, spec.shortcuts)):  # a standard key may be bound to nothing here (Quit, offscreen)
            assert spec.text.replace("&", "") in sheet
    assert "Run to next backward" in sheet and "<b>B</b>" in sheet


def test_commands_that_need_a_run_or_a_script_wait_for_one(window, record, qtbot):
    needs_run = ["step", "back", "export_image", "export_trace", "play"]
    assert all(not window.actions[a].isEnabled() for a in needs_run + ["stop"])  # the start page
    assert window.actions["open"].isEnabled() and window.actions["fit"].isEnabled()
    run = record(lesson("chain_rule"))
    window.begin_run(None, RunOptions(), run)  # a trace: no script to restart
    assert all(window.actions[a].isEnabled() for a in needs_run)
    assert not window.actions["restart"].isEnabled()
    assert not window.actions["stop"].isEnabled()  # a whole recording: nothing runs to stop
    window.begin_run(run.start["script"], RunOptions(), run)
    assert window.actions["restart"].isEnabled()
    window.begin_run(run.start["script"], RunOptions())  # a runner starts: Stop stops it
    assert window.actions["stop"].isEnabled()
    window.append_events(list(run.events))  # ... until its run has ended
    qtbot.waitUntil(lambda: window.runs.settled, timeout=10000)
    assert not window.actions["stop"].isEnabled()


def test_triggering_an_action_runs_its_handler(window, record):
    run = record(lesson("chain_rule"))
    window.begin_run(None, RunOptions(), run)
    window.set_cursor(0)
    window.actions["to_backward"].trigger()
    assert window.cursor == timeline.next_backward(run, 0)
    window.actions["to_end"].trigger()
    assert window.cursor == timeline.last(run)
    window.actions["overview"].trigger()  # checkable: now off
    assert not window.actions["overview"].isChecked() and not window.view.overview.enabled


def test_the_view_menu_offers_back_every_panel_that_can_be_closed_and_no_greyed_entry(window):
    """A panel closed with its × comes back from View; the timeline views (never closed) get no
    entry there, which sat checked and greyed."""
    view = window.menus["&View"]
    entries = [a for a in view.actions() if not a.isSeparator() and a.menu() is None]
    docks = (window.code_dock, window.inspector_dock, window.toggles_dock)
    assert [a.text() for a in entries if a in [d.toggleViewAction() for d in docks]] == [d.windowTitle() for d in docks]
    assert window.bottom_dock.toggleViewAction() not in entries
    assert all(d.toggleViewAction().isEnabled() for d in docks)
