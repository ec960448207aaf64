"""The window's chrome on either theme, as the pixels show it: the selected tab of every tab bar
stands out from the others, and every field, combo box, spin box and check box has an edge that
reads (the application's style outlines them all, not a list of widgets)."""

from __future__ import annotations

from collections import Counter

import pytest
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QAbstractSpinBox, QComboBox, QLineEdit, QTabBar

from graphview.core.options import RunOptions
from graphview.qt import theme as themes
from tests.conftest import model
from tests.qt.test_dock_layout import edge_contrast
from tests.qt.test_themes import contrast
from tests.qt.window_geometry import rect_in, settle


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


def commonest(image: QImage, x0: int, x1: int, y: int) -> QColor:
    return QColor.fromRgb(Counter(image.pixel(x, y) for x in range(x0, x1)).most_common(1)[0][0])


def selected_tab_stands_out(bar: QTabBar) -> tuple[float, int]:
    """How far the selected tab of ``bar`` stands out from an unselected one: on each row of pixels
    the tabs share, the contrast of the selected tab's commonest colour (its fill, a line across
    it) with the unselected tab's; the highest held over two rows running (a line, not the one row
    where the tabs' outlines differ), and the first of those rows (from the bar's top)."""
    image = bar.grab().toImage()
    selected = bar.tabRect(bar.currentIndex())
    other = bar.tabRect(next(i for i in range(bar.count()) if i != bar.currentIndex()))
    rows = range(max(selected.top(), other.top()), min(selected.bottom(), other.bottom()) + 1)
    ratios = [contrast(commonest(image, selected.left() + 3, selected.right() - 2, y),
                       commonest(image, other.left() + 3, other.right() - 2, y)) for y in rows]
    return max((min(ratios[k], ratios[k + 1]), rows[k] - selected.top()) for k in range(len(ratios) - 1))


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_selected_tab_stands_out_from_the_others(window, record, qtbot, restore_theme, theme):
    """On the dark theme the selected tab was filled a shade off the others, the Code dock's tab
    #21242a beside #1e2026 (1.05:1), the Memory tab #3b3f46 beside #35393f (1.1:1); 1.2:1 on the
    light theme: the tab in front looked no more chosen than its neighbours. The selected tab of the
    timeline views and of the docks tabbed at 1366x768 carries a line in the theme's accent: 3:1 and
    more against the unselected tabs, on the pixels the bars show."""
    shown_at_1366(window, record, qtbot, theme)
    docks = [bar for bar in window.findChildren(QTabBar)
             if bar.isVisible() and bar.count() > 1 and bar is not window.bottom_tabs.tabBar()]
    assert docks, "at 1366x768 the code, inspector and run options docks are tabbed"
    for bar in [window.bottom_tabs.tabBar(), *docks]:
        ratio, row = selected_tab_stands_out(bar)
        assert ratio >= 3, (bar.tabText(bar.currentIndex()), ratio, row)
    # the line goes with the selection
    bar = window.bottom_tabs.tabBar()
    window.bottom_tabs.setCurrentWidget(window.ledger)
    settle(qtbot)
    assert bar.currentIndex() == window.bottom_tabs.indexOf(window.ledger)
    assert selected_tab_stands_out(bar)[0] >= 3


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
