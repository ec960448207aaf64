"""The docks as a user arranges and reads them: the run options' button in sight, a layout the
user made kept."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, QSettings
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QScrollArea

from graphview.core.options import RunOptions
from graphview.qt import theme as themes
from tests.conftest import model


def settle(qtbot, rounds: int = 8) -> None:
    for _ in range(rounds):
        qtbot.wait(10)


def rect_in(ancestor, widget) -> QRect:
    return QRect(widget.mapTo(ancestor, widget.rect().topLeft()), widget.size())


@pytest.fixture
def restore_theme():
    """Whatever theme a test picks, the next test starts on the desktop's palette again."""
    app = QApplication.instance()
    original = QPalette(app.palette())
    yield
    QSettings("graphview", "graphview").remove("theme")
    app.setPalette(original)
    themes.apply("system")


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
    assert button.isVisible() and not dock.visibleRegion().isEmpty()
    seen = rect_in(dock, dock.widget())
    assert seen.contains(rect_in(dock, button)), (seen, rect_in(dock, button))
    assert dock.visibleRegion().boundingRect().contains(rect_in(dock, button))
    # every scroll area around the button shows it where it is now (nothing to scroll to see it)
    parent = button.parentWidget()
    while parent is not None and parent is not dock:
        if isinstance(parent, QScrollArea):
            port = parent.viewport()
            assert rect_in(port, button).top() >= 0 and port.rect().contains(rect_in(port, button)), \
                (rect_in(port, button), port.rect())
        parent = parent.parentWidget()
    # the button is in the window and not under another dock
    assert window.rect().contains(rect_in(window, button))
    centre = rect_in(window, button).center()
    assert window.childAt(centre) is button

