"""Step (→) from an empty canvas goes to the first moment that draws something: a Hugging Face
model's constructor ran about 60 ops whose tensors wait in its shut box, and a newcomer pressed →
at an empty canvas that long. Where the canvas draws something, Step goes op by op as ever."""

from __future__ import annotations

from graphview.core import timeline
from graphview.core.options import RunOptions
from graphview.qt.canvas.first_drawn import draws_anything
from tests.conftest import model, zoo


def test_step_from_an_empty_canvas_goes_to_the_first_moment_that_draws_something(window, record):
    run = record(zoo("gpt2_lm"), steps=1)
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(0)
    scene = window.view.scene()
    assert not draws_anything(scene)
    window.actions["step"].trigger()
    landed = window.cursor
    assert landed > timeline.step_forward(run, 0)  # (more than one op: the constructor's went by)
    assert landed < timeline.next_backward(run, 0) and draws_anything(scene)
    window.set_cursor(timeline.step_back(run, landed))  # the stop before: nothing drawn yet
    assert not draws_anything(scene)
    # from there, the first that draws again; and op by op once something is drawn
    window.actions["step"].trigger()
    assert window.cursor == landed
    window.actions["step"].trigger()
    assert window.cursor == timeline.step_forward(run, landed)


def test_where_the_first_op_draws_step_goes_op_by_op(window, record):
    run = record(model("mlp_optimizer"), steps=1)
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(0)
    window.actions["step"].trigger()
    assert window.cursor == timeline.step_forward(run, 0) and draws_anything(window.view.scene())
