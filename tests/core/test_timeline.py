"""Moving the cursor by the units a user steps in."""

from __future__ import annotations


def test_a_plain_training_loop_steps_from_optimizer_step_to_optimizer_step(record, write_script):
    """A script with its own loop has no step() calls: "End of step" stops at each optimizer
    step and "Next step" goes into the next iteration (both went to the end of the run)."""
    from graphview.core.timeline import end_of_step, next_step

    run = record(write_script(
        "import torch\n"
        "model = torch.nn.Linear(3, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for i in range(3):\n"
        "    opt.zero_grad()\n"
        "    loss = model(torch.randn(4, 3)).pow(2).mean()\n"
        "    loss.backward()\n"
        "    opt.step()\n"))
    assert not run.steps and len(run.optimizer_steps) == 3
    updates = [index for index, _ in run.optimizer_steps]
    assert end_of_step(run, 0) == updates[0]
    assert end_of_step(run, updates[0]) == updates[1]
    # from the start (the model built, no iteration begun), the first iteration's start: the loop's
    # first line, as the second iteration starts (Next step went past the whole first iteration)
    first = next_step(run, 0)
    assert first < updates[0]
    second = next_step(run, first)
    assert updates[0] < second < updates[1]
    assert run.events[second]["ev"] in ("grad_reset", "op") and run.events[second].get("line") in (5, 6)
    assert (run.events[first]["ev"], run.events[first].get("line")) == (run.events[second]["ev"],
                                                                         run.events[second].get("line"))
    assert not any(run.events[i]["ev"] in ("op", "grad_reset") for i in range(first))  # nothing of the loop before it
    assert updates[1] < next_step(run, second) < updates[2]
    # from the end of an iteration (where End of step leaves the cursor), into the next one
    assert updates[0] < next_step(run, updates[0]) < updates[1]
    assert next_step(run, updates[2]) == len(run.events) - 1  # no iteration after the last


def test_next_step_goes_to_the_first_moment_of_the_step_the_cursor_is_before(record):
    """A step script: from the start, and from step 1's start event (where Step stops before
    step 1's first op), Next step goes to step 1's first op (from its start event it went past
    all of step 1, to step 2's); from that op, to step 2's first op."""
    from graphview.core.timeline import STOP_EVENTS, next_step
    from tests.conftest import model

    run = record(model("mlp_optimizer"), steps=2)
    starts = [i for i, e in enumerate(run.events) if e["ev"] == "step_start"]
    firsts = [next(i for i in range(s + 1, len(run.events)) if run.events[i]["ev"] in STOP_EVENTS) for s in starts]
    # step 1 begins with the first layer's linear; step 2 with the zero_grad graphview calls before it
    assert len(starts) == 2 and [run.events[i]["ev"] for i in firsts] == ["op", "grad_reset"]
    assert run.events[firsts[0]]["op"] == "linear"
    for cursor in (0, starts[0] - 1, starts[0], starts[0] + 1, firsts[0] - 1):
        assert next_step(run, cursor) == firsts[0], cursor
    for cursor in (firsts[0], firsts[0] + 1, starts[1]):
        assert next_step(run, cursor) == firsts[1], cursor
    assert next_step(run, firsts[1]) == len(run.events) - 1  # no step after the last


def test_a_loop_that_updates_by_hand_steps_from_backward_to_backward(record, write_script):
    from graphview.core.timeline import end_of_step

    run = record(write_script(
        "import torch\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "for i in range(2):\n"
        "    loss = (w * 2).sum()\n"
        "    loss.backward()\n"
        "    with torch.no_grad():\n"
        "        w -= 0.1 * w.grad\n"
        "    w.grad = None\n"))
    ends = [i for i, e in enumerate(run.events) if e["ev"] == "backward_end"]
    assert len(ends) == 2 and end_of_step(run, 0) == ends[0] and end_of_step(run, ends[0]) == ends[1]
