"""File > Open recent: the files opened last, newest first, ten at most, those gone from the disk
left out; picking one asks to open it."""

from __future__ import annotations

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtWidgets import QMenu

from graphview.qt.plain import text_tip
from graphview.qt.recent_files import KEPT, RecentMenu, recent_paths


class _Opener(QObject):
    open = Signal(str)


def test_the_newest_first_ten_at_most_only_those_on_disk(tmp_path, qtbot):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)
    files = []
    for i in range(KEPT + 2):
        files.append(tmp_path / f"script{i}.py")
        files[-1].write_text("")
    file_menu = QMenu("File")
    export = file_menu.addMenu("Export")
    opener = _Opener()
    recent = RecentMenu(settings, file_menu, export.menuAction(), opener.open)
    assert [a.text() for a in file_menu.actions()] == ["Open &recent", "Export"]
    for path in files:
        recent.remember(str(path))
    recent.remember(str(files[3]))  # again: first, and once
    expected = [str(files[3])] + [str(p) for p in reversed(files) if p != files[3]][:KEPT - 1]
    assert recent_paths(settings) == expected
    files[-1].unlink()
    assert recent_paths(settings) == [p for p in expected if p != str(files[-1])]
    recent.fill()
    assert len(recent.menu.actions()) == KEPT - 1
    asked = []
    opener.open.connect(asked.append)
    recent.menu.actions()[0].trigger()
    assert asked == [str(files[3])]


def _entry_for(tmp_path, path):
    """The one entry File > Open recent shows once ``path`` (made empty) was opened, the recent
    menu, and the File menu (kept by the caller: the entry lives as long as it does)."""
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    file_menu = QMenu("File")
    export = file_menu.addMenu("Export")
    recent = RecentMenu(settings, file_menu, export.menuAction(), _Opener().open)
    recent.remember(str(path))
    (action,) = recent.menu.actions()
    return recent, action, file_menu


def test_each_entry_reads_as_its_name_and_short_folder_with_the_path_in_its_tooltip(tmp_path, qtbot):
    """A deep path (a temporary folder's) read as a long line of folders: the menu says the file's
    name and its last folders, as the start page does, and keeps the whole path in the tooltip."""
    deep = tmp_path / "runs" / "2026" / "march" / "train.py"
    recent, action, _file_menu = _entry_for(tmp_path, deep)
    assert action.text() == "train.py  —  …/2026/march"
    assert action.toolTip() == text_tip(str(deep)) and recent.menu.toolTipsVisible()


def test_a_file_named_like_markup_reads_as_its_name(tmp_path, qtbot):
    """A trace from someone else, named ``<img src=x><b>bold &amp;.gvtrace``: the menu entry and its tooltip
    show those characters, never render them."""
    from PySide6.QtGui import QTextDocument

    named = tmp_path / "<img src=x><b>bold &amp;.gvtrace"  # (no "/": a file name holds none)
    _, action, _file_menu = _entry_for(tmp_path, named)
    assert action.text().startswith("<img src=x><b>bold &&amp;.gvtrace")  # (& doubled: no shortcut key)
    shown = QTextDocument()
    shown.setHtml(action.toolTip())  # as Qt renders a tooltip
    assert shown.toPlainText() == str(named)
