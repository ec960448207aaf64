"""The memory chart's overlay of an earlier run sits step on step, hump on hump, on the current run."""

from __future__ import annotations

import numpy as np

from graphview.core.options import RunOptions
from tests.conftest import model


def test_an_overlay_of_a_run_with_other_event_counts_lines_up_by_step(window, record, qtbot):
    first = record(model("mlp_optimizer"), steps=3)
    script = first.start["script"]
    window.begin_run(script, RunOptions(steps=3), first)
    window.sigRunRequested.emit(RunOptions(steps=3, detach_at=["model.0"]))
    second = record(model("mlp_optimizer"), steps=3, detach_at=["model.0"])
    window.begin_run(script, RunOptions(steps=3, detach_at=["model.0"]))  # streamed, as a live re-run is
    for start in range(0, len(second.events), 40):
        window.append_events(second.events[start:start + 40])
        qtbot.wait(1)
    qtbot.waitUntil(lambda: window.runs.settled, timeout=30000)
    assert len(window.memory.overlays) == 1
    overlay = window.memory.overlays[0]
    x, y = np.asarray(overlay.xData), np.asarray(overlay.yData)
    assert len(x) == len(first.events)  # short runs are drawn point for point
    for before, now in zip(first.steps, second.steps):
        assert before["start"] != now["start"] or before is first.steps[0]  # event numbers drift...
        assert x[before["start"]] == now["start"]  # ...the overlay's steps do not
        assert x[before["end"]] == now["end"]
    # the same hump on the same hump: the earlier run's peak of each step lies within that step
    # of the current run, moved from where its event number would put it
    for before, now in zip(first.steps, second.steps):
        peak = max(range(before["start"], before["end"] + 1), key=lambda i: y[i])
        assert now["start"] <= x[peak] <= now["end"]
    last_peak = max(range(first.steps[-1]["start"], first.steps[-1]["end"] + 1), key=lambda i: y[i])
    assert last_peak - x[last_peak] > 30  # two steps of fewer events each, by now
    assert len(window.memory.series["total"]) == len(second.events)
