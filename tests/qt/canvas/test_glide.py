"""A box opened or shut: its nodes glide to where the new layout has them, and a glide cut short
(a settle, the scene gone) leaves every node at its place and nothing firing."""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QApplication

from graphview.core.hierarchy import collapsed_at_level
from graphview.qt.canvas import GraphScene
from tests.conftest import model


def _shut_scene(record):
    run = record(model("transformer_block"), steps=1)
    scene = GraphScene()
    scene.set_run(run)
    scene.set_cursor(min(call.start for call in run.backwards.values()))  # forward done, before backward
    scene.boxes.set_all(collapsed_at_level(scene.boxes.boxes, 0))
    return scene


def test_a_settled_glide_leaves_every_node_where_the_layout_has_it(qtbot, record):
    scene = _shut_scene(record)
    scene.boxes.toggle("encoder.layers.0")
    assert scene.boxes.gliding
    scene.boxes.settle()
    assert not scene.boxes.gliding
    layout = scene.boxes.layout
    shown = [i for i, item in scene.node_items.items() if item.isVisible()]
    assert shown
    for node_id in shown:
        assert scene.node_items[node_id].pos() == QPointF(*layout.position(node_id))


def test_a_scene_deleted_mid_glide_fires_nothing(qtbot, record):
    scene = _shut_scene(record)
    scene.boxes.toggle("encoder.layers.0")
    assert scene.boxes.gliding
    shiboken6.delete(scene)  # the window closed while the nodes glide
    qtbot.wait(400)  # past the glide's end: its animation went with the scene
    QApplication.processEvents()
    assert not shiboken6.isValid(scene)
