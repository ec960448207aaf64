"""A canvas on its own: a scene and its view (offscreen, 1000x700)."""

from __future__ import annotations

import pytest

from graphview.qt.canvas import GraphScene, GraphView


@pytest.fixture
def canvas(qtbot):
    scene = GraphScene()
    view = GraphView(scene)
    qtbot.addWidget(view)
    view.resize(1000, 700)
    view.show()
    return scene, view


def show_at(canvas, run, index: int) -> None:
    """The canvas showing ``run`` at event ``index``, as the session tells it."""
    scene, view = canvas
    scene.set_run(run)
    view.set_run(run)
    scene.set_cursor(index)
    view.set_cursor(index)
