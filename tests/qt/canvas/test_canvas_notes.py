"""What the canvas says when there is little to draw: between steps and after the run autograd
holds no graph, and a shut box whose nodes were destroyed says so instead of "0 ops"."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QFontMetricsF

from graphview.core.run import ACCUMULATE_GRAD
from graphview.core.hierarchy import collapsed_at_level
from graphview.qt.canvas.groups import CARD_TEXT_W, GroupItem
from graphview.qt.canvas.card_now import running_line
from graphview.qt.canvas.canvas_notes import NOTHING_AT_END, NOTHING_YET, START_HINT, shown_message
from tests.conftest import SAMPLES, model
from tests.qt.canvas.conftest import show_at, shown_canvas


def test_the_start_hint_says_where_the_cursor_is_once_it_has_moved_on():
    assert shown_message(START_HINT, 0, 120) == START_HINT
    assert shown_message(START_HINT, 60, 120) == NOTHING_YET.format(index=60, last=119)
    assert "event 60 / 119" in shown_message(START_HINT, 60, 120)
    assert shown_message(START_HINT, 5, None) == NOTHING_YET.format(index=5, last=5)  # (no drawing yet)
    assert shown_message(START_HINT, 119, 120, ended=True) == NOTHING_AT_END.format(index=119)
    assert shown_message(START_HINT, 119, 120) == NOTHING_YET.format(index=119, last=119)  # (a live run's newest)
    failed = "The script failed before its first op."
    assert shown_message(failed, 60, 120) == failed  # any other message stays as it is


def _ink(view) -> dict[str, int]:
    """How many of the viewport's pixels are in the canvas's problem red and in its plain-note grey."""
    from graphview.qt.canvas.style import colors

    image = view.viewport().grab().toImage()
    wanted = {key: colors().q(key).rgb() & 0xFFFFFF for key in ("message", "subtitle")}
    counts = dict.fromkeys(wanted, 0)
    for y in range(image.height() // 3, image.height() * 2 // 3):  # (the note is in the middle)
        for x in range(0, image.width(), 2):
            pixel = image.pixel(x, y) & 0xFFFFFF
            for key, rgb in wanted.items():
                counts[key] += pixel == rgb
    return counts


def test_the_start_hint_is_a_plain_note_and_a_problem_is_red(canvas, qtbot):
    """The start of a run read as an error to a newcomer: its hint was in the red of a run that
    stopped before autograd recorded anything. It is in the grey of the canvas's plain text."""
    scene, view = canvas
    view.set_message(START_HINT)
    qtbot.wait(20)
    hint = _ink(view)
    assert hint["subtitle"] > 20 and hint["message"] == 0, hint
    view.set_message("The script stopped at line 3 before autograd recorded anything")
    qtbot.wait(20)
    problem = _ink(view)
    assert problem["message"] > 20 and problem["subtitle"] == 0, problem


def test_the_canvas_says_when_no_graph_is_alive(canvas, record):
    run = record(model("mlp_optimizer"), steps=2)
    scene, view = canvas
    scene.set_run(run)
    grad_fns = [op for op in run.op_nodes.values() if op.name != ACCUMULATE_GRAD]
    # torch destroys each step's graph once nothing references its loss: after the run, none is alive
    assert all(op.dead is not None for op in grad_fns)
    first_step_end = run.steps[0]["end"]
    step_one = [op for op in grad_fns if op.born <= first_step_end]
    between = max(op.dead for op in step_one)  # step 1's graph is gone, step 2's not begun
    assert all(op.born > between for op in grad_fns if op not in step_one)
    scene.set_cursor(between)
    assert scene.graph_gone_at() == between
    scene.set_cursor(len(run.events) - 1)
    assert scene.graph_gone_at() == max(op.dead for op in grad_fns)
    # while a graph is alive (before backward of step 1), or before any op: nothing to say
    scene.set_cursor(min(call.start for call in run.backwards.values()))
    assert scene.graph_gone_at() is None
    scene.set_cursor(0)
    assert scene.graph_gone_at() is None


def test_a_shut_box_whose_graph_is_gone_says_so(canvas, record):
    run = record(model("mlp_optimizer"), steps=1)
    scene, view = canvas
    scene.set_run(run)
    scene.boxes.set_all(collapsed_at_level(scene.boxes.boxes, 0))
    scene.set_cursor(min(call.start for call in run.backwards.values()))
    shut = [g for g in scene.groups.values() if g.isVisible() and g.collapsed]
    assert shut and all(g.summary().endswith(("ops", "op", "activations", "weights")) for g in shut)
    scene.set_cursor(len(run.events) - 1)
    shut = [g for g in scene.groups.values() if g.isVisible() and g.collapsed]
    assert shut, "its parameters are alive: the box still holds them"
    assert {g.summary() for g in shut} == {"no graph now"}


def test_a_shut_box_of_a_call_under_no_grad_says_it_made_no_graph(canvas, record, write_script):
    """A model generating under no_grad: each call's box said "no graph now", as if backward had
    destroyed a graph that was never made. It says what it holds and that it made no graph."""
    from tests.qt.canvas.test_follow import GENERATES

    run = record(write_script(GENERATES))
    scene, view = canvas
    scene.set_run(run)
    scene.boxes.set_all(collapsed_at_level(scene.boxes.boxes, 0))
    scene.set_cursor(len(run.events) - 1)
    shut = [g for g in scene.groups.values() if g.isVisible() and g.collapsed]
    assert len(shut) == 4  # the model's four calls
    for group in shut:
        assert group.ops == 0 and group.members > 1
        assert not any(scene.drawing.nodes[m].kind in ("op", "accumulate") for m in group.box.members)
        assert group.summary() == f"{group.members} tensors, no graph"


def test_a_grad_the_script_read_as_none_says_none_on_its_tensor(canvas, record):
    """``print(h.grad)`` of a non-leaf prints None: once the script has read it, h's pill says so
    (before, it says nothing: an unread .grad is no news); x, a leaf, shows the 24 torch computes."""
    import torch

    import warnings

    x = torch.tensor(3.0, requires_grad=True)
    h = x * 2
    (h ** 2).backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch warns that h is not a leaf: the pitfall itself)
        assert x.grad.item() == 24.0 and h.grad is None  # torch: the oracle
    run = record(SAMPLES / "pitfalls" / "grad_none_non_leaf.py")
    scene, view = canvas
    scene.set_run(run)
    items = {item.node.title: item for item in scene.node_items.values()}
    read = run.none_grad_reads[items["h"].node.ref]
    scene.set_cursor(read - 1)
    assert items["h"].grad is None and items["x"].grad == "24"
    scene.set_cursor(len(run.events) - 1)
    assert items["h"].grad == "None"


def test_a_shut_box_shows_the_op_that_ran_inside_it_in_forward(canvas, record):
    """Stepping forward through a shut box: the box whose module made the op at the cursor is
    marked and names the op (an open box shows its new node; a shut one changed nothing but a count)."""
    run = record(model("transformer_block"), steps=1)
    scene, view = canvas
    scene.set_run(run)
    scene.boxes.set_all(collapsed_at_level(scene.boxes.boxes, 0))
    index, op = next((i, e) for i, e in enumerate(run.events)
                     if e["ev"] == "op" and (e.get("module") or "").startswith("encoder.layers.0") and e.get("grad_fn"))
    scene.set_cursor(index)
    shut = {g.path: g for g in scene.groups.values() if g.isVisible() and g.collapsed}
    card = shut["encoder.layers.0"]
    # "19 ops · now transpose" read as half a sentence: the line says the op is running, within the card
    assert card.now == op["op"] and card.summary() == f"{card.ops} op{'s' * (card.ops != 1)} · running: {op['op']}"
    assert QFontMetricsF(card.LABEL_FONT).horizontalAdvance(card.summary()) <= CARD_TEXT_W
    assert card.card_lines(CARD_TEXT_W)[2][1] == card.summary()  # (drawn whole, not elided)
    assert all(g.now is None for path, g in shut.items() if path != "encoder.layers.0")
    scene.set_cursor(index + 1 if run.events[index + 1]["ev"] != "op" else index - 1)
    assert all(g.now is None for g in scene.groups.values())


def test_a_shut_cards_running_op_keeps_its_name_whole_before_the_count(record):
    """Each op of the transformer sample on a card of 122 ops: the line reads "122 ops · running: op"
    where that fits the card, else "running: op" (the op's name is what the line is for)."""
    run = record(model("transformer_block"), steps=1)
    metrics = QFontMetricsF(GroupItem.LABEL_FONT)
    ops = {e["op"] for e in run.events if e["ev"] == "op"}
    lines = {op: running_line("122 ops", op, GroupItem.LABEL_FONT, CARD_TEXT_W) for op in ops}
    for op, line in lines.items():
        whole = f"122 ops · running: {op}"
        assert line == (whole if metrics.horizontalAdvance(whole) <= CARD_TEXT_W else f"running: {op}"), line
    assert any(line.startswith("running:") for line in lines.values())  # (a long name: scaled_dot_product_attention)


@pytest.mark.parametrize("saved", [149 * 1024, 160.4 * 1024, 16.4 * 1024, 999.9 * 1024 ** 2, 7, 123 * 1024 ** 3])
def test_a_saved_badge_keeps_its_unit(saved, qtbot):
    """An LSTM layer's node holds 149 KiB for backward: its badge read 'saved 149.0 …', elided
    before the unit. Badges give three figures and have the room for them."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QFontMetricsF

    from graphview.qt.canvas.nodes import SAVED_BADGE_LEFT, badge_font, badge_room
    from graphview.qt.formatting import short_bytes

    text = f"saved {short_bytes(saved)}"
    room = badge_room(SAVED_BADGE_LEFT)  # as NodeItem._badge gives a left-aligned badge
    assert QFontMetricsF(badge_font()).elidedText(text, Qt.ElideRight, room) == text
    assert text.endswith(("B", "KiB", "MiB", "GiB"))


def test_the_no_graph_note_covers_nothing_drawn_where_a_place_is_clear(canvas, record):
    """After a step, the leaves of a model opened a level down sit in its module boxes: the note
    takes a place where it hides no node, no edge and no box's frame or name (it was put over the
    name of a box at the bottom, which read through it), narrower where that makes room."""
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QFont

    from graphview.qt.canvas.canvas_notes import GRAPH_GONE, graph_gone_note_rect
    from graphview.qt.canvas.edges import EdgeItem
    from graphview.qt.canvas.groups import GroupItem, solid

    run = record(model("mlp_optimizer"), steps=2)
    scene, view = canvas
    # the end of the first step (the run's end shows its leaves alone, compact)
    show_at(canvas, run, next(i for i, ev in enumerate(run.events) if ev["ev"] == "step_end"))
    view.change_level(1)
    view.fit()  # (the graph's width around the last node made: the leaves at the bottom)
    view.verticalScrollBar().setValue(view.verticalScrollBar().minimum())  # its top, where the leaves begin
    gone = scene.graph_gone_at()
    assert gone is not None
    note = graph_gone_note_rect(view, GRAPH_GONE.format(event=gone), QFont("DejaVu Sans", 9))
    in_scene = view.mapToScene(note.toRect()).boundingRect()
    shown = [item for item in scene.items() if item.isVisible()]
    boxes = [item for item in shown if isinstance(item, GroupItem) and not item.collapsed]
    assert boxes, "opened a level down: the model's boxes are drawn open"
    assert not any(solid(item) and item.sceneBoundingRect().intersects(in_scene) for item in shown)
    assert not any(isinstance(item, EdgeItem) and item.sceneBoundingRect().intersects(in_scene) for item in shown)
    for box in boxes:
        assert not box.label_rect().intersects(in_scene)
        assert box.rect.adjusted(6, 6, -6, -6).contains(in_scene) or not box.rect.adjusted(-2, -2, 2, 2).intersects(in_scene)
    # the widest note at the top's middle would hide a node: where it goes matters here
    top_middle = QRectF(view.viewport().rect().center().x() - 220, 10, 440, 60)
    assert any(solid(item) for item in view.items(top_middle.toRect()))


def test_a_shut_card_running_in_backward_reads_in_full(canvas, record):
    """A shut box whose nodes backward is running lights up; its name is not drawn faded as a
    freed card's is, even where backward already freed some of what it saved."""
    run = record(model("checkpointing"), steps=1)
    scene, view = canvas
    show_at(canvas, run, 0)
    scene.boxes.set_all(collapsed_at_level(scene.boxes.boxes, 0))
    call = min(run.backwards.values(), key=lambda c: c.start)
    seen_running = seen_freed_running = False
    for index in range(call.start, call.end + 1):
        scene.set_cursor(index)
        for card in (g for g in scene.groups.values() if g.isVisible() and g.collapsed):
            if card.running:
                seen_running = True
                seen_freed_running |= card.freed
                assert not card.faded()
            elif card.freed and card.now is None:
                assert card.faded()
    assert seen_running and seen_freed_running


def test_where_no_place_is_clear_the_note_keeps_off_the_overview_and_the_box_names(qtbot, record):
    """Every box of the checkpointing sample open, after a step, on the canvas of a 1366x768 window:
    no place is clear of boxes' frames.
    The note was put over the overview in the corner (which hid its words) or over a box's name:
    it takes a narrower place that crosses only a frame."""
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QFont

    from graphview.qt.canvas.canvas_notes import GRAPH_GONE, graph_gone_note_rect
    from graphview.qt.canvas.groups import GroupItem, solid

    run = record(model("checkpointing"), steps=2)
    canvas = shown_canvas(qtbot, 1032, 615)  # (the canvas of the window at 1366x768)
    scene, view = canvas
    show_at(canvas, run, len(run.events) - 1)
    scene.boxes.set_all(set())  # every box open
    view.fit()
    view.overview.redraw()
    view.overview.sync()
    assert view.overview.isVisible()
    note = graph_gone_note_rect(view, GRAPH_GONE.format(event=scene.graph_gone_at()), QFont("DejaVu Sans", 9))
    assert not note.intersects(QRectF(view.overview.geometry()))
    in_scene = view.mapToScene(note.toRect()).boundingRect()
    shown = [item for item in scene.items() if item.isVisible()]
    assert not any(solid(item) and item.sceneBoundingRect().intersects(in_scene) for item in shown)
    assert not any(isinstance(item, GroupItem) and not item.collapsed and item.label_rect().intersects(in_scene)
                   for item in shown)
