"""Fit with every module box open, early in a step: a model's parameters are drawn where their
layers will use them, rows below what the step has made so far. At 1366x768 on a Llama trace, 30
ops in, every box open, F showed the rows at the cursor off to one side of the graph's whole width
and F again (all of the graph) a one-pixel column, the last layers' weights taking the height."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF

from graphview.core import timeline
from graphview.core.drawing import SLOT_WIDTH
from graphview.core.options import RunOptions
from graphview.core.run import Run
from graphview.qt.actions import FIT_OVERVIEW_PART
from graphview.qt.canvas.fit_rect import in_play
from graphview.qt.canvas.view_fit import OVERVIEW_SMALLEST
from tests.qt.test_chart_jump import LLAMA


@pytest.fixture(scope="module")
def llama_events(tmp_path_factory):
    """One step of a small Llama model of four layers (the newcomer's), recorded once for the module."""
    from graphview.capture.script import run_script

    script = tmp_path_factory.mktemp("llama") / "llama_step.py"
    script.write_text(LLAMA.replace("num_hidden_layers=2", "num_hidden_layers=4"), encoding="utf-8")
    events: list[dict] = []
    run_script(str(script), events.append, RunOptions(steps=1))
    assert events[-1]["ev"] == "run_end" and events[-1]["status"] == "ok"
    return events


def _open_all_at(window, run: Run, index: int) -> None:
    window.resize(1366, 768)
    window.begin_run(None, RunOptions(steps=1), run)  # as a trace is opened
    window.move(lambda run, cursor: index)
    window.actions["open_all"].trigger()
    window.scene.boxes.settle()


def _port(window) -> QRectF:
    view = window.view
    return view.mapToScene(view.viewport().rect()).boundingRect()


def _made_so_far(window) -> list:
    """The items of the nodes shown that are part of the graph at the cursor (not the leaves that
    wait for their layer), whole."""
    scene = window.scene
    playing = in_play(scene)
    assert playing is not None  # (leaves wait below)
    return [scene.node_items[n] for n in playing if n in scene.node_items and scene.node_items[n].isVisible()]


def _ops(run: Run) -> list[int]:
    start = next(i for i in range(len(run.events)) if run.events.kind(i) == "step_start")
    return [i for i in range(start, timeline.next_backward(run, 0)) if run.events.kind(i) == "op"]


@pytest.mark.parametrize("op", [10, 15, 20])
def test_fit_early_in_a_step_frames_the_rows_at_the_cursor(window, llama_events, op):
    """F shows the rows round the cursor's node at the zoom that reads, centred across on what is
    drawn there (it was centred on the graph's width: 383 to 482 units, two columns, off)."""
    run = Run(list(llama_events))
    _open_all_at(window, run, _ops(run)[op])
    scene, view = window.scene, window.view
    window.actions["fit"].trigger()
    assert view.transform().m11() >= view.readable_scale()
    port = _port(window)
    place = scene.place_at_event(window.cursor)
    assert place is not None and port.contains(place)
    rows = [i.sceneBoundingRect() for i in _made_so_far(window) if i.sceneBoundingRect().intersects(port)]
    middle = (min(r.left() for r in rows) + max(r.right() for r in rows)) / 2
    # (a fit may move the view across by half a column so that no node is cut at its edges)
    assert abs(middle - port.center().x()) <= SLOT_WIDTH, (middle, port)


def test_fit_again_early_in_a_step_shows_all_that_the_step_made(window, llama_events):
    """F again: the graph made so far, small but seen; the weights of the layers to come, 30 ops
    in, made the whole a column 0.027 of the zoom that reads."""
    run = Run(list(llama_events))
    _open_all_at(window, run, _ops(run)[30])
    scene, view = window.scene, window.view
    shown = [i for i in scene.node_items.values() if i.isVisible()]
    made = _made_so_far(window)
    height = lambda items: max(i.sceneBoundingRect().bottom() for i in items) - min(i.sceneBoundingRect().top() for i in items)
    assert height(shown) > 3 * height(made)  # the weights of the layers to come lie far below
    window.actions["fit"].trigger()
    assert view.transform().m11() >= view.readable_scale()
    window.actions["fit"].trigger()
    zoom = view.transform().m11()
    assert OVERVIEW_SMALLEST <= zoom < view.readable_scale()
    port = _port(window)
    assert all(port.contains(i.sceneBoundingRect()) for i in made)


def test_fit_again_on_a_graph_too_tall_to_see_whole_shows_the_part_round_the_cursor(window, llama_events):
    """At the backward's start, every box open, the whole forward is part of the graph: 0.03 of the
    zoom that reads, fit whole, was a column of a pixel or two. Fit again goes no smaller than rows
    12 px apart, round the current node, and says so."""
    run = Run(list(llama_events))
    _open_all_at(window, run, timeline.next_backward(run, 0))
    view = window.view
    window.actions["fit"].trigger()
    assert view.transform().m11() >= view.readable_scale()
    window.actions["fit"].trigger()
    assert view.transform().m11() == pytest.approx(OVERVIEW_SMALLEST)
    assert window.statusBar().currentMessage() == FIT_OVERVIEW_PART
    place = window.scene.place_at_event(window.cursor)
    assert place is not None and _port(window).contains(place)
    window.actions["fit"].trigger()  # and F again shows its width, where it reads
    assert view.transform().m11() >= view.readable_scale()
