"""Step forward past what draws nothing: a model's constructor runs ops (GPT-2's: about 60) whose
tensors wait, inside the model's shut box, for the forward that uses them, so a newcomer pressed
→ sixty times at an empty canvas and read it as a dead app. From a moment where the canvas draws
nothing yet, Step goes to the first moment it draws something."""

from __future__ import annotations

from graphview.core import timeline
from graphview.core.run import Run

#: the stops Step looks through for the first that draws something, at most (then one step, as ever)
PROBED_STOPS = 2000


def draws_anything(scene) -> bool:
    """Whether the canvas draws a node or a module box at the scene's cursor."""
    return (any(item.isVisible() for item in scene.node_items.values())
            or any(group.isVisible() for group in scene.groups.values()))


def step_forward(scene, run: Run, cursor: int) -> int:
    """Step (→) from ``cursor``: the next stop; where the canvas draws nothing at ``cursor``, the
    first stop at which it draws something, before the run's first backward (the scene is moved
    there to look; a live or a big run, where the scene knows only part of what is drawn, steps
    as ever)."""
    target = timeline.step_forward(run, cursor)
    if scene.live or scene.virtual or scene.drawing is None or scene.cursor != cursor or draws_anything(scene):
        return target
    backward = timeline.next_backward(run, cursor)
    probe = target
    for _ in range(PROBED_STOPS):
        scene.set_cursor(probe)
        if draws_anything(scene):
            return probe
        following = timeline.step_forward(run, probe)
        if following <= probe or following > backward:
            break
        probe = following
    return target
