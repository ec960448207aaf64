"""BoxLabelsItem: the names of open module boxes, drawn above the edges.

An open box's name sits on its top border (or, where an enclosing box's name leaves it no room
there, its bottom one), breaking the dashed line. Drawn by the box itself,
below the edges (a box is drawn behind what it holds), an edge that crossed the name ran through
its words ("encoder.layers.0.self_attn · MultiheadAttention" crossed by two edges). This one item
draws every open box's name, on the canvas's background, above the edges and below the nodes:
an edge passes under a name as a road under a map's label. It paints only the names in the band of
the scene being painted, found by the heights of the names (kept sorted where the names are
placed: ``BoxItems.place_labels``), not through the scene's index of items, which a picture
rendered right after the boxes changed (an export) found out of date.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QPainterPath
from PySide6.QtWidgets import QGraphicsItem

from graphview.qt.canvas.groups import GroupItem
from graphview.qt.canvas.style import colors
from graphview.qt.formatting import elided

#: above the edges (1), below the nodes (2)
LABELS_Z = 1.5


class BoxLabelsItem(QGraphicsItem):
    """Paints the name of every open module box in view (see the module's docstring)."""

    def __init__(self, scene) -> None:
        super().__init__()
        self._scene = scene
        self._bounds = QRectF()
        self.setZValue(LABELS_Z)
        self.setAcceptedMouseButtons(Qt.NoButton)  # (a click goes to the box, as before)
        self.setFlag(QGraphicsItem.ItemUsesExtendedStyleOption, True)  # paint() learns what is exposed
        scene.addItem(self)

    def changed(self) -> None:
        """The scene's rect changed: the area names may be in."""
        bounds = self._scene.sceneRect()
        if bounds != self._bounds:
            self.prepareGeometryChange()
            self._bounds = QRectF(bounds)
        self.update()

    def boundingRect(self) -> QRectF:
        return self._bounds

    def shape(self) -> QPainterPath:  # (nothing to hit: hovering and clicks reach the boxes and edges below)
        return QPainterPath()

    def paint(self, painter, option, widget=None) -> None:
        if option.levelOfDetailFromTransform(painter.worldTransform()) <= 0.3:
            return  # (as the boxes' outlines alone: a name too small to read is not drawn)
        exposed = option.exposedRect if option.exposedRect.isValid() else self._bounds
        if painter.hasClipping():  # scene.render (the overview, exports): its clip says what is drawn
            clip = painter.clipBoundingRect()
            if clip.isValid():
                exposed = exposed.intersected(clip)
        reach = GroupItem.LABEL_H  # (a name is centred on its box's border)
        c = colors()
        painter.setFont(GroupItem.LABEL_FONT)
        for box in self._scene.boxes.named_between(exposed.top() - reach, exposed.bottom() + reach):
            if box.collapsed or not box.isVisible():
                continue
            label = box.label_rect()
            if not label.intersects(exposed) or label.width() <= 0:
                continue
            painter.setPen(Qt.NoPen)
            painter.setBrush(c.q("background"))  # the scene's background: the border and edges break for the name
            painter.drawRect(label)
            painter.setPen(c.q("group_label"))
            painter.drawText(label, Qt.AlignCenter, elided(box.label(), GroupItem.LABEL_FONT, label.width() - 4))
