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
    second = next_step(run, 0)
    assert updates[0] < second < updates[1]
    assert run.events[second]["ev"] in ("grad_reset", "op") and run.events[second].get("line") in (5, 6)
    assert updates[1] < next_step(run, second) < updates[2]
    # from the end of an iteration (where End of step leaves the cursor), into the next one
    assert updates[0] < next_step(run, updates[0]) < updates[1]
    assert next_step(run, updates[2]) == len(run.events) - 1  # no iteration after the last


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
