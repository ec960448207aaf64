"""An open module box's name is drawn above the edges: an edge that crosses it passes under it,
as a road under a map's label (drawn by the box, below the edges, two edges ran through
"encoder.layers.0.self_attn · MultiheadAttention")."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QImage, QPainter

from graphview.core import timeline
from graphview.qt.canvas.edges import EdgeItem
from graphview.qt.canvas.groups import GroupItem
from graphview.qt.formatting import elided
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


def _open_names(scene) -> list[tuple[GroupItem, QRectF, str]]:
    """Each open box shown, where its name sits and the text drawn there."""
    return [(group, group.label_rect(), elided(group.label(), GroupItem.LABEL_FONT, group.label_rect().width() - 4))
            for group in scene.groups.values() if group.isVisible() and not group.collapsed]


def _assert_inside_and_telling(scene) -> None:
    metrics = QFontMetricsF(GroupItem.LABEL_FONT)
    for group, label, text in _open_names(scene):
        # inside its frame, clear of the rounded corners; the text drawn fits the label
        assert group.rect.left() + 10 <= label.left() and label.right() <= group.rect.right() - 10, (group.path, label)
        assert metrics.horizontalAdvance(text) <= label.width() - 4, (group.path, text)
        # the informative part: the class name and the path's last part, whole
        last = group.box.path.split(".")[-1]
        assert (group.box.shown_kind or "") in text and (f"…{last} " in text or f".{last} " in text or text.startswith(last)), \
            (group.path, text)


def test_a_box_name_stays_inside_its_frame_and_keeps_its_type_and_last_part(canvas, record):
    # the what-if picture drew "encoder.… · MultiheadAttention" from the recomputed attention box's
    # frame to 122 units past it: moved right of "checkpoint recompute", the name kept its width
    run = record(model("transformer_block"), steps=1, checkpoint=["encoder.layers.*"])
    scene, view = canvas
    recomputed = next(i for i, e in enumerate(run.events) if e["ev"] == "op" and e.get("recompute"))
    show_at(canvas, run, recomputed)
    inner = next(g for g, _, _ in _open_names(scene) if g.box.path.startswith("checkpoint recompute."))
    assert inner.label_rect().width() > 150  # (room for more than "…self_attn")
    _assert_inside_and_telling(scene)
    # one level open, before backward: "encoder.layers.0 · TransformerEncoderLayer" in a box too narrow
    plain = record(model("transformer_block"), steps=1)
    show_at(canvas, plain, timeline.next_backward(plain, 0))
    scene.boxes.show_down_to(scene.boxes.keyed["encoder.layers.0"].level + 1)  # its modules shut
    assert any(g.box.path == "encoder.layers.0" and "…" in text for g, _, text in _open_names(scene))
    _assert_inside_and_telling(scene)


def test_a_nested_name_that_cannot_go_under_its_parents_gets_a_line_of_its_own(canvas, record):
    """Where a nested box's name cannot go under its parent's (a node in the way: the transformer's
    self_attn box, whose first row starts at its left), it goes on its bottom border, not right of
    the parent's on its line: 16 units apart, GPT-2's read as one title ("transformer.h.0.attn ·
    GPT2Attention transformer.h.0.attn.c_attn · Conv1D"), as 6 had before."""
    run = record(model("transformer_block"), steps=1)
    scene, view = canvas
    show_at(canvas, run, timeline.next_backward(run, 0))
    scene.boxes.set_all(set())  # every box open
    names = [(group, rect) for group, rect, _ in _open_names(scene)]
    beside = [(a.path, b.path) for a, ra in names for b, rb in names
              if a is not b and ra.top() < rb.bottom() and rb.top() < ra.bottom() and ra.left() <= rb.left()]
    assert beside == []
    attn = next(group for group, _ in names if group.path == "encoder.layers.0.self_attn")
    assert attn.label_below
    _assert_inside_and_telling(scene)


def test_a_name_on_a_bottom_border_keeps_a_line_from_the_next_boxs_name(canvas, record):
    """The README's retain_graph picture (the MLP sample run again with retain_graph, each name with
    both runs' bytes, just after the first backward): 'model.0 · Linear · 0 B → 0 B activations', too
    long to go under its parent's name, went onto its bottom border, 2 units above 'model.1 · ReLU ·
    …' on the next box's top border: the two read as one two-line label, the arrow into
    ReluBackward0 broken by both. A name on a bottom border keeps a line (its height) above and below
    it clear of every other name it would share a column with; a name cut short keeps its type
    ('model.1', its type dropped with the bytes after it, is 'model.1 · ReLU · …' now)."""
    from graphview.core.whatif import compare_runs, module_bytes_in_both

    earlier, run = record(model("mlp_optimizer")), record(model("mlp_optimizer"), retain_graph=True)
    scene, view = canvas
    show_at(canvas, run, next(i for i, e in enumerate(run.events) if e["ev"] == "backward_end"))
    scene.boxes.set_compared(module_bytes_in_both(earlier, run, compare_runs(earlier, run)[0].step))
    names = _open_names(scene)
    assert {g.box.path for g, _, _ in names} >= {"model", "model.0", "model.1", "model.2"}
    line = GroupItem.LABEL_H
    for group, label, _ in names:
        for other, place, _ in names:
            if other is group or not (group.label_below or other.label_below):
                continue
            if label.left() < place.right() and place.left() < label.right():  # one column
                gap = max(place.top() - label.bottom(), label.top() - place.bottom())
                assert gap >= line - 0.01, (group.path, other.path, gap)
    _assert_inside_and_telling(scene)


def test_a_selected_nodes_ring_breaks_round_a_box_name(canvas, record):
    """A search hit in a box's first row (GPT-2's c_attn weight, Ctrl+F "c_attn") drew its ring
    9 units above its box, across the name on the border above: the name is drawn as it is with
    the node not selected, and the ring is still drawn round the node."""
    from graphview.qt.canvas.style import NODE_H, NODE_W

    run = record(model("transformer_block"), steps=1)
    scene, view = canvas
    show_at(canvas, run, timeline.next_backward(run, 0))
    scene.boxes.set_all(set())  # every box open
    body = QRectF(-NODE_W / 2, -NODE_H / 2, NODE_W, NODE_H)
    near = [(item, rect) for item in scene.node_items.values() if item.isVisible()
            for _, rect, _ in _open_names(scene) if item.mapRectToScene(body.adjusted(-11, -11, 11, 11)).intersects(rect)]
    assert near, "a node's ring would cross a box's name here"
    for item, name in near[:4]:
        plain = _picture(scene, name)
        ring = _picture(scene, item.mapRectToScene(body.adjusted(-11, -11, 11, 11)))
        item.setSelected(True)
        assert _picture(scene, name) == plain, item.node.title
        assert _picture(scene, item.mapRectToScene(body.adjusted(-11, -11, 11, 11))) != ring  # (the ring is drawn)
        item.setSelected(False)
