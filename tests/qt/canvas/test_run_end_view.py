"""The canvas at a run's end: past its last graph, only the leaves and what the script kept are
left; they are laid out without the rows and columns the freed graph took, so that the window (and
F) frames them all at a zoom that reads, on a laptop's screen. While a step is stepped through,
every node stays at its drawing place."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF

from graphview.core import timeline
from graphview.core.drawing import LAYER_HEIGHT
from graphview.core.options import RunOptions
from graphview.core.run import ACCUMULATE_GRAD, Run
from graphview.qt.canvas.style import NODE_H, NODE_W
from graphview.qt.canvas.view_fit import WHOLE_SLACK
from tests.conftest import model
from tests.qt.canvas.conftest import show_at

STEPS = 3
#: a node's box, in its item's coordinates
BODY = QRectF(-NODE_W / 2, -NODE_H / 2, NODE_W, NODE_H)


@pytest.fixture(scope="module")
def mlp_events():
    """The MLP sample's events, three steps, recorded once for the module."""
    from graphview.capture.script import run_script

    events: list[dict] = []
    run_script(model("mlp_optimizer"), events.append, RunOptions(steps=STEPS))
    assert events[-1]["ev"] == "run_end" and events[-1]["status"] == "ok"
    return events


def _last_graph_dead(run: Run) -> int:
    """When autograd freed the last node of the last graph (AccumulateGrad outlives graphs)."""
    return max(op.dead for op in run.op_nodes.values() if op.name != ACCUMULATE_GRAD)


def _not_framed(view) -> list[str]:
    """The shown nodes whose drawing (box and badges) is not wholly on screen."""
    port = view.mapToScene(view.viewport().rect()).boundingRect()
    return [item.node.title for item in view.scene().node_items.values()
            if item.isVisible() and not port.contains(item.mapRectToScene(item.drawn_rect()))]


def test_at_the_runs_end_the_window_and_fit_frame_every_node_left_readable(window, mlp_events):
    """A newcomer at 1366x768 pressed End on the MLP sample and saw model.2's leaves alone, and F
    kept them alone: model.0's leaves sat 12 rows above, out of view."""
    run = Run(list(mlp_events))
    window.resize(1366, 768)
    window.begin_run(run.start["script"], RunOptions(steps=STEPS), run)
    window.actions["to_end"].trigger()
    view, scene = window.view, window.scene
    scene.boxes.settle()  # (the nodes glide to their places)
    shown = {item.node.title for item in scene.node_items.values() if item.isVisible()}
    assert {"model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias", "inputs", "targets"} <= shown
    assert _not_framed(view) == []
    window.actions["fit"].trigger()
    assert _not_framed(view) == []
    assert view.transform().m11() >= WHOLE_SLACK * view.readable_scale()  # its text reads
    assert window.statusBar().currentMessage() == ""  # (no "Fit shows the graph's width")


def test_nodes_keep_their_places_while_stepping_and_the_runs_end_drops_the_empty_rows(canvas, mlp_events):
    run = Run(list(mlp_events))
    scene, view = canvas
    show_at(canvas, run, 0)
    end = timeline.last(run)
    dead = _last_graph_dead(run)
    assert dead < end  # (the optimizer's step and the run's end come after)
    for index in range(end + 1):
        scene.set_cursor(index)
        view.set_cursor(index)
        scene.boxes.settle()
        moved = [i.node.title for i in scene.node_items.values() if (i.pos().x(), i.pos().y()) != (i.node.x, i.node.y)]
        if index < dead:
            assert moved == [], index  # stepping never moves a node
    # at the end: the rows the freed graph took are gone, the leaves' order kept
    shown = [item for item in scene.node_items.values() if item.isVisible()]
    rows = sorted({item.pos().y() for item in shown})
    assert len(rows) >= 3 and all(b - a == LAYER_HEIGHT for a, b in zip(rows, rows[1:]))
    drawn_rows = sorted({item.node.y for item in shown})
    assert drawn_rows[-1] - drawn_rows[0] > rows[-1] - rows[0]  # the drawing spread them wider
    by_drawing = sorted(shown, key=lambda item: (item.node.y, item.node.x))
    assert [item.pos().y() for item in by_drawing] == sorted(item.pos().y() for item in by_drawing)
    # back into the last step: every node at its drawing place again
    scene.set_cursor(dead - 1)
    view.set_cursor(dead - 1)
    scene.boxes.settle()
    assert all((i.pos().x(), i.pos().y()) == (i.node.x, i.node.y) for i in scene.node_items.values())
    assert scene.boxes.layout is None


def test_the_boxes_go_round_the_nodes_where_they_glided_to(canvas, mlp_events):
    run = Run(list(mlp_events))
    scene, view = canvas
    show_at(canvas, run, _last_graph_dead(run) - 1)
    scene.set_cursor(timeline.last(run))
    assert scene.boxes.gliding  # the nodes glide to their places at the run's end...
    scene.set_cursor(scene.cursor)  # (...and a view that scrolled meanwhile had the scene look again)
    scene.boxes.settle()
    open_boxes = [(key, group) for key, group in scene.boxes.groups.items() if group.isVisible() and not group.collapsed]
    assert len(open_boxes) >= 2  # model, model.0, model.2
    for key, group in open_boxes:
        members = [scene.node_items[m] for m in scene.boxes.keyed[key].members if m in scene.node_items]
        shown = [item for item in members if item.isVisible()]
        assert shown
        for item in shown:
            assert group.sceneBoundingRect().contains(item.mapRectToScene(BODY)), (key, item.node.title)


def test_the_overview_pictures_the_nodes_where_they_glided_to(canvas, mlp_events, qtbot):
    """The run's end on a canvas whose overview had no picture yet (its first is taken at once):
    it pictured the six leaves where the whole graph had them, 12 rows apart, and kept it."""
    run = Run(list(mlp_events))
    scene, view = canvas
    show_at(canvas, run, _last_graph_dead(run) - 1)
    view.overview.pixmap = None
    scene.set_cursor(timeline.last(run))
    assert scene.boxes.gliding
    view.set_cursor(timeline.last(run))
    qtbot.waitUntil(lambda: not scene.boxes.gliding, timeout=3000)
    qtbot.waitUntil(lambda: view.overview.pixmap is not None, timeout=3000)
    assert view.overview.source == scene.shown_rect().adjusted(-40, -40, 40, 40)


#: a plain script (no step function) that trains two steps, then frees its loss, resets .grad
#: and frees its inputs: each of these comes after the last graph died, one event apart
FREED_AFTER = """\
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(3, 4)
y = torch.randn(3, 2)
extra = torch.randn(3, 2)
for _ in range(2):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean() + (extra * 0).sum()
    loss.backward()
    opt.step()
del loss
opt.zero_grad(set_to_none=True)
del x
del extra
"""


@pytest.fixture(scope="module")
def freed_after_events(tmp_path_factory):
    """FREED_AFTER's events, recorded once for the module."""
    from graphview.capture.script import run_script

    path = tmp_path_factory.mktemp("freed") / "freed_after.py"
    path.write_text(FREED_AFTER)
    events: list[dict] = []
    run_script(str(path), events.append, RunOptions())
    assert events[-1]["ev"] == "run_end" and events[-1]["status"] == "ok"
    return events


def test_past_the_last_graph_nodes_glide_once_whatever_the_script_frees_after(canvas, freed_after_events):
    """Past the last graph's death, an input freed or a .grad reset changes what is shown: the
    nodes left took new places at each (x, y, extra and model.2's leaves moved again at the
    tensor_dead of x); they glide once, at the graph's death, and stay till the end."""
    run = Run(list(freed_after_events))
    scene, view = canvas
    end, dead = timeline.last(run), _last_graph_dead(run)
    show_at(canvas, run, dead)
    scene.boxes.settle()
    assert scene.boxes.layout is not None  # (compact from the graph's death)
    places = {node_id: (item.pos().x(), item.pos().y()) for node_id, item in scene.node_items.items()}
    shown_at_dead = {node_id for node_id, item in scene.node_items.items() if item.isVisible()}
    kinds = {run.events[i]["ev"] for i in range(dead + 1, end + 1)}
    assert {"tensor_dead", "grad_reset"} <= kinds  # (what the script frees after: it changes what is shown)
    for index in range(dead + 1, end + 1):
        scene.set_cursor(index)
        view.set_cursor(index)
        scene.boxes.settle()
        moved = [item.node.title for node_id, item in scene.node_items.items()
                 if node_id in places and (item.pos().x(), item.pos().y()) != places[node_id]]
        assert moved == [], (index, run.events[index]["ev"])
    shown_at_end = {node_id for node_id, item in scene.node_items.items() if item.isVisible()}
    assert shown_at_end < shown_at_dead  # (the inputs freed are hidden in their places)
