"""The window's chrome on either theme, as the pixels show it: every field, combo box, spin box
and check box has an edge that reads (the application's style outlines them all, not a list of
widgets)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QComboBox, QLineEdit

from graphview.core.options import RunOptions
from graphview.qt import theme as themes
from tests.conftest import model
from tests.qt.test_dock_layout import edge_contrast
from tests.qt.window_geometry import rect_in, settle


@pytest.fixture
def restore_theme():
    """Whatever theme a test picks, the next test starts on the desktop's palette again."""
    app = QApplication.instance()
    original = QPalette(app.palette())
    yield
    QSettings("graphview", "graphview").remove("theme")
    app.setPalette(original)
    themes.apply("system")


def shown_at_1366(window, record, qtbot, theme: str):
    """The MLP sample at 1366x768 on ``theme``: the code, inspector and run options docks are tabs
    of one column, the timeline views' tabs below them."""
    themes.apply(theme)
    window.resize(1366, 768)
    run = record(model("mlp_optimizer"))
    window.begin_run(run.start["script"], RunOptions(), run)
    window.bottom_tabs.setCurrentWidget(window.memory_tab)
    window.view.setFocus()  # (a focused field keeps the style's focus outline instead)
    settle(qtbot, 12)
    return window


def test_the_toolbar_search_field_and_the_rank_combo_are_outlined_on_dark(window, record, qtbot, restore_theme):
    """The run options and the image export dialog had their controls outlined one by one: the
    toolbar's search field (its edge #17191d beside #23262d, 1.16:1) and the status bar's rank combo
    box (#17191d on #202329, 1.12:1) kept Fusion's edges. The application's style outlines every
    line edit, combo box and spin box: each one the window shows has an edge 3:1 and more from what
    is around it."""
    shown_at_1366(window, record, qtbot, "dark")
    window.rank_switcher.show_ranks({0: "job.rank0.gvtrace", 1: "job.rank1.gvtrace"}, 0, 2)
    settle(qtbot)
    picture = window.grab().toImage()
    for field in (window.search, window.rank_switcher.combo):
        place = rect_in(window, field)
        assert field.isVisible() and window.rect().contains(place)
        ratio, edge, outside = edge_contrast(picture, place.left(), place.center().y())
        assert ratio >= 3, (type(field).__name__, edge, outside)
    # and every other framed field the window shows
    shown = [w for kind in (QLineEdit, QComboBox, QAbstractSpinBox) for w in window.findChildren(kind)
             if w.isVisible() and not w.visibleRegion().isEmpty() and not w.hasFocus()
             and getattr(w, "hasFrame", lambda: True)()
             and not isinstance(w.parentWidget(), (QComboBox, QAbstractSpinBox))]
    assert len(shown) >= 2
    for field in shown:
        place = rect_in(window, field)
        ratio, edge, outside = edge_contrast(picture, place.left(), place.center().y())
        assert ratio >= 3, (type(field).__name__, field.objectName(), edge, outside)
