"""Landmarks: the same moment of a script found again in a re-run whose events differ."""

from __future__ import annotations

import pytest

from graphview.core.landmarks import Landmarks, place
from tests.conftest import model


@pytest.fixture(scope="module")
def runs():
    """mlp_optimizer three times: as is, detached after its first layer (fewer events in every
    step: no graph below the cut) and with two steps instead of three."""
    from graphview.capture.script import run_script
    from graphview.core.options import RunOptions
    from graphview.core.run import Run

    def record(**options):
        events: list[dict] = []
        run_script(model("mlp_optimizer"), events.append, RunOptions(**options))
        return Run(events)

    return record(steps=3), record(steps=3, detach_at=["model.0"]), record(steps=2)


def step_of(run, index: int) -> int:
    return max((s["step"] for s in run.steps if s["start"] <= index), default=0)


def test_every_op_of_a_step_is_found_as_the_same_op_of_the_same_step(runs):
    plain, detached, _ = runs
    assert len(detached.events) < len(plain.events)  # the detach changes what every step records
    before, after = Landmarks(plain), Landmarks(detached)
    moved = 0
    for index, op in plain.ops:
        found = place(before, index, after)
        assert found is not None and found[1], (index, op["op"])
        there = detached.events[found[0]]
        assert (there["ev"], there["op"], there["line"]) == ("op", op["op"], op["line"])
        assert step_of(detached, found[0]) == step_of(plain, index)
        # the n-th such op of its step in both: linear runs twice per step (layers 0 and 2)
        same = [i for i, o in plain.ops if (o["op"], o["line"]) == (op["op"], op["line"])
                and step_of(plain, i) == step_of(plain, index)]
        again = [i for i, o in detached.ops if (o["op"], o["line"]) == (op["op"], op["line"])
                 and step_of(detached, i) == step_of(plain, index)]
        assert again.index(found[0]) == same.index(index)
        moved += found[0] != index
    assert moved > len(plain.ops) // 2  # by identity, not by event index


def test_a_moment_the_rerun_lacks_goes_to_the_nearest_earlier_one_it_has(runs):
    three, _, two = runs
    in_step_3 = next(i for i, op in three.ops if step_of(three, i) == 3 and op["op"] == "relu")
    index, exact = place(Landmarks(three), in_step_3, Landmarks(two))
    assert not exact
    assert index == two.steps[-1]["end"] and two.events[index]["ev"] == "step_end"
    # an event that is no landmark (a saved tensor) rests on the landmark before it
    saved = next(i for i, ev in enumerate(three.events) if ev["ev"] == "saved" and i > three.steps[1]["start"])
    names = Landmarks(three).update().names
    assert names[saved] is None
    landmark_before = max(i for i in range(saved) if names[i] is not None)
    assert place(Landmarks(three), saved, Landmarks(three)) == (landmark_before, True)


def test_landmarks_of_a_growing_run_are_named_as_it_grows(runs):
    from graphview.core.run import Run

    plain = runs[0]
    live = Run()
    names = Landmarks(live)
    whole = Landmarks(plain).update()
    for start in range(0, len(plain.events), 37):
        live.extend(plain.events[start:start + 37])
        names.update()
    assert names.names == whole.names
    assert sum(name is not None for name in whole.names) > len(plain.ops)
