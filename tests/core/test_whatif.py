"""What checkpointing would cut, weighed a step at a time: suggesting() pauses between the steps
of the estimate (finding the peak it starts from too) and gives the suggestions
checkpoint_suggestions() gives."""

from __future__ import annotations

from graphview.core import held
from graphview.core.held import activation_peak, activation_peaks, gather_activation_peaks, highest_peak
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


def test_the_peak_the_estimate_starts_from_is_found_with_pauses_too(record, monkeypatch):
    run = record(model("transformer_block"), steps=2)
    whole = activation_peaks(run)
    monkeypatch.setattr(held, "POINTS_A_PAUSE", 2)
    peaks: dict = {}
    pauses = list(gather_activation_peaks(run, peaks))
    assert len(pauses) == len(run.memory_points) // 2 and set(pauses) == {None}
    assert peaks == whole and highest_peak(peaks) == activation_peak(run)
    # the highest activations any memory point of the run holds, where they are first held
    most = max(point[2] for point in run.memory_points)
    assert most > 0 and highest_peak(peaks).held.activations == most
    assert highest_peak(peaks).at == next(point[0] for point in run.memory_points if point[2] == most)


def test_a_comparison_names_what_its_peaks_hold_besides_activations_as_the_runs_hold_it(record):
    """"all saved, weights included" was said of every comparison: the chain rule lesson's x is a
    plain tensor (torch.tensor(2.0, requires_grad=True)), an input, and its runs save no weight."""
    import numpy as np

    from graphview.core.held import held_at
    from graphview.core.whatif import compare_runs, comparison_lines
    from tests.conftest import lesson

    for script, kinds in ((lesson("chain_rule"), ("inputs",)), (model("mlp_optimizer"), ("weights", "inputs"))):
        before, after = record(script, steps=1), record(script, steps=1, retain_graph=True)
        for run in (before, after):  # what each run holds at its peak of all saved
            peak = int(np.argmax(run.memory_arrays("cpu").array("total")))
            held = held_at(run, peak)
            assert (held.weights > 0, held.inputs > 0) == ("weights" in kinds, True)
        [step] = compare_runs(before, after)
        assert step.anyway == kinds
        said = "\n".join(comparison_lines([step], "before", "after"))
        assert f"with the {' and '.join(kinds)} held anyway, peak saved" in said
