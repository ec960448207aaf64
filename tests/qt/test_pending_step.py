"""Stepping a run still being recorded: a step whose moment is not recorded yet waits for it."""

from __future__ import annotations

from graphview.core import timeline
from graphview.core.options import RunOptions
from tests.conftest import model


def first(run, kind: str, after: int = 0) -> int:
    return next(i for i, e in enumerate(run.events) if i > after and e["ev"] == kind)


def begin_live(window, qtbot, whole, upto: int) -> None:
    """A live run of ``whole``'s script that has sent its events before ``upto``, drawn."""
    window.begin_run(whole.start["script"], RunOptions(steps=2))
    window.append_events(whole.events[:upto])
    qtbot.waitUntil(lambda: window.runs.settled, timeout=10000)


def feed(window, qtbot, whole, start: int, stop: int, batch: int = 40) -> None:
    """The runner sends events ``start`` to ``stop`` in batches, a pass of the event loop apart."""
    for at in range(start, stop, batch):
        window.append_events(whole.events[at:min(stop, at + batch)])
        qtbot.wait(1)


def status(window) -> str:
    return window.statusBar().message()


def test_to_backward_before_the_backward_is_recorded_waits_for_it_and_goes_there(window, record, qtbot):
    whole = record(model("mlp_optimizer"), steps=2)
    backward = first(whole, "backward_start")
    begin_live(window, qtbot, whole, backward // 2)
    window.set_cursor(5)
    window.actions["to_backward"].trigger()
    # not parked at the newest event: the cursor stays, and the status bar says what it waits for
    assert window.cursor == 5
    assert status(window).startswith("waiting for the next backward to be recorded…")
    feed(window, qtbot, whole, backward // 2, backward)  # more of the forward: still waiting
    qtbot.waitUntil(lambda: window.runs.settled, timeout=10000)
    assert window.cursor == 5 and window.pending_step.waiting
    assert window.position_label.text().startswith(f" 5 / {backward - 1}")  # the run grew under it
    feed(window, qtbot, whole, backward, backward + 30)  # the backward arrives
    qtbot.waitUntil(lambda: window.cursor == backward, timeout=10000)
    assert whole.events[window.cursor]["ev"] == "backward_start"
    assert not window.pending_step.waiting and "waiting" not in status(window)
    feed(window, qtbot, whole, backward + 30, len(whole.events))  # the rest of the run leaves it there
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    assert window.cursor == backward


def test_end_of_step_and_next_step_wait_for_their_moment(window, record, qtbot):
    whole = record(model("mlp_optimizer"), steps=2)
    step_end = first(whole, "step_end")
    begin_live(window, qtbot, whole, step_end - 3)
    window.actions["end_step"].trigger()
    assert status(window).startswith("waiting for the end of the step to be recorded…")
    feed(window, qtbot, whole, step_end - 3, step_end + 1)
    qtbot.waitUntil(lambda: window.cursor == step_end, timeout=10000)
    window.actions["next_step"].trigger()  # the step has ended; the next one is not recorded yet
    assert window.cursor == step_end
    assert status(window).startswith("waiting for the next step to be recorded…")
    feed(window, qtbot, whole, step_end + 1, len(whole.events))
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    assert window.cursor == timeline.next_step(whole, step_end)
    assert whole.steps[1]["start"] < window.cursor < whole.steps[1]["end"]


def test_another_move_cancels_the_wait(window, record, qtbot):
    whole = record(model("mlp_optimizer"), steps=2)
    backward = first(whole, "backward_start")
    begin_live(window, qtbot, whole, backward - 10)
    window.set_cursor(3)
    window.actions["to_backward"].trigger()
    assert window.pending_step.waiting
    window.actions["step"].trigger()  # the user steps on instead
    moved = window.cursor
    assert moved == timeline.step_forward(whole, 3) and moved != 3
    assert not window.pending_step.waiting and "waiting" not in status(window)
    window.actions["to_backward"].trigger()
    window.timeline_bar.scrubbed.emit(7)  # ... or drags the timeline
    assert not window.pending_step.waiting and window.cursor == 7
    feed(window, qtbot, whole, backward - 10, len(whole.events))
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    assert window.cursor == 7  # the backward came, and the cursor stayed where the user put it


def test_a_run_that_ends_without_the_moment_says_so(window, record, qtbot):
    whole = record(model("mlp_optimizer"), steps=2)
    last_backward = max(call.start for call in whole.backwards.values())
    begin_live(window, qtbot, whole, last_backward + 5)
    window.set_cursor(last_backward + 1)
    window.actions["to_backward"].trigger()  # there is no backward after the last one
    assert status(window).startswith("waiting for the next backward to be recorded…")
    feed(window, qtbot, whole, last_backward + 5, len(whole.events))
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    assert window.cursor == len(whole.events) - 1
    assert status(window).startswith("the run ended without the next backward")
    assert not window.pending_step.waiting


def test_a_finished_run_steps_at_once(window, record):
    """A whole recording has nothing more to wait for: the step goes to its moment or the end."""
    whole = record(model("mlp_optimizer"), steps=2)
    window.begin_run(None, RunOptions(steps=2), whole)
    last_backward = max(call.start for call in whole.backwards.values())
    window.set_cursor(last_backward + 1)
    window.actions["to_backward"].trigger()
    assert window.cursor == len(whole.events) - 1 and not window.pending_step.waiting
    assert timeline.next_backward.find(whole, last_backward + 1) is None
