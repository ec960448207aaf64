"""``graphview info`` answers first: how the run ended, its steps, what backward held at the peak
(activations apart from the weights held anyway) and the modules holding the most. The runs are
recorded in this process and written as ``graphview record`` writes them, and ``info`` is the CLI's
``main`` here: what is tested is what info says of a trace (tests/app/test_cli.py runs both commands
as processes)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")

from graphview.core.held import activation_peak, human
from graphview.core.options import RunOptions
from graphview.core.run import Run
from graphview.core.trace import make_header, read_trace, write_trace
from tests.app.test_cli import graphview_here
from tests.conftest import record_each, zoo


def recorded(script: str, steps: int, trace) -> None:
    """``graphview record SCRIPT --steps STEPS -o TRACE``, its run recorded in this process."""
    options = RunOptions(steps=steps)
    events = record_each([script], steps=steps)[script]
    write_trace(trace, events, make_header(script=script, options=options.to_dict(), argv=[script]))


def test_info_leads_with_the_memory_answer_and_keeps_per_parameter_lines_behind_a_flag(tmp_path, capsys):
    def graphview(*args):
        return graphview_here(capsys, *args)

    trace = tmp_path / "gpt2.gvtrace"
    recorded(zoo("gpt2_lm"), 2, trace)
    run = Run(read_trace(trace).events)
    peak = activation_peak(run)
    lines = graphview("info", trace).stdout.splitlines()
    assert lines[1] == "status:          ok"
    assert lines[2].startswith("steps:           2, ") and "s a step" in lines[2]
    assert lines[3].startswith("held for backward at the peak (cpu, event ")
    assert lines[4].strip() == (f"{human(peak.held.total)}: {human(peak.held.activations)} of activations, and "
                                f"{human(peak.held.weights)} of weights and {human(peak.held.inputs)} of inputs it holds anyway")
    assert lines[5] == "most activations, by module:"
    assert lines[6].startswith("  transformer.h.* (2 × GPT2Block): ")
    assert not any(line.startswith("grad ") for line in lines) and len(lines) < 40
    assert any(line.startswith("gradients:       ") for line in lines)
    with_grads = graphview("info", trace, "--grads").stdout.splitlines()
    assert sum(line.startswith("grad transformer.") for line in with_grads) > 20
    data = json.loads(graphview("info", trace, "--json").stdout)["held_for_backward"]
    assert (data["activations"], data["weights"], data["at"]) == (peak.held.activations, peak.held.weights, peak.at)
    assert data["modules"][0]["path"] == "transformer.h.*" and data["modules"][0]["count"] == 2


def test_info_counts_what_a_checkpoint_keeps_in_either_mode(tmp_path, write_script, capsys):
    """Hugging Face's gradient checkpointing: ``info``'s modules at the peak count the input each
    layer's checkpoint keeps for its recompute, for the module that made it, with
    ``use_reentrant=False`` as with ``True``. False left them out: torch keeps them beside the
    graph, in no autograd node, and the model's line said 2.00 KiB where True said 6.00 KiB.
    Torch: what autograd saves while each layer's forward runs (its input), alive when the
    forward returned, parameters apart; a layer's is held until its recompute, after the peak.
    What the last layer's recompute holds at the peak is named, as that layer recomputed (see
    tests/capture/test_memory_answers.py for torch's figure)."""
    from tests.capture.test_memory_answers import checkpointed_layers, library_layers, loaded
    from tests.capture.held_by_torch import saved_while_called

    modules = {}
    for reentrant in (False, True):
        path = write_script(checkpointed_layers("gpt2", reentrant))
        trace = tmp_path / f"gpt2_{reentrant}.gvtrace"
        recorded(path, 1, trace)
        modules[reentrant] = json.loads(graphview_here(capsys, "info", trace, "--json").stdout)["held_for_backward"]["modules"]
        scope = loaded(path)
        kept = sum(saved_while_called(scope["step"], layer) for _, layer in library_layers(scope["model"]))
        assert kept == 2 * 2 * 8 * 32 * 4  # each layer's input, float32
        [top] = [m for m in modules[reentrant] if m["path"] == "transformer"]
        assert top["activations"] >= kept
        # the peak comes while backward recomputes the last layer: what that holds is named
        [again] = [m for m in modules[reentrant] if m["recomputed"]]
        assert again["path"] == "transformer.h.1" and again["activations"] > top["activations"]
        line = f"  transformer.h.1 (GPT2Block), recomputed in backward: {human(again['activations'])} of activations"
        assert any(said.startswith(line) for said in graphview_here(capsys, "info", trace).stdout.splitlines())
    assert modules[False] == modules[True]
