"""Captions of exported pictures and the file names graphview suggests."""

from __future__ import annotations

from graphview.core.event_words import describe
from graphview.core.held import held_at, human
from graphview.core.captions import caption, file_stem, step_at, steps_planned
from graphview.core.run import Run
from tests.conftest import lesson, model


def test_a_step_script_is_captioned_with_its_step_and_event(record):
    run = record(model("mlp_optimizer"), steps=3)
    assert [s["step"] for s in run.steps] == [1, 2, 3]
    second = run.steps[1]
    index = next(i for i in range(second["start"], second["end"]) if run.events[i].get("ev") == "backward_start")
    assert step_at(run, index) == 2
    assert step_at(run, run.steps[0]["start"]) == 1 and step_at(run, run.steps[2]["end"]) == 3
    last = len(run.events) - 1
    held = held_at(run, index)
    assert held.activations > 0 and held.weights > 0
    assert caption(run, index) == (f"mlp_optimizer.py · step 2 of 3 · event {index} of {last}: {describe(run, index)}"
                                   f" · holds {human(held.total)} for backward: {human(held.activations)} of activations, "
                                   f"and {human(held.weights)} of weights and {human(held.inputs)} of inputs it holds anyway")
    assert file_stem(run, index) == f"mlp_optimizer-step2-event{index}"
    assert file_stem(run) == "mlp_optimizer"


def test_a_step_says_of_how_many_only_where_the_run_says_so_plainly(record):
    """"step 2 of 3" comes from the steps the run was given; a trace's count that is no whole number,
    or less than a step it holds, is left out rather than shown."""
    run = record(model("mlp_optimizer"), steps=2)
    assert steps_planned(run) == 2
    index = run.steps[1]["start"]
    assert f" · step 2 of 2 · event {index} of " in caption(run, index)
    options = run.start["options"]
    for bad in (1, 0, -3, "2", 2.0, True, None):
        run.start["options"] = dict(options, steps=bad)
        assert steps_planned(run) is None, bad
        assert f" · step 2 · event {index} of " in caption(run, index), bad
    run.start["options"] = "steps"
    assert steps_planned(run) is None
    run.start["options"] = dict(options)
    run.start["mode"] = "inprocess"  # graphview.record(): the loop is the program's, its length unknown
    assert steps_planned(run) is None


def test_a_plain_script_has_no_step(record):
    run = record(lesson("chain_rule"))
    assert run.steps == [] and step_at(run, 5) is None
    assert caption(run, 5).startswith(f"chain_rule.py · event 5 of {len(run.events) - 1}: ")
    assert file_stem(run, 5) == "chain_rule-event5"


def test_names_are_safe_file_names_with_a_fallback(record, write_script):
    run = record(write_script("import torch\nx = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\n",
                              name="my model (v2).py"))
    assert file_stem(run, 3) == "my_model_v2-event3"
    empty = Run([])
    assert file_stem(empty, 0) == "graph" and file_stem(None) == "graph"
    assert caption(empty, 0) == "graphview run"
