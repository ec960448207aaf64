"""The open/shut state of the module boxes: levels, reveal, a growing big drawing's boxes found in
turns of the event loop, and a big drawing's boxes found on a thread after the scene is gone
(dropped, never delivered to it)."""

from __future__ import annotations

import shiboken6
from PySide6.QtWidgets import QApplication

from graphview.core import hierarchy
from graphview.core.hierarchy import box_lifetimes, collapsed_at_level
from graphview.qt.canvas import GraphScene, box_state
from tests.conftest import model


def _scene(record):
    run = record(model("transformer_block"), steps=1)
    scene = GraphScene()
    scene.set_run(run)
    scene.set_cursor(len(run.events) - 1)
    return scene


def test_each_level_shuts_the_boxes_of_that_level_and_reveal_opens_down_to_a_node(qtbot, record):
    scene = _scene(record)
    boxes = scene.boxes
    deepest = max(b.level for b in boxes.boxes) + 1
    assert boxes.level() == deepest and not boxes.collapsed
    boxes.change_level(-1)
    assert boxes.collapsed == collapsed_at_level(boxes.boxes, deepest - 1)
    boxes.set_all(collapsed_at_level(boxes.boxes, 0))
    assert boxes.level() == 0
    inner = next(b for b in boxes.boxes if b.level == deepest - 1)
    node = min(inner.members)
    assert node in boxes.layout.hidden_by
    assert boxes.reveal([node])
    assert boxes.layout is None or node not in boxes.layout.hidden_by
    assert scene.node_items[node].isVisible() == (node in scene.at_cursor.visible)
    boxes.change_level(None)
    # (every box open; at the run's end, past its last graph, only the nodes left are laid out)
    assert not boxes.collapsed and (boxes.layout is None or not boxes.layout.collapsed)


def test_boxes_found_on_a_thread_after_the_scene_is_gone_are_dropped(qtbot, record, monkeypatch):
    scene = _scene(record)
    monkeypatch.setattr(box_state, "BOXES_ON_A_THREAD_ABOVE", 0)
    monkeypatch.setattr(box_state, "SCROLLED_NOT_SHUT", 0)
    assert not scene.boxes.open_to_fit(lambda rows, columns: rows <= 3)  # shut later, on a thread
    assert scene.boxes.pending
    background = scene.boxes.state.background
    shiboken6.delete(scene)  # the window closed before the timer started the thread
    qtbot.wait(2 * box_state.THREAD_AFTER_PAINT_MS + 300)
    QApplication.processEvents()
    assert not shiboken6.isValid(scene) and not shiboken6.isValid(background)
    assert background.pending == 0  # the timer went with the scene: no thread was started for it


def test_a_big_finished_drawing_is_shut_to_fit_on_a_thread(qtbot, record, monkeypatch):
    scene = _scene(record)
    monkeypatch.setattr(box_state, "BOXES_ON_A_THREAD_ABOVE", 0)
    monkeypatch.setattr(box_state, "SCROLLED_NOT_SHUT", 0)
    with qtbot.waitSignal(scene.boxes.sigShutToFit, timeout=15000):
        scene.boxes.open_to_fit(lambda rows, columns: rows <= 3)
    assert scene.collapsed == collapsed_at_level(scene.boxes.boxes, 0)
    assert not scene.boxes.pending


def test_a_growing_big_drawing_finds_its_boxes_in_turns_of_the_event_loop(qtbot, record, monkeypatch):
    scene = _scene(record)
    found_at_once = [(b.key, b.members, b.level, b.parent) for b in scene.boxes.boxes]
    spans_at_once = dict(scene.boxes.state.spans) or box_lifetimes(scene.drawing, scene.boxes.boxes)
    monkeypatch.setattr(box_state, "BOXES_IN_TURNS_ABOVE", 0)
    monkeypatch.setattr(hierarchy, "STEP", 1)  # a pause after every node, row and box
    monkeypatch.setattr(hierarchy, "BOXES_A_STEP", 1)
    state = scene.boxes.state
    state.take([])
    state._placed = -1
    scene.boxes.refresh(in_turns=True)
    assert scene.boxes.pending and state.boxes == []  # not found here and now: in later turns
    qtbot.waitUntil(lambda: not scene.boxes.pending, timeout=15000)
    assert [(b.key, b.members, b.level, b.parent) for b in state.boxes] == found_at_once
    assert state.spans == spans_at_once and state.took > 0
