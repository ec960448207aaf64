"""How readable the canvas is as a view shows it: the height on screen of the texts it shows, and
the share of its width the graph takes. Tests and ``benchmarks/bench_readability.py`` ask these;
the window never does.

A text's height is its font's size in screen pixels (the em: ``pointSize * dpi / 72 * zoom``),
the measure :meth:`GraphView.readable_scale` keeps at 9 px or more. A text is counted when its
item is shown and lies, at least in part, inside the viewport, whether or not the zoom is large
enough for the item to paint it (a box drawn without its text is no more readable than its text).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF
from PySide6.QtGui import QFont

from graphview.qt.canvas.edges import EdgeItem
from graphview.qt.canvas.groups import GroupItem
from graphview.qt.canvas.nodes import NodeItem, badge_font, title_font
from graphview.qt.canvas.style import SMALLEST_TEXT_PT

if TYPE_CHECKING:
    from graphview.qt.canvas.view import GraphView


def _fonts_of(item) -> list[QFont]:
    """The fonts of the texts an item paints (at a zoom where it paints them)."""
    small = QFont("DejaVu Sans", SMALLEST_TEXT_PT)
    if isinstance(item, NodeItem):
        fonts = [title_font(item.node.title)]
        if item.node.subtitle:
            fonts.append(small)
        if item.saved > 0 or item.grad is not None:  # its saved bytes, its gradient (or NaN note)
            fonts.append(badge_font())
        return fonts
    if isinstance(item, GroupItem):
        return [item.title_font(), small] if item.collapsed else [GroupItem.LABEL_FONT]
    if isinstance(item, EdgeItem) and item.label:
        return [small]
    return []


def label_heights(view: GraphView) -> list[float]:
    """The height on screen, in pixels, of every text of the shown items inside the viewport."""
    port = view.viewport().rect()
    zoom = view.transform().m11()
    dpi = view.logicalDpiY()
    heights = []
    for item in view.items(port):
        if not item.isVisible():
            continue
        for font in _fonts_of(item):
            heights.append(font.pointSizeF() * dpi / 72.0 * zoom)
    return heights


def smallest_label(view: GraphView) -> float | None:
    """The smallest text height on screen (pixels) in the viewport; None when it shows no text."""
    heights = label_heights(view)
    return min(heights) if heights else None


def width_share(view: GraphView) -> float:
    """The share (0 to 1) of the viewport's width that what is shown at the cursor takes on screen."""
    shown = view.scene().shown_rect()
    port = QRectF(view.viewport().rect())
    if shown.isNull() or port.isEmpty():
        return 0.0
    on_screen = view.mapFromScene(shown).boundingRect()
    return QRectF(on_screen).intersected(port).width() / port.width()
