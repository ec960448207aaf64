"""Edges into and out of shut boxes: a generation loop under no_grad, its model's calls shut,
reads the first call's weights from each later one. Those edges run one way (box to box): they
say their ops once, with how many they are, not a pile of labels over each other, and they run
down a lane between columns rather than across the nodes between the boxes."""

from __future__ import annotations

from graphview.core.hierarchy import collapsed_at_level
from graphview.core.run import Run
from graphview.core.text import LABEL_CHARS
from tests.core.test_no_grad_layout import GENERATE
from tests.qt.canvas.conftest import shown_canvas


def _shut(qtbot, record, write_script):
    keep: dict = {}
    run = record(write_script(GENERATE), keep=keep)
    return _shut_run(qtbot, run), keep


def _shut_run(qtbot, run):
    scene, _view = shown_canvas(qtbot, 1000, 700)
    scene.set_run(run)
    scene.set_cursor(len(run.events) - 1)
    scene.boxes.set_all(collapsed_at_level(scene.boxes.boxes, 0))
    qtbot.waitUntil(lambda: not scene.boxes.gliding)
    scene.edge_labels.settle()
    return scene


def _ends(edge) -> tuple:
    path = edge.path()
    start, end = path.pointAtPercent(0.0), path.pointAtPercent(1.0)
    return round(start.x()), round(start.y()), round(end.x()), round(end.y())


def test_edges_from_one_shut_box_to_another_say_their_ops_once(qtbot, record, write_script):
    scene, keep = _shut(qtbot, record, write_script)
    between = {}
    for edge in scene.labeled_edges():
        if edge.isVisible() and edge.rerouted:
            between.setdefault(_ends(edge), []).append(edge)
    bundles = [same for same in between.values() if len(same) > 1]
    assert bundles
    weights = sum(1 for _ in keep["model"].body.parameters())  # torch: what each call of the body reads
    for same in bundles:
        labelled = [edge for edge in same if edge.label]
        assert len(labelled) == 1
        ops = list(dict.fromkeys(edge.edge.label for edge in same))
        assert labelled[0].label.startswith(", ".join(ops[:3])) and labelled[0].label.endswith(f"×{len(same)}")
    groups = scene.boxes.layout.hidden_by
    into_second_call = [same for same in bundles if groups.get(same[0].edge.target) == "body#2"
                        and groups.get(same[0].edge.source) == "body"]
    assert [len(same) for same in into_second_call] == [weights]


def test_an_edge_from_a_shut_box_runs_around_the_nodes_between(qtbot, record, write_script):
    scene, _keep = _shut(qtbot, record, write_script)
    nodes = [item for item in scene.node_items.values() if item.isVisible()]
    far = [edge for edge in scene.edge_items if edge.isVisible() and edge.rerouted]
    assert far
    for edge in far:
        path = edge.path()
        points = [path.pointAtPercent(k / 100) for k in range(3, 98)]
        for node in nodes:
            if node in (edge.source, edge.target):
                continue
            # (a lane is half a column from a node's centre, a few pixels apart from the others in
            # it: a node, a little wider than half a column each side, may touch its edge)
            body = node.sceneBoundingRect().adjusted(24, 4, -24, -4)
            assert not any(body.contains(point) for point in points), (edge.edge.source, node.node.title)


def test_labels_from_a_trace_with_long_op_names_stay_short_plain_and_on_one_line(qtbot, record, write_script):
    # a trace is someone else's data: an op's name may be any string of up to 4,096 characters. Said
    # whole, a label of a bundle named three of them: some 12,000 characters on two lines, wider than
    # 70,000 px
    events = [dict(event) for event in record(write_script(GENERATE)).events]
    for event in events:
        if event["ev"] == "op":
            event["op"] = f"{event['op']}\n<b>{'x' * 4000}</b>"
    scene = _shut_run(qtbot, Run(events))
    labels = [edge.label for edge in scene.labeled_edges() if edge.isVisible() and edge.label]
    bundles = [label for label in labels if " ×" in label]
    assert labels and bundles
    for label in labels:
        assert label.isprintable() and "<b>" in label  # one line, its text as it is (no markup read)
        assert len(label) <= 3 * LABEL_CHARS + 20, len(label)  # three names cut, the count
    for label in bundles:
        names = label.rpartition(" ×")[0].split(", ")
        assert all(len(name) == LABEL_CHARS and name.endswith("…") for name in names if name != "…")
