"""The canvas draws an op given one tensor three times (``torch.stack([h, h, h])``) with one arrow
marked "×3", not three arrows on top of each other; torch's ``next_functions`` says how many."""

from __future__ import annotations

from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter

from graphview.capture.recorder import VID_KEY
from tests.qt.canvas.conftest import shown_canvas
from graphview.qt.canvas.edges import LabeledEdgeItem

SCRIPT = """
import torch

w = torch.ones(2, requires_grad=True)
h = w.exp()
out = torch.stack([h, h, h])
out.sum().backward()
"""


def test_parallel_edges_are_one_arrow_marked_with_their_count(qtbot, record, tmp_path):
    path = tmp_path / "stack.py"
    path.write_text(SCRIPT)
    keep: dict = {}
    run = record(path, keep=keep)
    fn = keep["out"].grad_fn
    entries = len([child for child, _ in fn.next_functions if child is not None])
    assert entries == 3

    scene, view = shown_canvas(qtbot, 900, 700)
    scene.set_run(run)
    scene.set_cursor(len(run.events) - 1)
    stack_op = f"op{fn.metadata[VID_KEY]}"
    into = [item for item in scene.edges_into(stack_op) if item.edge.kind == "flow"]
    assert len(into) == 1
    assert isinstance(into[0], LabeledEdgeItem) and into[0].label == f"×{entries}"
    assert into[0].source.node.ref == run.tensor_by_name("h")  # from the tensor h

    # the mark is painted: the scene around the arrow looks different without it
    def picture() -> QImage:
        rect = into[0].sceneBoundingRect()
        image = QImage(int(rect.width()), int(rect.height()), QImage.Format_ARGB32)
        image.fill(0)
        painter = QPainter(image)
        scene.render(painter, QRectF(image.rect()), rect)  # at scale 1: labels are drawn
        painter.end()
        return image

    marked = picture()
    into[0].label = ""
    into[0].update()
    assert picture() != marked
