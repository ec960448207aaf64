"""The Help menu: the shortcut sheet (from the table of actions) and About (versions as installed)."""

from __future__ import annotations

import platform
from importlib import metadata

import PySide6
from PySide6.QtCore import qVersion

from graphview.core.options import RunOptions
from graphview.qt.actions import ACTIONS, key_text, menu_title
from graphview.qt.help_dialogs import AboutDialog, ShortcutSheet
from tests.conftest import lesson


def test_the_help_menu_has_the_shortcut_sheet_and_about(window):
    texts = [a.text() for a in window.menus["&Help"].actions() if not a.isSeparator()]
    assert texts == ["&Keyboard shortcuts", "&About graphview"]
    window.actions["shortcuts"].trigger()
    window.actions["about"].trigger()
    for kind in (ShortcutSheet, AboutDialog):
        dialog = window.findChild(kind)
        assert dialog.isVisible()
        dialog.close()


def test_every_shortcut_is_in_the_sheet_under_its_menu(window):
    sheet = window.show_shortcuts()
    lines = [line.strip() for line in sheet.sheet.toPlainText().splitlines() if line.strip()]
    sheet.close()
    with_keys = [(spec, " or ".join(t for t in map(key_text, spec.shortcuts) if t)) for spec in ACTIONS]
    with_keys = [(spec, keys) for spec, keys in with_keys if keys]
    assert len(with_keys) >= 20
    headings = list(dict.fromkeys(menu_title(spec.menu) for spec, _ in with_keys))
    assert headings == ["File", "File › Export", "Run", "View", "Help"]  # the menus' order
    assert [line for line in lines if line in headings] == headings
    for spec, keys in with_keys:  # a key, then what it does, under the heading of its menu
        row = next(i for i in range(len(lines) - 1) if lines[i] == keys and lines[i + 1] == spec.text.replace("&", ""))
        heading = max(i for i in range(row) if lines[i] in headings)
        assert lines[heading] == menu_title(spec.menu), spec.id
    assert {"F1", "Ctrl+R", "Shift+Right", "Ctrl++ or Ctrl+="} <= set(lines)


def test_about_shows_the_versions_installed(window, record):
    about = window.show_about()
    text = about.text.text()
    about.close()
    for name in ("graphview", "torch", "PySide6-Essentials"):
        assert metadata.version(name) in text, name
    assert qVersion() in text and PySide6.__version__ in text and platform.python_version() in text
    assert "recorded with" not in text  # no run yet
    run = record(lesson("chain_rule"))
    window.begin_run(None, RunOptions(), run)
    about = window.show_about()
    text = about.text.text()
    about.close()
    assert f"recorded with torch {run.start['torch']} on Python {run.start['python']}" in text


def test_dialog_buttons_say_what_they_do_without_the_desktops_icons(window, qtbot):
    """On a desktop whose icon theme puts a black ✕ on Close (unreadable on the dark theme),
    graphview's dialog buttons are words alone. (Offscreen, Qt puts no icons on them: the icon is
    given by hand here, as such a desktop's style gives it.)"""
    from PySide6.QtWidgets import QDialogButtonBox, QPushButton, QStyle

    from graphview.qt.image_export_dialog import ImageExportDialog
    from graphview.qt.widgets.buttons import words_only

    box = QDialogButtonBox(QDialogButtonBox.Close | QDialogButtonBox.Save)
    qtbot.addWidget(box)
    for button in box.buttons():
        button.setIcon(box.style().standardIcon(QStyle.SP_DialogCloseButton))
    assert all(not button.icon().isNull() for button in box.buttons())
    assert words_only(box) is box
    assert all(button.icon().isNull() for button in box.buttons())
    sheet = window.show_shortcuts()
    export = ImageExportDialog(window, "/tmp/graph.png", "caption")
    qtbot.addWidget(export)
    for dialog in (sheet, export):
        buttons = dialog.findChildren(QPushButton)
        assert buttons and all(button.icon().isNull() for button in buttons)
    sheet.close()
