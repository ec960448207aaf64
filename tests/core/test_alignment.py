"""An earlier run's events mapped onto the current run's axis: step by step, op by op."""

from __future__ import annotations

import numpy as np
import pytest

from graphview.core.alignment import Alignment, _increasing
from tests.conftest import model


@pytest.fixture(scope="module")
def runs():
    from graphview.capture.script import run_script
    from graphview.core.options import RunOptions
    from graphview.core.run import Run

    def record(**options):
        events: list[dict] = []
        run_script(model("mlp_optimizer"), events.append, RunOptions(steps=3, **options))
        return Run(events)

    return record(), record(detach_at=["model.0"])


def test_each_step_and_each_op_of_the_earlier_run_lands_on_its_counterpart(runs):
    earlier, current = runs
    assert len(earlier.events) != len(current.events)
    lengths = [s["end"] - s["start"] for s in earlier.steps], [s["end"] - s["start"] for s in current.steps]
    assert lengths[0] != lengths[1]  # by event number the steps would drift apart
    alignment = Alignment(earlier, current)
    starts = alignment.map([s["start"] for s in earlier.steps])
    assert list(starts) == [s["start"] for s in current.steps]
    ends = alignment.map([s["end"] for s in earlier.steps])
    assert list(ends) == [s["end"] for s in current.steps]
    for (i, op), (j, again) in zip(earlier.ops, current.ops):
        assert (op["op"], op["line"]) == (again["op"], again["line"])
        assert alignment.map([i])[0] == j


def test_the_mapping_keeps_the_order_of_events_and_spreads_them_between_landmarks(runs):
    earlier, current = runs
    alignment = Alignment(earlier, current)
    x = alignment.map(np.arange(len(earlier.events)))
    assert np.all(np.diff(x) >= 0)
    assert x[0] == 0 and x[-1] == len(current.events) - 1  # run_start and run_end are landmarks too
    old, new = alignment.pairs()
    a, b = int(old[3]), int(old[4])
    if b - a > 1:  # an event halfway between two landmarks lands halfway between their counterparts
        assert alignment.map([(a + b) / 2])[0] == pytest.approx((new[3] + new[4]) / 2)


def test_a_landmark_that_moved_across_others_does_not_anchor_the_mapping():
    assert _increasing([(0, 0), (5, 50), (6, 10), (7, 20), (9, 90)]) == [(0, 0), (6, 10), (7, 20), (9, 90)]
    assert _increasing([]) == []


def test_a_growing_current_run_is_aligned_as_far_as_it_has_come(runs):
    from graphview.core.run import Run

    earlier, whole = runs
    live = Run()
    alignment = Alignment(earlier, live)
    live.extend(whole.events[: whole.steps[1]["start"] + 1])  # up to the start of step 2
    assert alignment.map([earlier.steps[1]["start"]])[0] == whole.steps[1]["start"]
    beyond = earlier.steps[2]["start"]
    last_old, last_new = (p[-1] for p in alignment.pairs())
    assert alignment.map([beyond])[0] == last_new + (beyond - last_old)  # not there yet: one event per event
    live.extend(whole.events[whole.steps[1]["start"] + 1:])
    assert alignment.map([beyond])[0] == whole.steps[2]["start"]
