"""Fixtures the window's tests share."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

from graphview.qt import theme as themes


@pytest.fixture
def restore_theme():
    """Whatever theme a test picks, the next test starts on the desktop's palette again."""
    app = QApplication.instance()
    original = QPalette(app.palette())
    yield
    QSettings("graphview", "graphview").remove("theme")
    app.setPalette(original)
    themes.apply("system")
