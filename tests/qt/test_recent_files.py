"""File > Open recent: the files opened last, newest first, ten at most, those gone from the disk
left out; picking one asks to open it."""

from __future__ import annotations

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtWidgets import QMenu

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
