"""A canvas on its own: a scene and its view (offscreen, 1000x700)."""

from __future__ import annotations

import pytest

from graphview.qt.canvas import GraphScene, GraphView


def shown_canvas(qtbot, width: int = 1000, height: int = 700) -> tuple[GraphScene, GraphView]:
    """A scene and its view, shown at ``width`` x ``height``."""
    scene = GraphScene()
    view = GraphView(scene)
    qtbot.addWidget(view)
    view.resize(width, height)
    view.show()
    return scene, view


@pytest.fixture
def canvas(qtbot):
    return shown_canvas(qtbot)


def show_at(canvas, run, index: int) -> None:
    """The canvas showing ``run`` at event ``index``, as the session tells it."""
    scene, view = canvas
    scene.set_run(run)
    view.set_run(run)
    scene.set_cursor(index)
    view.set_cursor(index)
