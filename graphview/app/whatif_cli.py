"""The what-if memory on the command line: ``graphview check``'s checkpoint suggestions (measured
with ``--measure``) and ``graphview diff``'s memory comparison of two runs."""

from __future__ import annotations

import argparse
from typing import Callable

from graphview.app.inputs import say, shown
from graphview.core.options import APP_STEPS, RunOptions
from graphview.core.run import Run
from graphview.core.trace import SUFFIX
from graphview.core.whatif import (checkpoint_suggestions, compare_runs, comparison_lines, measured_text,
                                   recomputed_ops)

#: re-records the run with one more pattern checkpointed (``remeasure(run, args, pattern)``), the
#: command line's (:func:`graphview.app.cli.measure_checkpointed`): None when it could not
Measure = Callable[[Run, argparse.Namespace, str], "Run | None"]


def run_label(run: Run) -> str:
    return RunOptions.from_dict((run.start or {}).get("options") or {}).label() + " options"


def print_comparison(before: Run, after: Run) -> None:
    """Per step: peak saved bytes before and after, the ops recomputed in backward, the modules
    whose saved bytes changed most."""
    comparisons = compare_runs(before, after)
    if not comparisons:
        return
    say("memory:")
    for line in comparison_lines(comparisons, run_label(before), run_label(after)):
        say(f"  {shown(line)}")


def suggestions_data(run: Run, args: argparse.Namespace, remeasure: Measure) -> list[dict]:
    """``check --json``'s suggestions: each with its pattern, module type, the activations its nodes
    hold at the peak (``held``; the weights they save apart, ``weights_held``), how far the peak of
    activations falls (``saving``) and what the forward no longer holds at its end (``freed``), the
    peak of activations (``peak``; with weights and inputs, ``peak_total``), the ops run again
    (``recomputes``), its device and event; with ``--measure``, the peak a re-run with
    ``--checkpoint`` measured (``measured_peak``, bytes per device) and its ops recomputed in backward,
    or why that re-run failed (``measured_failed``)."""
    data = []
    for s in checkpoint_suggestions(run):
        entry = {"pattern": s.pattern, "type": s.types, "held": s.held.activations, "weights_held": s.held.weights,
                 "saving": s.saving, "freed": s.freed, "peak": s.peak.activations, "peak_total": s.peak.total,
                 "recomputes": s.recomputed, "device": s.device, "at": s.at}
        if getattr(args, "measure", False):
            after = remeasure(run, args, s.pattern)
            if after is not None and after.failed:
                entry["measured_failed"] = after.failure_headline()
            elif after is not None:
                entry["measured_peak"] = after.peak_saved_bytes()
                entry["recomputed_ops"] = recomputed_ops(after, 0, len(after.events) - 1) - \
                    recomputed_ops(run, 0, len(run.events) - 1)
        data.append(entry)
    return data


def print_suggestions(run: Run, args: argparse.Namespace, remeasure: Measure) -> None:
    """What checkpointing would cut, from the recorded run; with ``--measure`` (a script), each
    suggestion re-recorded with ``--checkpoint`` and its peak measured."""
    suggestions = checkpoint_suggestions(run)
    if not suggestions:
        return
    say("suggestions (what activation checkpointing would cut, from this run's peak"
        + ("; each measured by a re-run):" if getattr(args, "measure", False) else "; --measure re-runs each):"))
    measure = getattr(args, "measure", False)
    script = (run.start or {}).get("script")
    for s in suggestions:
        say(f"  {shown(s.text())}")
        if not measure:
            hint = f"--checkpoint '{shown(s.pattern)}'" if "*" in s.pattern else f"--checkpoint {shown(s.pattern)}"
            steps = ((run.start or {}).get("options") or {}).get("steps", 1)
            if run.steps and steps != APP_STEPS:  # (record runs the app's steps unless told: as many as this run had)
                hint += f" --steps {steps}"
            say(f"    try it: graphview record {shown(script or args.source)} {hint} -o checkpointed{SUFFIX}")
            continue
        after = remeasure(run, args, s.pattern)
        if after is not None:
            say(f"    {shown(measured_text(s.pattern, run, after))}")
