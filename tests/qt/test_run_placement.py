"""Where a run opens: at its start, the top of its graph in view; after "Run again", the same op."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF

from graphview.core import timeline
from graphview.core.options import RunOptions
from graphview.qt.run_placement import START_HINT
from tests.conftest import ROOT, lesson, model, zoo


def stream(window, qtbot, run, options, batch: int = 25) -> None:
    window.begin_run(run.start["script"], options)
    for start in range(0, len(run.events), batch):
        window.append_events(run.events[start:start + batch])
        qtbot.wait(1)
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)


def step_of(run, index: int) -> int:
    return max((s["step"] for s in run.steps if s["start"] <= index), default=0)


def test_a_run_opens_at_its_start_with_the_top_of_its_graph_in_view(window, record):
    run = record(model("transformer_block"))
    window.begin_run(run.start["script"], RunOptions(), run)
    assert window.cursor == 0
    assert window.view.message == START_HINT  # the empty canvas says what to do
    shown = window.view.mapToScene(window.view.viewport().rect()).boundingRect()
    items = list(window.scene.node_items.values())
    top = min(items, key=lambda i: i.sceneBoundingRect().top())
    assert shown.contains(top.sceneBoundingRect())
    # the whole graph as laid out (its module boxes shut) in view, or the top of the graph at the top
    assert shown.contains(window.scene.sceneRect()) or shown.top() <= top.sceneBoundingRect().top() <= shown.top() + 120
    assert window.view.transform().m11() >= 0.55  # names can be read
    # the first nodes the user steps onto are on screen without scrolling
    while window.scene.item_at_event(window.cursor) is None:
        window.move(timeline.step_forward)
    assert shown.contains(window.scene.item_at_event(window.cursor).sceneBoundingRect())


def test_the_empty_canvas_says_where_the_cursor_is_once_it_left_the_start(window, record, write_script):
    """A model's constructor runs ops that draw nothing yet (GPT-2's: sixty): stepping through them,
    the canvas said "The start of the run (event 0)" at event 18."""
    run = record(write_script(
        "import torch\n"
        "class Positions(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        torch.zeros(8).add_(1).mul_(2)  # scratch a constructor throws away\n"
        "        self.table = torch.nn.Embedding(8, 2)\n"
        "    def forward(self):\n"
        "        return self.table(torch.arange(8))\n"
        "loss = Positions()().sum()\n"
        "loss.backward()\n"))
    window.begin_run(run.start["script"], RunOptions(), run)
    assert window.view.shown_message() == START_HINT
    window.move(timeline.step_forward)
    assert window.cursor > 0 and not any(item.isVisible() for item in window.scene.node_items.values())
    said = window.view.shown_message()
    assert said.startswith(f"Nothing to draw yet at event {window.cursor} / {len(run.events) - 1}:") and "Next step" in said


def test_a_streamed_run_opens_at_its_start_too(window, record, qtbot):
    run = record(model("mlp_optimizer"), steps=2)
    stream(window, qtbot, run, RunOptions(steps=2))
    assert window.cursor == 0 and window.position_label.text().startswith(f" 0 / {len(run.events) - 1}")


def test_a_failed_run_opens_where_it_failed(window, record):
    run = record(lesson("error_backward_twice"))
    window.begin_run(run.start["script"], RunOptions(), run)
    assert run.errors and window.cursor == run.errors[0][0]


def rerun(window, qtbot, script, options, new_run, live: bool) -> None:
    """What "Run again" does: the window asks, then the new run begins (streamed or whole)."""
    window.sigRunRequested.emit(options)
    if live:
        stream(window, qtbot, new_run, options)
    else:
        window.begin_run(script, options, new_run)


def test_run_again_keeps_the_cursor_on_the_same_op_of_the_same_step(window, record, qtbot):
    first = record(model("mlp_optimizer"), steps=3)
    script = first.start["script"]
    window.begin_run(script, RunOptions(steps=3), first)
    # the second linear (layer 2) of step 2
    target = [i for i, op in first.ops if op["op"] == "linear" and step_of(first, i) == 2][1]
    window.set_cursor(target)
    for live in (False, True):
        window.set_cursor(target)
        detached = RunOptions(steps=3, detach_at=["model.0"])
        again = record(model("mlp_optimizer"), steps=3, detach_at=["model.0"])
        assert len(again.events) < len(first.events)  # the option changes every step's events
        rerun(window, qtbot, script, detached, again, live)
        expected = [i for i, op in again.ops if op["op"] == "linear" and step_of(again, i) == 2][1]
        assert expected != target
        assert window.cursor == expected, (live, window.cursor, expected)
        event = window.run.events[window.cursor]
        assert (event["op"], event["line"], event["module"]) == ("linear", 14, "model.2")
        # and back to the options of the first run: the same op again
        rerun(window, qtbot, script, RunOptions(steps=3), record(model("mlp_optimizer"), steps=3), live)
        assert window.cursor == target


def test_run_again_with_fewer_steps_goes_to_the_nearest_earlier_moment(window, record):
    first = record(model("mlp_optimizer"), steps=3)
    script = first.start["script"]
    window.begin_run(script, RunOptions(steps=3), first)
    window.set_cursor(next(i for i, op in first.ops if step_of(first, i) == 3))
    shorter = record(model("mlp_optimizer"), steps=2)
    rerun(window, qtbot=None, script=script, options=RunOptions(steps=2), new_run=shorter, live=False)
    assert window.cursor == shorter.steps[-1]["end"]  # the end of step 2, the last moment both runs have


def test_opening_a_file_again_starts_at_its_start(window, record):
    first = record(model("mlp_optimizer"), steps=3)
    window.begin_run(first.start["script"], RunOptions(steps=3), first)
    window.set_cursor(200)
    window.begin_run(first.start["script"], RunOptions(steps=3), record(model("mlp_optimizer"), steps=3))
    assert window.cursor == 0  # no "Run again" asked: a fresh start


def test_fit_centres_what_the_cursor_shows_even_to_one_side_of_the_whole_graph(window, record):
    """Where what the cursor shows is narrower than the whole run's graph and sits to one side of
    it (early in a step of the weight-sharing model, whose graph grows to the right later), Fit puts
    it in the middle of the canvas (the view was clamped to the scene's edge and drew it off centre)."""
    run = record(model("weight_sharing"), steps=3)
    window.begin_run(run.start["script"], RunOptions(steps=3), run)
    view, scene = window.view, window.scene
    whole = scene.sceneRect()
    aside = None
    for cursor in range(len(run.events)):
        window.set_cursor(cursor)
        shown = scene.shown_rect()
        if not shown.isNull() and abs(shown.center().x() - whole.center().x()) > 100:
            aside = cursor
            break
    assert aside is not None, "nothing the cursor shows sits to one side"
    view.fit()
    shown = scene.drawn_rect()  # (what the fit frames: the nodes and the badges they have)
    middle = view.mapFromScene(shown.center())
    port = view.viewport().rect()
    assert abs(middle.x() - port.center().x()) <= 3 and abs(middle.y() - port.center().y()) <= 3
    seen = view.mapToScene(port).boundingRect()
    assert seen.contains(shown)


def test_a_new_run_is_shown_in_its_own_scene_not_in_what_a_fit_widened_for_the_last(window, record):
    big = record(model("transformer_block"), steps=3)
    window.begin_run(big.start["script"], RunOptions(steps=3), big)
    window.set_cursor(len(big.events) - 1)
    window.view.fit()
    assert window.view.sceneRect() != window.scene.sceneRect()  # widened to centre the picture
    window.begin_run(big.start["script"], RunOptions(steps=3))  # a re-run starts: nothing recorded yet
    assert window.view.sceneRect() == window.scene.sceneRect()
    assert window.scene.boxes.took == 0.0  # (nor the pace at which the last run's boxes were found)


def test_fit_shows_everything_even_when_scroll_bars_come(window, record):
    """Whatever the cursor shows of the graph through a step's backward (what a fit frames: the
    graph in play, fit_rect), Fit shows all of it, down to WHOLE_SLACK of the readable zoom, or,
    where all of it would not read, all of its width at the smallest readable zoom. (Where the run's
    whole graph lies partly aside, scroll bars come at the zoom that fits and shrink the viewport:
    Fit then fits again, or the loss at the bottom was cut off under the horizontal bar.)"""
    from graphview.core.hierarchy import collapsed_at_level
    from graphview.qt.canvas.fit_rect import fit_rect
    from graphview.qt.canvas.view_fit import WHOLE_SLACK

    run = record(model("transformer_block"), steps=3)
    window.begin_run(run.start["script"], RunOptions(steps=3), run)
    view, scene = window.view, window.scene
    window.resize(1366, 768)
    window.show()  # (scroll bars of a hidden window never take room)
    scene.boxes.set_all(collapsed_at_level(scene.boxes.boxes, 1))
    for cursor in range(max(call.start for call in run.backwards.values()), len(run.events), 25):
        window.set_cursor(cursor)
        view.fit()
        seen = view.mapToScene(view.viewport().rect()).boundingRect()
        shown = fit_rect(scene)
        zoom, readable = view.transform().m11(), view.readable_scale()
        if abs(zoom - readable) > readable * 0.001:  # all of it: larger, or down to WHOLE_SLACK of readable
            assert zoom >= readable * WHOLE_SLACK * 0.999 and seen.contains(shown), cursor
        else:  # too tall to read whole: all of its width, readable
            assert seen.left() <= shown.left() and shown.right() <= seen.right(), cursor


def cut_at_the_edges(window) -> list[QRectF]:
    """Where the nodes and shut boxes the canvas's edges cut (part in view, part out of it) are."""
    from graphview.qt.canvas.view_fit import solid_rects

    view = window.view
    port = QRectF(view.viewport().rect())
    on_screen = [QRectF(view.mapFromScene(rect).boundingRect()) for rect in solid_rects(window.scene)]
    return [rect for rect in on_screen if rect.intersects(port) and not port.contains(rect)]


#: a script that fails in backward (an in-place op on a tensor ExpBackward0 saved) after a graph of 15 rows
FAILS_TALL = ("import torch\n"
              "p = torch.ones(3, requires_grad=True)\n"
              "q = p.exp()\n"
              "r = (q * 2).sin().cos().tanh().mul(3)\n"
              "q += 1\n"
              "(r.sum() + q.sum()).backward()\n")


def _opened_at_1366(window, qtbot, run, streamed: bool):
    """``run`` opened in a 1366x768 window: whole, or streamed as a live run comes."""
    window.resize(1366, 768)
    if streamed:
        stream(window, qtbot, run, RunOptions())
    else:
        window.begin_run(run.start["script"], RunOptions(), run)
    return run


@pytest.mark.parametrize("streamed", [False, True])
def test_a_run_opens_with_no_node_cut_at_the_canvas_edges(window, record, write_script, qtbot, streamed):
    """A pitfall that failed opened at its error on a laptop's screen (1366x768) with its last
    node cut in half at the bottom edge: a view showing part of a graph is moved by up to half a
    row so that its edges fall between nodes, the error's node kept in view; F does the same."""
    from graphview.qt.canvas.view_fit import clear_shift

    run = _opened_at_1366(window, qtbot, record(write_script(FAILS_TALL)), streamed)
    assert run.errors and window.cursor == run.errors[0][0]
    view = window.view
    assert view.transform().m11() == pytest.approx(view.readable_scale())  # (the whole would not read)
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert shown.height() < window.scene.shown_rect().height()  # part of the graph
    assert cut_at_the_edges(window) == []
    error = window.scene.place_at_event(window.cursor)
    assert shown.contains(error)
    window.actions["fit"].trigger()
    assert cut_at_the_edges(window) == []
    # the move: the least that clears both edges, within the limit, the kept span inside
    assert clear_shift(0, 100, [(90, 130)], None, 50) == -13  # up, past the block's top (and EDGE_ROOM)
    # 8 up (out of the block at the bottom) cuts the one at the top, 8 down the other way: 23 up clears both
    assert clear_shift(0, 100, [(95, 130), (-20, 5)], None, 50) == -23
    assert clear_shift(0, 100, [(30, 160)], None, 50) == 0  # no move of 50 or less clears it
    assert clear_shift(0, 100, [(90, 130)], (40, 95), 50) == 33  # not up: that would leave 87-95 of 40-95 out
    assert clear_shift(0, 100, [(90, 130), (-30, 5)], None, 20) == 8  # none clears both: one edge, the least move


def test_a_graph_that_nearly_reads_whole_is_shown_whole(window, record):
    """The chain rule lesson, 8 rows, at its end on a laptop's screen: at the readable zoom its
    bottom rows alone were shown, the leaf x and the .grad of 20 the lesson is about out of view;
    it fits whole at 94% of that zoom (its smallest text 8.5 px high, not 9), and is shown whole."""
    from graphview.qt.canvas.view_fit import WHOLE_SLACK

    run = record(lesson("chain_rule"))
    window.resize(1366, 768)
    window.begin_run(run.start["script"], RunOptions(), run)
    window.actions["to_end"].trigger()
    view, scene = window.view, window.scene
    port = QRectF(view.viewport().rect())
    zoom, readable = view.transform().m11(), view.readable_scale()
    assert WHOLE_SLACK * readable <= zoom < readable
    assert port.contains(QRectF(view.mapFromScene(scene.drawn_rect()).boundingRect()))
    x = next(item for item in scene.node_items.values() if item.isVisible() and item.node.title == "x")
    assert port.contains(QRectF(view.mapFromScene(x.mapRectToScene(x.drawn_rect())).boundingRect()))
    window.actions["back"].trigger()  # a step from there keeps the zoom (it reads)
    assert view.transform().m11() == zoom
    assert scene.place_at_event(window.cursor) is not None and view.halo_rect() is None  # no ring: it reads


@pytest.mark.parametrize("streamed", [False, True])
def test_a_generation_run_opens_on_its_graph_as_laid_out_with_its_boxes_shut(window, record, write_script, qtbot,
                                                                            streamed):
    """A GPT-2 generating under no_grad opens with its calls' boxes shut, and the items inside a
    shut box keep the places they had before it shut (thousands of units away). The opening view
    was worked out from those: the first → drew the model's box at the canvas's left edge, the
    view off to the right of the graph. It is centred on the graph as it is drawn."""
    from graphview.qt.canvas.first_drawn import draws_anything
    from graphview.qt.canvas.style import NODE_W
    from tests.qt.canvas.test_edge_labels import GENERATES

    run = _opened_at_1366(window, qtbot, record(write_script(GENERATES)), streamed)
    view, scene = window.view, window.scene
    assert window.cursor == 0 and scene.collapsed  # (its boxes shut)
    xs = [scene.place_of(node_id)[0] for node_id in scene.placed_ids()]
    left, right = min(xs) - NODE_W / 2, max(xs) + NODE_W / 2  # the graph as drawn: its nodes and shut boxes
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    assert seen.width() > right - left  # (it fits across)
    assert seen.left() <= left and right <= seen.right()
    assert seen.center().x() == pytest.approx((left + right) / 2, abs=NODE_W / 4)
    window.actions["step"].trigger()
    assert draws_anything(scene)
    box = next(group for group in scene.groups.values() if group.isVisible())
    drawn = view.mapFromScene(box.sceneBoundingRect()).boundingRect()
    port = view.viewport().rect()
    assert port.contains(drawn)
    # where the graph's middle is drawn, less how far the box lies left of it (not at the left edge)
    assert drawn.center().x() == pytest.approx(
        port.center().x() - (seen.center().x() - box.sceneBoundingRect().center().x()) * view.transform().m11(), abs=4)


def test_two_recordings_of_a_script_streamed_in_other_batches_draw_each_node_in_one_place(window, record, qtbot):
    """The T5 picture of the docs (scripts/screenshots.py) showed lm_head further left or right
    each time it was taken: the window takes a live run's events in batches as its timer finds
    them, and where a batch ended moved nodes (a side edge met the nodes of its batch already
    placed, a leaf's wait for a user ended at the end of a batch, a tensor whose op's event came in
    the next batch was drawn without its module). Two recordings of the script, streamed in batches
    of 7 events and of 333, draw every node alike (514 of its 817 were elsewhere)."""
    pytest.importorskip("transformers")
    places = []
    for batch in (7, 333):
        run = record(zoo("t5_seq2seq"), steps=1)
        stream(window, qtbot, run, RunOptions(steps=1), batch=batch)
        scene = window.scene
        places.append({node_id: scene.place_of(node_id) for node_id in scene.placed_ids()})
    assert len(places[0]) > 800
    moved = {node_id: (place, places[1].get(node_id)) for node_id, place in places[0].items()
             if places[1].get(node_id) != place}
    assert moved == {} and places[0].keys() == places[1].keys()
