"""The timeline's words for each moment of a run."""

from __future__ import annotations


def test_every_event_of_the_samples_is_described_in_words(record):
    """The timeline label never shows an internal event name or "line None"."""
    from graphview.core.events import EVENT_KINDS
    from graphview.core.timeline import describe
    from tests.conftest import lesson, model

    for path in (model("mlp_optimizer"), lesson("retain_grad"), lesson("error_no_grad_fn"), model("checkpointing")):
        run = record(path)
        for i in range(len(run.events)):
            text = describe(run, i)
            assert text and text not in EVENT_KINDS and "line None" not in text, (path, i, text)
            assert "tensor tensor" not in text, (path, i, text)  # an unnamed tensor is "tensor 12"


def test_an_accumulation_into_a_bias_reads_in_one_line(record):
    """The timeline's header is one line: an accumulation into a 16-value bias gives a few of the
    increment's values and of the .grad's, then how many more (it listed all of both, twice 16)."""
    from graphview.core.timeline import describe
    from tests.conftest import model

    run = record(model("mlp_optimizer"))
    index = next(i for i, e in enumerate(run.events) if e["ev"] == "accumulate" and run.tensor_name(e["tid"]) == "model.0.bias")
    text = describe(run, index)
    assert text.startswith("model.0.bias.grad += [") and text.count("… 12 more]") == 2, text


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


def test_a_grad_written_in_place_names_the_op(record, write_script):
    from graphview.core.timeline import describe

    run = record(write_script(
        "import torch\n"
        "w = torch.tensor([3.0, -4.0], requires_grad=True)\n"
        "(w * 10).sum().backward()\n"
        "torch.nn.utils.clip_grad_norm_([w], 1.0)\n"))
    index = next(i for i, e in enumerate(run.events) if e["ev"] == "grad_reset")
    assert describe(run, index) == "line 4: _foreach_mul_ writes into the .grad of w"
