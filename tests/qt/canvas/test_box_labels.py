"""An open module box's name is drawn above the edges: an edge that crosses it passes under it,
as a road under a map's label (drawn by the box, below the edges, two edges ran through
"encoder.layers.0.self_attn · MultiheadAttention")."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPainter

from graphview.core import timeline
from graphview.qt.canvas.edges import EdgeItem
from graphview.qt.canvas.groups import GroupItem
from tests.conftest import model
from tests.qt.canvas.conftest import show_at


def _crosses(edge: EdgeItem, rect: QRectF) -> bool:
    path = edge.mapToScene(edge.path())
    return any(rect.contains(path.pointAtPercent(k / 200)) for k in range(201))


def _picture(scene, rect: QRectF) -> QImage:
    image = QImage(int(rect.width()) * 2, int(rect.height()) * 2, QImage.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    scene.render(painter, QRectF(image.rect()), rect)
    painter.end()
    return image


def test_an_edge_that_crosses_a_box_name_passes_under_it(canvas, record):
    run = record(model("transformer_block"), steps=1)
    scene, view = canvas
    show_at(canvas, run, timeline.next_backward(run, 0))
    scene.boxes.set_all(set())  # every box open
    crossed = [(group, edge) for group in scene.groups.values() if group.isVisible() and not group.collapsed
               for edge in scene.items() if isinstance(edge, EdgeItem) and edge.isVisible()
               and _crosses(edge, group.label_rect())]
    assert crossed, "an edge crosses a box's name here"
    for group, edge in crossed:
        name = group.label_rect().adjusted(1, 1, -1, -1)
        with_edge = _picture(scene, name)
        edge.setVisible(False)
        without = _picture(scene, name)
        edge.setVisible(True)
        assert with_edge == without, f"the edge shows through the name of {group.path}"
