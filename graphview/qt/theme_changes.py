"""The signal that a theme was applied: ``changes().changed(theme)``, which every view listens to.

Apart from :mod:`graphview.qt.theme` (which emits it after :func:`~graphview.qt.theme.apply`) so
that the canvas, whose colours the theme module imports, can listen without importing the theme.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal


class ThemeChanges(QObject):
    changed = Signal(object)  # the Theme now applied


_notifier: list[ThemeChanges] = []


def changes() -> ThemeChanges:
    """The object whose ``changed(theme)`` signal fires after every theme applied."""
    if not _notifier:
        _notifier.append(ThemeChanges())
    return _notifier[0]
