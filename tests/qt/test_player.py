"""Play / pause: the cursor walks the timeline by steps; at the end, play starts again from the start."""

from __future__ import annotations

from graphview.core import timeline
from graphview.core.options import RunOptions
from tests.conftest import lesson


def test_playing_steps_forward_and_stops_at_the_end(window, record, qtbot):
    run = record(lesson("chain_rule"))
    window.begin_run(None, RunOptions(), run)
    window.set_cursor(0)
    window.player.speed.setValue(60)
    window.actions["play"].trigger()
    assert window.player.playing
    qtbot.waitUntil(lambda: window.cursor > 0, timeout=5000)
    assert window.cursor >= timeline.step_forward(run, 0)
    qtbot.waitUntil(lambda: not window.player.playing, timeout=20000)
    assert window.cursor == timeline.last(run)


def test_play_at_the_end_starts_from_the_start_and_pause_holds(window, record, qtbot):
    run = record(lesson("chain_rule"))
    window.begin_run(None, RunOptions(), run)
    window.set_cursor(timeline.last(run))
    window.player.toggle()
    assert window.cursor == 0 and window.player.playing
    window.player.toggle()
    held = window.cursor
    qtbot.wait(100)
    assert not window.player.playing and window.cursor == held
