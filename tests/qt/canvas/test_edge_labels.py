"""Edge labels (the op of an edge no gradient flows along) stand clear of each other and of the
nodes: two edges between the same tensors (a mask made from a tensor, then written into it, as
Whisper's decoder does to its labels) carried labels written over each other at their middles."""

from __future__ import annotations

from itertools import combinations

from PySide6.QtCore import QRectF

from graphview.qt.canvas.edge_labels import EdgeLabels
from graphview.qt.canvas.edges import LabeledEdgeItem
from graphview.qt.canvas.nodes import NodeItem
from tests.qt.canvas.conftest import show_at, shown_canvas

SCRIPT = """
import torch

w = torch.ones(3, requires_grad=True)
ids = torch.tensor([[1, 0, 2], [0, 2, 1]])
shifted = ids.new_zeros(ids.shape)
shifted[:, 1:] = ids[:, :-1].clone()
shifted.masked_fill_(shifted == 0, 2)
loss = (w * shifted.float()).sum()
loss.backward()
"""


def _at_the_middle(edge: LabeledEdgeItem) -> QRectF:
    return edge.label_rect_at(0.5, right=True)


def _shown(qtbot, record, tmp_path):
    path = tmp_path / "mask.py"
    path.write_text(SCRIPT)
    run = record(path)
    scene, _view = shown_canvas(qtbot, 1000, 700)
    scene.set_run(run)
    scene.set_cursor(len(run.events) - 1)
    return scene


def test_labels_are_placed_clear_of_each_other_and_of_nodes(qtbot, record, tmp_path):
    scene = _shown(qtbot, record, tmp_path)
    labeled = [edge for edge in scene.labeled_edges() if edge.isVisible()]
    assert {"__eq__", "masked_fill_"} <= {edge.label for edge in labeled}
    # at their middles, two of them would be written over each other
    assert any(_at_the_middle(a).intersects(_at_the_middle(b)) for a, b in combinations(labeled, 2))

    qtbot.waitUntil(lambda: not any(a.label_rect.intersects(b.label_rect) for a, b in combinations(labeled, 2)))
    nodes = [item for item in scene.items() if isinstance(item, NodeItem) and item.isVisible()]
    for edge in labeled:
        assert not any(node.mapToScene(node.shape()).intersects(edge.label_rect) for node in nodes), edge.label
        assert edge.boundingRect().contains(edge.label_rect)  # painted where Qt repaints it


def test_a_label_moves_with_its_edge(qtbot, record, tmp_path):
    scene = _shown(qtbot, record, tmp_path)
    scene.edge_labels.settle()
    edge = next(edge for edge in scene.labeled_edges() if edge.isVisible())
    before = QRectF(edge.label_rect)
    edge.setPath(edge.path().translated(40, 25))
    assert edge.label_rect == before.translated(40, 25)  # where it was along the edge, moved with it


BLOCKS = """
import torch

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4))

    def forward(self, h):
        return (h * self.w).masked_fill(h > 0, 0.0) + h.detach()

model = torch.nn.Sequential(*[Block() for _ in range(6)])
loss = model(torch.randn(4)).sum()
loss.backward()
"""


def test_labels_are_placed_once_the_nodes_stop_gliding(qtbot, record, tmp_path, monkeypatch):
    """A box shut with a glide routes its edges again at every frame: each label follows its
    edge meanwhile, and they are placed together once, when the nodes stand still (placing them
    at every frame took 35-50 ms a frame with 240 labels)."""
    path = tmp_path / "blocks.py"
    path.write_text(BLOCKS)
    run = record(path)
    canvas = shown_canvas(qtbot, 1000, 700)
    scene, _view = canvas
    show_at(canvas, run, len(run.events) - 1)
    qtbot.waitUntil(lambda: not scene.boxes.pending)
    scene.boxes.set_all(set())
    show_at(canvas, run, len(run.events) - 1)
    labeled = [edge for edge in scene.labeled_edges() if edge.isVisible()]
    assert len(labeled) >= 10
    scene.edge_labels.settle()
    placed_while = []
    place = EdgeLabels.place
    monkeypatch.setattr(EdgeLabels, "place", lambda self: (placed_while.append(scene.boxes.gliding), place(self)))
    scene.boxes.set_collapsed("model.1", True, animate=True)
    assert scene.boxes.gliding
    qtbot.waitUntil(lambda: not scene.boxes.gliding and False in placed_while, timeout=3000)
    # at most the minimap's picture (its own 300 ms timer) came during the glide; a frame placed none
    assert placed_while.count(True) <= 1 and placed_while[-1] is False
    shown = [edge for edge in scene.labeled_edges() if edge.isVisible()]
    assert not any(a.label_rect.intersects(b.label_rect) for a, b in combinations(shown, 2))


def test_an_item_used_again_for_another_edge_starts_with_its_label_at_the_middle(qtbot, record, tmp_path):
    scene = _shown(qtbot, record, tmp_path)
    scene.edge_labels.settle()
    moved = next((edge for edge in scene.labeled_edges() if edge.label_spot != LabeledEdgeItem.label_spot), None)
    assert moved is not None  # (one of them had to move: see the test above)
    other = next(edge for edge in scene.labeled_edges() if edge.label != moved.label)
    moved.bind(other.edge, other.source, other.target)
    assert moved.label_spot == LabeledEdgeItem.label_spot
    assert moved.label_rect == moved.label_rect_at(*LabeledEdgeItem.label_spot)  # its new label's width


#: a 2-layer GPT-2 from a random config generating 4 tokens, greedily, under no_grad
GENERATES = ("import torch\n"
             "from transformers import GPT2Config, GPT2LMHeadModel\n"
             "torch.manual_seed(0)\n"
             "model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=50))\n"
             "model.eval()\n"
             "ids = torch.tensor([[1, 2, 3]])\n"
             "with torch.no_grad():\n"
             "    for _ in range(4):\n"
             "        logits = model(ids).logits\n"
             "        nxt = logits[:, -1].argmax(-1, keepdim=True)\n"
             "        ids = torch.cat([ids, nxt], dim=1)\n")


def test_a_label_of_many_edges_leaves_the_gap_between_two_rows_to_the_edge_that_crosses_it(qtbot, record, write_script):
    """Each call of a model generating under no_grad, its box shut, reads the weights the first
    call's box holds: one label says those edges ("embedding, layer_norm, addmm ×28"). It took the
    gap between the generated ids and the next call's box, and that edge's own label ("view") was
    written over it. The edges between nodes a row apart are labelled first."""
    run = record(write_script(GENERATES))
    scene, view = shown_canvas(qtbot, 1000, 700)
    end = len(run.events) - 1
    show_at((scene, view), run, end)
    scene.boxes.open_to_fit(view.readable_fit())  # (as the window opens a finished run: boxes shut to read)
    scene.edge_labels.settle()
    labeled = [edge for edge in scene.labeled_edges() if edge.isVisible() and edge.label]
    bundles = [edge for edge in labeled if "×" in edge.label]
    views = [edge for edge in labeled if edge.label == "view"]
    assert len(bundles) >= 3 and len(views) >= 3  # (a bundle of weights and a "view" into each later call)
    overlapping = [(a.label, b.label) for a, b in combinations(labeled, 2) if a.label_rect.intersects(b.label_rect)]
    assert overlapping == []
    nodes = [item for item in scene.items() if isinstance(item, NodeItem) and item.isVisible()]
    for edge in labeled:
        assert not any(node.mapToScene(node.shape()).intersects(edge.label_rect) for node in nodes), edge.label


def _lines_crossing(scene, edge: LabeledEdgeItem, rect: QRectF) -> list[str]:
    """What crosses ``rect`` (a spot of ``edge``'s label) of the lines drawn: another edge shown
    (not one on the same route: a bundle's edges share its label), an open box's frame or name."""
    from PySide6.QtGui import QPainterPathStroker

    def ends(item) -> tuple:
        path = item.path()
        return tuple(round(v) for p in (path.pointAtPercent(0.0), path.pointAtPercent(1.0)) for v in (p.x(), p.y()))

    crossing = []
    stroker = QPainterPathStroker()
    for other in scene.edge_items:
        if other is edge or not other.isVisible() or ends(other) == ends(edge):
            continue
        stroker.setWidth(other.pen().widthF())
        if other.mapToScene(stroker.createStroke(other.path())).intersects(rect):
            crossing.append(f"edge {other.label or other.edge.kind}")
    for group in scene.groups.values():
        if group.isVisible() and not group.collapsed:
            frame = group.mapRectToScene(group.rect)
            if frame.intersects(rect) and not frame.contains(rect) or group.mapRectToScene(group.label_rect()).intersects(rect):
                crossing.append(f"box {group.key}")
    return crossing


def _clear_spot(scene, edge: LabeledEdgeItem, labeled: list[LabeledEdgeItem]) -> QRectF | None:
    """A spot of ``edge``'s label that meets no node or shut box, no other label (nor the room
    kept around one) and no line, if it has one."""
    from graphview.qt.canvas.edge_labels import ALONG, GAP
    from graphview.qt.canvas.groups import solid

    solids = [item.mapToScene(item.shape()) for item in scene.items() if solid(item)]
    for along in ALONG:
        for right in (True, False):
            for below in (False, True):
                rect = edge.label_rect_at(along, right, below)
                if any(shape.intersects(rect) for shape in solids) or any(
                        other.label_rect.adjusted(-GAP / 2, -GAP / 2, GAP / 2, GAP / 2).intersects(rect)
                        for other in labeled if other is not edge):
                    continue
                if not _lines_crossing(scene, edge, rect):
                    return rect
    return None


def test_a_label_is_put_where_no_line_crosses_it_where_such_a_spot_is_free(qtbot, record, write_script):
    """A label is painted on the background's colour, cutting whatever line runs under it: the
    no_grad lesson's "linear" sat on its Linear box's top frame, two others on the arrows into
    the box's outputs; a GPT-2 generating under no_grad had "linear" and "__getitem__" on the
    lane of the generated ids' "cat". A label goes where no other edge's line nor an open box's
    frame or name crosses it, where such a spot is free of nodes and labels; else as before."""
    from tests.conftest import lesson

    crossed_somewhere = 0
    for script in (lesson("no_grad_inference"), write_script(GENERATES)):
        run = record(script)
        scene, view = shown_canvas(qtbot, 1000, 700)
        show_at((scene, view), run, len(run.events) - 1)
        scene.boxes.open_to_fit(view.readable_fit())
        scene.edge_labels.settle()
        labeled = [edge for edge in scene.labeled_edges() if edge.isVisible() and edge.label]
        assert len(labeled) >= 8
        for edge in labeled:
            crossing = _lines_crossing(scene, edge, edge.label_rect)
            if crossing:
                crossed_somewhere += 1
                assert _clear_spot(scene, edge, labeled) is None, (script, edge.label, crossing)
    assert crossed_somewhere  # (where every spot is crossed, one still is)


LONG_EDGE_SCRIPT = """
import torch

w = torch.ones(4, requires_grad=True)
t = torch.arange(4.0)
c = t.cos()
for _ in range(6):
    c = c * 2
s = t.sin()
loss = (w * (c + s)).sum()
loss.backward()
"""


def test_a_long_edges_label_stands_by_its_arrowhead(qtbot, record, tmp_path):
    """A Llama's rotary positions, every box open: "sin", the label of an edge 12 rows long, stood
    at its middle, rows from the op's input and its output, beside nothing. Here t.sin() waits
    seven rows for t.cos()'s chain: its label goes by the tensor sin made, within a row and a half."""
    from graphview.core.drawing import LAYER_HEIGHT

    path = tmp_path / "long_edge.py"
    path.write_text(LONG_EDGE_SCRIPT)
    run = record(path)
    scene, _view = shown_canvas(qtbot, 1000, 700)
    scene.set_run(run)
    scene.set_cursor(len(run.events) - 1)
    scene.edge_labels.settle()
    edge = next(e for e in scene.labeled_edges() if e.isVisible() and e.path().length() > 4 * LAYER_HEIGHT)
    head = edge.mapToScene(edge.path().pointAtPercent(1.0))
    tail = edge.mapToScene(edge.path().pointAtPercent(0.0))
    label = edge.mapRectToScene(edge.label_rect)
    assert head.y() - tail.y() > 5 * LAYER_HEIGHT  # (a long edge, down)
    assert head.y() - 1.5 * LAYER_HEIGHT - 16 <= label.center().y() <= head.y(), (label, head)
