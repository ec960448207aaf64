"""Which corner of the canvas the overview (minimap) sits in, kept while stepping.

It took the first corner, bottom right first, that covered none of the nodes being shown, at every
step: a GPT-2's loss node at the bottom right sent it to the bottom left while the cursor was on
the loss, and the next step (the cursor on the node above) brought it back over the loss node,
clipping it, and so on each step. Now it stays in its corner while that corner covers none of the
nodes being shown (the cursor's node, the selection); when it must move, it takes the free corner
that covers the least of the nodes drawn there, bottom right first among equals, and stays there.
The user puts it in another corner from its context menu (:func:`corner_menu`); it stays there too.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QRect
from PySide6.QtWidgets import QMenu, QWidget

from graphview.qt.canvas.groups import GroupItem
from graphview.qt.canvas.nodes import NodeItem


#: the corners, in the order of the overview's corners()
CORNER_NAMES = ("bottom right", "bottom left", "top right", "top left")


def corner_menu(overview: QWidget, put: Callable[[int], None]) -> QMenu:
    """The overview's context menu: a corner to move it to (``put(index)``), the one it is in checked."""
    menu = QMenu(overview)
    for index, name in enumerate(CORNER_NAMES):
        action = menu.addAction(f"Move to the {name} corner")
        action.setCheckable(True)
        action.setChecked(getattr(overview, "corner", None) == index)
        action.triggered.connect(lambda _checked=False, index=index: put(index))
    return menu


def pick_corner(boxes: list[QRect], keep_clear: list[QRect], current: int | None,
                covered: Callable[[QRect], float]) -> int | None:
    """The index of the corner (of ``boxes``, the minimap's place in each, in order of preference)
    to sit in: ``current`` while its box meets none of ``keep_clear``; else, of the boxes that meet
    none, the one ``covered`` says covers least (the first of equals); None where every box meets one."""
    free = [i for i, box in enumerate(boxes) if not any(box.intersects(rect) for rect in keep_clear)]
    if current in free:
        return current
    if not free:
        return None
    return min(free, key=lambda i: (covered(boxes[i]), i))


def drawn_area(view, box: QRect) -> float:
    """How much of ``box`` (viewport pixels) the nodes and shut module cards drawn in ``view`` cover
    (each one's overlap with it; an open box's outline is no node)."""
    total = 0.0
    for item in view.items(box):
        if item.isVisible() and (isinstance(item, NodeItem) or (isinstance(item, GroupItem) and item.collapsed)):
            overlap = view.mapFromScene(item.sceneBoundingRect()).boundingRect().intersected(box)
            total += max(0, overlap.width()) * max(0, overlap.height())
    return total
