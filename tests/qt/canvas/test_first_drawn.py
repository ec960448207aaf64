"""Step (→), Step back (←) and Play pass over a run of stops where the canvas draws nothing: a
Hugging Face model's constructor ran about 60 ops whose tensors wait in its shut box, and a newcomer
pressed → at an empty canvas that long, ← from the first op drawn walked back through them one by
one, and Play showed them for seconds. Where the canvas draws something, each goes op by op as ever.
What the canvas draws at each stop is found by moving the window there, stop by stop."""

from __future__ import annotations

import pytest

from graphview.core import timeline
from graphview.core.options import RunOptions
from graphview.core.run import Run
from graphview.qt.canvas.first_drawn import draws_anything
from tests.conftest import ONLY_BUILDS_A_MODEL, model, record_each, zoo


@pytest.fixture(scope="module")
def gpt2() -> Run:
    """The test zoo's GPT-2 (a random config), one step: its constructor's ops draw nothing."""
    return Run(record_each([zoo("gpt2_lm")], steps=1)[zoo("gpt2_lm")])


def first_drawn_stop(window, run: Run) -> int:
    """The first stop after event 0 at which the canvas draws something, found stop by stop."""
    stop = timeline.step_forward(run, 0)
    window.set_cursor(stop)
    while not draws_anything(window.view.scene()):
        stop = timeline.step_forward(run, stop)
        window.set_cursor(stop)
    return stop


def test_step_from_an_empty_canvas_goes_to_the_first_moment_that_draws_something(window, gpt2):
    run = gpt2
    window.begin_run(run.start["script"], RunOptions(), run)
    landed = first_drawn_stop(window, run)
    assert timeline.step_forward(run, 0) < landed < timeline.next_backward(run, 0)  # the constructor's ops
    window.set_cursor(0)
    scene = window.view.scene()
    assert not draws_anything(scene)
    window.actions["step"].trigger()
    assert window.cursor == landed and draws_anything(scene)
    window.set_cursor(timeline.step_back(run, landed))  # the stop before: nothing drawn yet
    assert not draws_anything(scene)
    # from there, the first that draws again; and op by op once something is drawn
    window.actions["step"].trigger()
    assert window.cursor == landed
    window.actions["step"].trigger()
    assert window.cursor == timeline.step_forward(run, landed)


def test_step_back_past_what_draws_nothing_goes_to_the_start(window, gpt2):
    run = gpt2
    window.begin_run(run.start["script"], RunOptions(), run)
    landed = first_drawn_stop(window, run)
    after = timeline.step_forward(run, landed)
    window.set_cursor(after)
    window.actions["back"].trigger()  # where the stop before draws something: op by op
    assert window.cursor == landed and draws_anything(window.view.scene())
    window.actions["back"].trigger()  # before it, the constructor's ops draw nothing: the start at once
    assert window.cursor == 0
    middle = timeline.step_back(run, timeline.step_back(run, landed))
    assert 0 < middle
    window.set_cursor(middle)  # from inside those ops (a click in the timeline)
    assert not draws_anything(window.view.scene())
    window.actions["back"].trigger()
    assert window.cursor == 0


def test_play_passes_over_what_draws_nothing_then_goes_op_by_op(window, gpt2, qtbot):
    run = gpt2
    window.begin_run(run.start["script"], RunOptions(), run)
    landed = first_drawn_stop(window, run)
    window.set_cursor(0)
    player = window.player
    player.timer.timeout.connect(player.stop)  # one tick of Play, then pause
    player.toggle()
    qtbot.waitUntil(lambda: not player.playing, timeout=30000)
    assert window.cursor == landed
    player.toggle()
    qtbot.waitUntil(lambda: not player.playing, timeout=30000)
    assert window.cursor == timeline.step_forward(run, landed)


def test_where_the_first_op_draws_step_and_step_back_go_op_by_op(window, record):
    run = record(model("mlp_optimizer"), steps=1)
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(0)
    first = timeline.step_forward(run, 0)
    window.actions["step"].trigger()
    assert window.cursor == first and draws_anything(window.view.scene())
    window.actions["step"].trigger()
    window.actions["back"].trigger()
    assert window.cursor == first
    window.actions["back"].trigger()
    assert window.cursor == 0


def test_where_nothing_is_ever_drawn_step_goes_to_the_end_and_step_back_to_the_start(window, record, write_script):
    """A script that only builds a model: its constructor's ops never draw anything, and → and ←
    each go from one end of the run to the other in one press."""
    run = record(write_script(ONLY_BUILDS_A_MODEL))
    window.begin_run(run.start["script"], RunOptions(), run)
    assert timeline.step_forward(run, timeline.step_forward(run, 0)) < timeline.last(run)  # several stops
    window.actions["step"].trigger()
    assert window.cursor == timeline.last(run) and not draws_anything(window.view.scene())
    said = window.view.shown_message()  # (not "→ goes to the first op that draws something")
    assert said.startswith(f"The end of the run (event {window.cursor}), with nothing to draw") and "←" in said
    window.actions["back"].trigger()
    assert window.cursor == 0


#: a constructor that fails (a 4x4 weight given a 3x3 copy) after ops that draw nothing
FAILING_CONSTRUCTOR = (
    "import torch\n"
    "class Net(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        for _ in range(3):\n"
    "            torch.zeros(4).add_(1)  # scratch\n"
    "        self.a = torch.nn.Linear(4, 4)\n"
    "        self.a.weight.data.copy_(torch.ones(3, 3))\n"
    "model = Net()\n")


def test_step_and_step_back_land_where_the_script_failed_though_nothing_is_drawn(window, record, write_script):
    """The error of a constructor that fails is a stop to land on, drawn or not (→ went from the
    start to the run's end past it, and ← back to the start)."""
    run = record(write_script(FAILING_CONSTRUCTOR))
    failed = run.events.indices({"error"})[0]
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(0)
    window.actions["step"].trigger()
    assert window.cursor == failed and not draws_anything(window.view.scene())
    window.set_cursor(timeline.last(run))
    window.actions["back"].trigger()
    assert window.cursor == failed


def test_a_press_gets_as_far_as_it_looked_through_what_draws_nothing(window, record, write_script, monkeypatch):
    """Past more stops that draw nothing than a press looks through, each press lands on the last
    it looked at (it went one stop on, after looking through all of them, at every press)."""
    from graphview.qt.canvas import first_drawn

    monkeypatch.setattr(first_drawn, "PROBED_STOPS", 10)
    run = record(write_script(
        "import torch\n"
        "class Big(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        for _ in range(12):\n"
        "            torch.zeros(4).add_(1).mul_(2)  # scratch\n"
        "        self.lin = torch.nn.Linear(4, 2)\n"
        "    def forward(self, x):\n"
        "        return self.lin(x)\n"
        "model = Big()\n"
        "model(torch.randn(3, 4)).sum().backward()\n"))
    stops = [0]
    while len(stops) < 25:
        stops.append(timeline.step_forward(run, stops[-1]))
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(0)
    window.actions["step"].trigger()
    assert window.cursor == stops[10] and not draws_anything(window.view.scene())
    window.actions["step"].trigger()
    assert window.cursor == stops[20]
    window.actions["back"].trigger()
    assert window.cursor == stops[10]


def test_a_shut_box_drawn_at_the_first_stop_is_not_called_nothing(window, record, write_script):
    """A GPT-2's constructor writing its first weight (normal_) under no graph: → stops there, its
    transformer box drawn shut with that tensor inside; the canvas also said "Nothing to draw yet
    at event 10" over it, and the card read "1 tensor, …graph · now normal_" (elided)."""
    from tests.qt.canvas.test_edge_labels import GENERATES

    run = record(write_script(GENERATES))
    window.begin_run(run.start["script"], RunOptions(), run)
    assert window.view.message_drawn()  # the start: nothing drawn, the hint says what to do
    window.actions["step"].trigger()
    scene = window.view.scene()
    shut = [g for g in scene.groups.values() if g.isVisible() and g.collapsed]
    assert window.cursor > 0 and draws_anything(scene)
    assert not any(item.isVisible() for item in scene.node_items.values()) and len(shut) == 1
    assert not window.view.message_drawn()
    group = shut[0]
    assert group.members == 1 and group.now == run.events[window.cursor]["op"]
    assert group.summary() == f"1 tensor · running: {group.now}"  # (no room for "no graph" beside the op)
