"""Stepping past what draws nothing: a model's constructor runs ops (GPT-2's: about 60) whose
tensors wait, inside the model's shut box, for the forward that uses them, so a newcomer pressed
→ sixty times at an empty canvas and read it as a dead app; ← from the first op drawn walked back
through them as long, and Play showed them one by one for seconds. Step (→), Step back (←) and
Play pass over a run of stops where the canvas draws nothing at once: → and Play to the next stop
that draws something, ← to the previous one, or the start."""

from __future__ import annotations

from typing import Callable

from graphview.core import timeline
from graphview.core.run import Run

#: the stops looked through for one that draws something, at most (a press then lands on the last of them)
PROBED_STOPS = 2000


def draws_anything(scene) -> bool:
    """Whether the canvas draws a node or a module box at the scene's cursor."""
    return (any(item.isVisible() for item in scene.node_items.values())
            or any(group.isVisible() for group in scene.groups.values()))


def step(scene, run: Run, cursor: int, forward: bool, go: Callable[[int], None]) -> None:
    """Step from ``cursor`` (where the scene is) one stop forward, or back, by ``go(index)``, passing
    over the stops where the canvas draws nothing: from a moment that draws nothing, straight to the
    nearest stop that way that draws something or where the script failed (back: or the start;
    forward: or the end); from one that draws something, one stop, and on in the same way where that
    stop draws nothing. A live or a big run, where the scene knows only part of what is drawn, steps
    one stop as ever."""
    one = timeline.step_forward(run, cursor) if forward else timeline.step_back(run, cursor)
    if _draws_nothing(scene, cursor):
        found = _nearest_drawn(scene, run, cursor, forward)
        go(one if found is None else found)
        return
    go(one)
    if _draws_nothing(scene, one) and not is_error(run, one):  # the stop it led onto draws nothing: on past it
        found = _nearest_drawn(scene, run, one, forward)
        if found is not None:
            go(found)


def _draws_nothing(scene, cursor: int) -> bool:
    """The scene is at ``cursor``, knows all that is drawn there (a finished run, not a big one) and
    draws nothing."""
    if scene.live or scene.virtual or scene.drawing is None or scene.cursor != cursor:
        return False
    return not draws_anything(scene)


def _nearest_drawn(scene, run: Run, cursor: int, forward: bool) -> int | None:
    """The nearest stop after ``cursor`` (``forward``), or before it, at which the canvas draws
    something or the script failed; the end (the start) where none does before it. Looked for
    through at most :data:`PROBED_STOPS` stops (the last of them, where none of them draws
    anything: each press gets that far on), never across a backward call (forward, past the next
    one's start; back, before the last one's end), the scene moved to each to look: None, with the
    scene back at ``cursor``, where a backward call comes first."""
    if forward:
        one_stop, end, bound = timeline.step_forward, timeline.last(run), timeline.next_backward(run, cursor)
    else:
        one_stop, end, bound = timeline.step_back, 0, last_backward_end(run, cursor)
    probe = cursor
    for _ in range(PROBED_STOPS):
        following = one_stop(run, probe)
        if following == probe or (following > bound if forward else following < bound):
            break
        probe = following
        scene.set_cursor(probe)
        if probe == end or draws_anything(scene) or is_error(run, probe):
            return probe
    else:  # as far as it looks, nothing drawn: there (the next press looks on from it, not from one stop on)
        return probe
    if probe != cursor:
        scene.set_cursor(cursor)
    return None


def is_error(run: Run, index: int) -> bool:
    """Whether the script failed at event ``index``: a stop worth landing on, drawn or not."""
    return run.events.kind(index) == "error"


def last_backward_end(run: Run, cursor: int) -> int:
    """The event that ended the last backward call before ``cursor``; 0 where none did."""
    found = run.events.find({"backward_end"}, cursor - 1, -1) if cursor > 0 else None
    return found if found is not None else 0
