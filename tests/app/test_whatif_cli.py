"""The what-if options on the command line: record, check's measured suggestions, diff's memory."""

from __future__ import annotations

import pytest

from graphview.core.options import APP_STEPS
from graphview.core.run import Run
from graphview.core.trace import read_trace
from graphview.core.held import activation_peak
from graphview.core.whatif import checkpoint_suggestions, compare_runs, human
from tests.app.test_cli import graphview
from tests.conftest import model

pytestmark = pytest.mark.e2e
TRANSFORMER = model("transformer_block")


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """``graphview record`` of the transformer sample without a what-if option, made once."""
    trace = tmp_path_factory.mktemp("plain") / "plain.gvtrace"
    assert graphview("record", TRANSFORMER, "-o", trace, "-q").returncode == 0
    return trace


def test_record_with_checkpoint_then_diff_reports_both_peaks(tmp_path, plain):
    checkpointed = tmp_path / "checkpointed.gvtrace"
    result = graphview("record", TRANSFORMER, "-o", checkpointed, "-q", "--checkpoint", "encoder.layers.*")
    assert result.returncode == 0, result.stderr
    before, after = Run(read_trace(plain).events), Run(read_trace(checkpointed).events)
    assert after.start["options"]["checkpoint"] == ["encoder.layers.*"]
    info = graphview("info", checkpointed).stdout
    assert "options:         checkpoint encoder.layers.*" in info
    diff = graphview("diff", plain, checkpointed)
    assert diff.returncode == 0, diff.stderr
    steps = compare_runs(before, after)
    assert [step.step for step in steps] == [1, 2, 3]  # (record runs the steps the app runs)
    for step in steps:
        assert (f"step {step.step}: peak of activations held for backward cpu {human(step.activations_before['cpu'])} -> "
                f"{human(step.activations_after['cpu'])}" in diff.stdout)
        assert f"peak saved cpu {human(step.peak_before['cpu'])} -> {human(step.peak_after['cpu'])}" in diff.stdout
        assert f"recomputed in backward: 0 -> {step.recomputed_after} ops" in diff.stdout
    # the layer's line: the activations held for it (what torch holds, tests/capture/test_memory_answers.py)
    [layer] = [m for m in steps[0].modules if m.path == "encoder.layers.0"]
    assert (f"encoder.layers.0: {human(layer.before)} -> {human(layer.after)} of activations held at backward "
            f"({layer.change:+,} B)") in diff.stdout


def test_check_measures_its_suggestion(tmp_path, record):
    """check --measure in a real CLI process; the runs it measures, recorded here in this process
    (the same recorder), give the figures it must print."""
    two_layers = tmp_path / "two_layers.py"
    with open(TRANSFORMER, encoding="utf-8") as f:
        two_layers.write_text(f.read().replace("num_layers=1", "num_layers=2"), encoding="utf-8")
    run = record(two_layers, steps=APP_STEPS)
    first = checkpoint_suggestions(run)[0]
    assert first.pattern == "encoder.layers.*"
    result = graphview("check", two_layers, "--measure", timeout=300)
    assert result.returncode == 0, result.stderr
    assert first.text() in result.stdout
    after = record(two_layers, steps=APP_STEPS, checkpoint=["encoder.layers.*"])
    before_peak, after_peak = activation_peak(run).held.activations, activation_peak(after).held.activations
    assert (f"checkpoint encoder.layers.*, measured: peak of activations held for backward cpu {human(before_peak)} -> "
            f"{human(after_peak)}") in result.stdout
    assert f"peak saved cpu {human(run.peak_saved_bytes()['cpu'])} -> {human(after.peak_saved_bytes()['cpu'])}" in result.stdout


def test_check_json_gives_the_findings_and_the_suggestions(plain):
    import json

    trace = plain
    run = Run(read_trace(trace).events)
    result = graphview("check", trace, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["findings"] == []
    assert data["suggestions"] == [{"pattern": s.pattern, "type": s.types, "held": s.held.activations,
                                    "weights_held": s.held.weights, "saving": s.saving, "freed": s.freed,
                                    "peak": s.peak.activations, "peak_total": s.peak.total, "recomputes": s.recomputed,
                                    "device": s.device, "at": s.at} for s in checkpoint_suggestions(run)]
    assert data["suggestions"][0]["peak"] == activation_peak(run).held.activations
    assert data["suggestions"][0]["peak_total"] <= run.peak_saved_bytes()["cpu"]


def test_bad_what_if_options_get_one_line(tmp_path):
    result = graphview("record", TRANSFORMER, "-o", tmp_path / "x.gvtrace", "--checkpoint", "encoder..0")
    assert result.returncode == 2
    assert result.stderr.strip() == ("graphview: --checkpoint 'encoder..0': expected a module path such as "
                                     "encoder.layers.0 or encoder.layers.*")


def test_save_on_cpu_on_a_cpu_run_says_it_changes_nothing(tmp_path):
    result = graphview("record", TRANSFORMER, "-o", tmp_path / "x.gvtrace", "--save-on-cpu")
    assert result.returncode == 0
    assert "graphview: note: --save-on-cpu moved nothing in this run" in result.stderr


def test_a_suggestions_command_runs_the_steps_the_check_ran(tmp_path):
    """check and record run a step script for the app's 3 steps: the record command check suggests
    needs no --steps; a trace's suggestion records as many steps as the trace has."""
    tries = [line for line in graphview("check", TRANSFORMER).stdout.splitlines() if "try it:" in line]
    assert tries and all(line.endswith(" -o checkpointed.gvtrace") and "--steps" not in line for line in tries), tries
    trace = tmp_path / "one.gvtrace"
    assert graphview("record", TRANSFORMER, "-o", trace, "-q", "--steps", "1").returncode == 0
    tries = [line for line in graphview("check", trace).stdout.splitlines() if "try it:" in line]
    assert tries and all(line.endswith(" --steps 1 -o checkpointed.gvtrace") for line in tries), tries
