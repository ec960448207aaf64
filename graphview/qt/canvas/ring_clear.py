"""A node's marks (the selection's ring, the running or failed glow) stay clear of the open module
boxes' names: a search hit in a box's first row (GPT-2's ``c_attn`` weight and bias, Ctrl+F
"c_attn") drew its ring 9 units above its box, across ``transformer.h.0.attn · GPT2Attention`` on
the border above. The names are drawn below the nodes (an edge passes under a name, a node's box
stays whole: :mod:`graphview.qt.canvas.box_labels`); the marks break where a name is, as they
break round the saved badge."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QPainter, QPainterPath


def names_near(item, reach: QRectF) -> list[QRectF]:
    """The names of the open boxes shown that cross ``reach`` (the item's coordinates), in the
    item's coordinates."""
    scene = item.scene()
    boxes = getattr(scene, "boxes", None)
    if boxes is None:
        return []
    around = item.mapRectToScene(reach)
    return [item.mapRectFromScene(group.label_rect())
            # (by the middle of its name's height: a name that crosses is within half a name of it)
            for group in boxes.named_between(around.top() - around.height(), around.bottom() + around.height())
            if not group.collapsed and group.isVisible() and group.label_rect().intersects(around)]


def clip_marks(painter: QPainter, item, bounds: QRectF, reach: QRectF, cut: QPainterPath) -> None:
    """Clip ``painter`` (within any clip already set: a PDF's page) to ``bounds`` less ``cut`` (the
    saved badge's pill) and the boxes' names within ``reach`` of the node (item coordinates)."""
    for name in names_near(item, reach):
        cut.addRect(name)
    if cut.isEmpty():
        return
    keep = QPainterPath()
    keep.addRect(bounds)
    painter.setClipPath(keep.subtracted(cut), Qt.IntersectClip)
