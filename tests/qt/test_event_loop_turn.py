"""EventLoopTurn: the slices of one turn of the event loop share its time budget."""

from __future__ import annotations

import time

from graphview.qt import event_loop_turn
from graphview.qt.event_loop_turn import BUDGET_S, PATIENCE, EventLoopTurn


def test_a_slice_finds_room_while_the_turn_has_time_and_waits_once_it_is_spent(qtbot):
    turn = EventLoopTurn()
    assert turn.room_for("pump", 0.004)  # the first ask after a rest starts a turn
    assert turn.beat.isActive()
    turn.started -= BUDGET_S  # as if the turn's time went on other slices and a repaint
    assert turn.left() <= 0
    waits = [turn.room_for("grow", 0.010) for _ in range(PATIENCE)]
    assert waits == [False] * PATIENCE
    assert turn.room_for("grow", 0.010)  # waited long enough: it runs anyway (nothing starves)
    assert not turn.room_for("grow", 0.010)  # ... and its count starts over


def test_the_next_pass_of_the_event_loop_that_runs_timers_starts_a_new_turn(qtbot):
    turn = EventLoopTurn()
    turn.left()
    turn.started -= 1.0
    assert turn.left() < 0
    qtbot.waitUntil(lambda: turn.left() > BUDGET_S / 2, timeout=2000)


def test_the_beat_stops_when_nothing_asks(qtbot, monkeypatch):
    monkeypatch.setattr(event_loop_turn, "BEAT_FOR_S", 0.05)
    turn = EventLoopTurn()
    turn.left()
    start = time.perf_counter()
    qtbot.waitUntil(lambda: not turn.beat.isActive(), timeout=2000)
    assert time.perf_counter() - start >= 0.05
