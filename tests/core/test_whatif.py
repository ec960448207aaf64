"""What checkpointing would cut, weighed a step at a time: suggesting() pauses between the steps
of the estimate and gives the suggestions checkpoint_suggestions() gives."""

from __future__ import annotations

from graphview.core.whatif import checkpoint_suggestions, suggesting
from tests.conftest import model


def test_the_estimate_pauses_between_its_steps_and_suggests_what_the_whole_does(record):
    run = record(model("transformer_block"), steps=1)
    steps = list(suggesting(run))
    pauses = steps.count(None)
    suggestions = [s for s in steps if s is not None]
    assert suggestions and [vars(s) for s in suggestions] == [vars(s) for s in checkpoint_suggestions(run)]
    modules = {path for path in run.module_types if path}
    assert pauses > len(modules)  # a pause before each module (and pattern) weighed, at least
    assert [vars(s) for s in [s for s in suggesting(run, top=1) if s is not None]] == [vars(suggestions[0])]
