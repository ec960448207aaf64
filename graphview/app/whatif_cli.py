"""The what-if memory on the command line: ``graphview check``'s checkpoint suggestions (measured
with ``--measure``) and ``graphview diff``'s memory comparison of two runs."""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile

from graphview.app.inputs import say, shown
from graphview.core.options import RunOptions
from graphview.core.run import Run
from graphview.core.trace import SUFFIX, is_script
from graphview.core.whatif import (checkpoint_suggestions, compare_runs, comparison_lines, measured_text,
                                   recomputed_ops)


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


def suggestions_data(run: Run, args: argparse.Namespace) -> list[dict]:
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
            after = _measure(run, args, s.pattern)
            if after is not None and after.failed:
                entry["measured_failed"] = after.failure_headline()
            elif after is not None:
                entry["measured_peak"] = after.peak_saved_bytes()
                entry["recomputed_ops"] = recomputed_ops(after, 0, len(after.events) - 1) - \
                    recomputed_ops(run, 0, len(run.events) - 1)
        data.append(entry)
    return data


def _measure(run: Run, args: argparse.Namespace, pattern: str) -> Run | None:
    """The run re-recorded with ``pattern`` checkpointed as well. Only the script the user named
    (``args.source``) is re-recorded, with the options and arguments the user gave: never the
    script a trace names (``graphview check`` refuses ``--measure`` of a trace)."""
    from graphview.app.cli import load_run, options_from_args, record_to

    if not is_script(args.source):
        raise ValueError(f"--measure re-records a script, not the trace {args.source}")
    base = options_from_args(args)
    options = dataclasses.replace(base, checkpoint=[*base.checkpoint, pattern])
    with tempfile.TemporaryDirectory(prefix="graphview-") as tmp:
        trace = os.path.join(tmp, "run" + SUFFIX)
        record_to(args.source, trace, options, args.timeout, echo=False, script_args=options.args)
        after, _ = load_run(trace)
    return after


def print_suggestions(run: Run, args: argparse.Namespace) -> None:
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
            if run.steps and steps != 1:  # (record runs 1 step unless told: as many as this run had)
                hint += f" --steps {steps}"
            say(f"    try it: graphview record {shown(script or args.source)} {hint} -o checkpointed{SUFFIX}")
            continue
        after = _measure(run, args, s.pattern)
        if after is not None:
            say(f"    {shown(measured_text(s.pattern, run, after))}")
