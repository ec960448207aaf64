"""What a fit frames: the graph made so far at the cursor, without the leaves still waiting for
their first use.

A model's parameters exist from its first event and are drawn where their modules will use them,
so that nodes never move while stepping. Early in a step most of them wait below, rows and
rows down: on a four-layer Llama with every box open, 30 steps in, the nodes shown spanned 41,078
scene units (the last layer's weights, ``lm_head.weight``) where the graph made so far took 4,128,
and F framed a one-pixel column. A fit frames the nodes that are part of the graph (made by an
op, or a leaf some shown node uses already) and the shut boxes that hold one; the waiting leaves
stay where they are drawn. Where nothing is used yet (the run's first events), every node shown.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF


def in_play(scene) -> set[str] | None:
    """The node ids shown at the cursor that are part of the graph: every node with a
    predecessor, and every node a shown node has for one. None where that leaves none out (or on
    a big scene, whose nodes have no item each): the fit frames everything shown."""
    if scene.virtual or scene.drawing is None:
        return None
    visible = scene.at_cursor.visible
    nodes = scene.drawing.nodes
    used: set[str] = set()
    for node_id in visible:
        node = nodes.get(node_id)
        if node is None or not node.preds:
            continue
        used.add(node_id)
        used.update(p for p in node.preds if p in visible)
    if not used or len(used) == len(visible):
        return None
    return used


def fit_rects(scene) -> list[QRectF]:
    """Where the nodes :func:`in_play` and the shut boxes that hold one are drawn (each node's
    box and badges), with the cursor's node, in scene units; every node and shut box shown where no
    node is in play (empty: nothing shown)."""
    playing = in_play(scene)
    hidden = scene.boxes._hidden_by
    rects, boxes = [], set()
    for node_id, item in scene.node_items.items():
        if playing is not None and node_id not in playing:
            continue
        group = hidden.get(node_id)
        if group is not None:
            boxes.add(group)
        elif item.isVisible():
            rects.append(item.mapRectToScene(item.drawn_rect()))
    if playing is None:
        boxes = [group for group in scene.groups.values() if group.collapsed]
    rects += [group.sceneBoundingRect() for group in boxes if group.isVisible()]
    at_cursor = scene.place_at_event(scene.cursor)
    if at_cursor is not None and rects:
        rects.append(at_cursor)
    return rects


def fit_rect(scene, parts: list[QRectF] | None = None) -> QRectF:
    """The rect a fit frames (:func:`fit_rects` united, or ``parts``, those worked out already), in
    scene units; null: nothing shown. A big scene, whose nodes have no item each: :meth:`drawn_rect`."""
    if scene.virtual:
        return scene.drawn_rect()
    rect = QRectF()
    for part in fit_rects(scene) if parts is None else parts:
        rect = rect.united(part)
    return rect


def across_band(parts: list[QRectF] | None, top: float, bottom: float) -> tuple[float, float] | None:
    """The left and right of what a fit frames (``parts``: :func:`fit_rects`) between ``top`` and
    ``bottom`` (scene y): a view that shows those rows reads best centred on them, not on the graph's
    width, which rows far above or below may widen (None: nothing there, or a big scene: no parts)."""
    band = [r for r in parts or () if r.bottom() >= top and r.top() <= bottom]
    if not band:
        return None
    return min(r.left() for r in band), max(r.right() for r in band)
