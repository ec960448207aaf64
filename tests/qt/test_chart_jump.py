"""A click on the memory chart moves the cursor as a step does: the canvas follows it there. At
1366x768, every module box of a Llama model open, a click near the start of the forward from the
backward's peak left the canvas blank (the view stayed where the peak's nodes were, none of them
made yet at the event clicked) until the next step."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, QRectF, Qt

from graphview.core import timeline
from graphview.core.options import RunOptions
from graphview.core.run import Run

LLAMA = ("import torch\n"
         "from transformers import LlamaConfig, LlamaForCausalLM\n"
         "torch.manual_seed(0)\n"
         "config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,\n"
         "                     num_key_value_heads=2, vocab_size=256, max_position_embeddings=64)\n"
         "model = LlamaForCausalLM(config)\n"
         "ids = torch.randint(0, 256, (2, 32))\n"
         "def step():\n"
         "    return model(input_ids=ids, labels=ids).loss\n")


@pytest.fixture(scope="module")
def llama_events(tmp_path_factory):
    """One step of a small Llama model, recorded once for the module."""
    from graphview.capture.script import run_script

    script = tmp_path_factory.mktemp("llama") / "llama_step.py"
    script.write_text(LLAMA, encoding="utf-8")
    events: list[dict] = []
    run_script(str(script), events.append, RunOptions(steps=1))
    assert events[-1]["ev"] == "run_end" and events[-1]["status"] == "ok"
    return events


def _click_chart(window, qtbot, index: int) -> None:
    """A left click on the memory chart at event ``index`` (halfway up its plot)."""
    chart = window.memory
    box = chart.plotItem.vb
    top = box.viewRange()[1][1]
    on_scene = box.mapViewToScene(QPointF(index, top / 2))
    at = chart.mapFromScene(on_scene)
    qtbot.mouseClick(chart.viewport(), Qt.LeftButton, pos=QPoint(at.x(), at.y()))


def _nodes_on_screen(window) -> list[str]:
    view = window.view
    port = view.mapToScene(view.viewport().rect()).boundingRect()
    return [item.node.title for item in window.scene.node_items.values()
            if item.isVisible() and port.intersects(item.sceneBoundingRect())]


def test_a_click_on_the_chart_brings_the_events_nodes_into_view(window, qtbot, llama_events):
    run = Run(list(llama_events))
    window.resize(1366, 768)
    window.begin_run(None, RunOptions(steps=1), run)  # as a trace is opened
    peak = timeline.next_backward_node(run, timeline.next_backward(run, 0))
    window.move(lambda run, cursor: peak)
    window.actions["open_all"].trigger()
    window.scene.boxes.settle()
    assert _nodes_on_screen(window)
    start = next(i for i in range(len(run.events)) if run.events.kind(i) == "step_start")
    forward = list(range(start + 1, timeline.next_backward(run, 0)))  # the step's forward
    made = [i for i in forward if run.events.kind(i) == "op"][:40]
    # ops early in the forward (their nodes far above the backward's), and events of no node
    # (a module entered, a tensor saved for backward, one the
    # run owns): the view follows the last node made before them
    later = forward[forward.index(made[20]):]
    nodeless = [next(i for i in later if run.events.kind(i) == kind) for kind in ("module_enter", "saved", "own")]
    assert len(made) == 40 and not any(window.scene.places_at_event(i, 4) for i in nodeless)
    for index in [made[5], made[20], made[39], *nodeless]:
        window.move(lambda run, cursor: peak)
        qtbot.wait(10)
        if index == made[5]:  # a real click: the event under the pointer, to a pixel's worth of events
            _click_chart(window, qtbot, index)
            assert abs(window.cursor - index) <= window.memory.plotItem.vb.viewPixelSize()[0] + 1
        else:  # what a click at the event sends
            window.memory.sigJump.emit(index)
            assert window.cursor == index
        window.scene.boxes.settle()
        port = QRectF(window.view.viewport().rect())
        place = window.scene.place_at_event(window.cursor)
        if place is not None:  # the node the event made, whole on screen
            assert port.contains(QRectF(window.view.mapFromScene(place).boundingRect())), (index, place)
        assert _nodes_on_screen(window), (index, run.events.kind(window.cursor))


def test_the_timeline_slider_brings_the_events_nodes_into_view(window, qtbot, llama_events):
    """Scrubbing set the cursor only: a jump back from the backward's peak to an early op of the
    forward left the canvas blank. A click on the slider's bar (or a key) follows at once; a drag
    follows when the slider is let go."""
    run = Run(list(llama_events))
    window.resize(1366, 768)
    window.begin_run(None, RunOptions(steps=1), run)
    peak = timeline.next_backward_node(run, timeline.next_backward(run, 0))
    window.actions["open_all"].trigger()
    start = next(i for i in range(len(run.events)) if run.events.kind(i) == "step_start")
    early = [i for i in range(start + 1, timeline.next_backward(run, 0)) if run.events.kind(i) == "op"][5]
    slider = window.timeline_bar.slider
    for dragged in (False, True):
        window.move(lambda run, cursor: peak)
        window.scene.boxes.settle()
        slider.setSliderDown(dragged)
        slider.setValue(early)  # what a click, a key or a drag does to it
        assert window.cursor == early
        if dragged:
            slider.setSliderDown(False)  # let go: sliderReleased
        window.scene.boxes.settle()
        place = window.scene.place_at_event(early)
        port = QRectF(window.view.viewport().rect())
        assert place is not None and port.contains(QRectF(window.view.mapFromScene(place).boundingRect())), dragged


def test_a_finding_with_no_node_of_its_own_brings_its_moment_into_view(window, qtbot, llama_events):
    """A Diagnostics finding moves the cursor to where it shows; one with a node centres on it, and
    one with none (or none drawn) left the view where it was: the canvas blank, as the chart's jump."""
    from graphview.core.diagnostics import Finding

    run = Run(list(llama_events))
    window.resize(1366, 768)
    window.begin_run(None, RunOptions(steps=1), run)
    peak = timeline.next_backward_node(run, timeline.next_backward(run, 0))
    window.actions["open_all"].trigger()
    window.move(lambda run, cursor: peak)
    window.scene.boxes.settle()
    start = next(i for i in range(len(run.events)) if run.events.kind(i) == "step_start")
    early = [i for i in range(start + 1, timeline.next_backward(run, 0)) if run.events.kind(i) == "op"][5]
    window.diagnostics.sigFinding.emit(Finding("a-moment", "a moment of the forward", None, "", "", early))
    window.scene.boxes.settle()
    assert window.cursor == early
    place = window.scene.place_at_event(early)
    port = QRectF(window.view.viewport().rect())
    assert place is not None and port.contains(QRectF(window.view.mapFromScene(place).boundingRect()))
