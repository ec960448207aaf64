"""RunSummary: a finished run in words: its findings, its status line, what a re-run changed.

When a run ends, :class:`~graphview.qt.run_controller.RunController` asks for its summary: the
diagnostics (a big run's in slices of the event loop's turns, :class:`~graphview.qt.event_slices.Slices`),
the status line, a failure's report, what a re-run with other options changed against the run
before it, and what checkpointing would cut (a big run's also in slices). Earlier runs of the same script are kept here for
those comparisons (and for the memory chart's overlays).
"""

from __future__ import annotations

from bisect import bisect_right
from functools import partial

from graphview.core.diagnostics import diagnose, diagnosing
from graphview.core.options import RunOptions
from graphview.core.run import Run
from graphview.core.whatif import checkpoint_suggestions, compare_runs, measured_text, module_bytes_in_both, suggesting
from graphview.qt.event_loop_turn import BUDGET_S
from graphview.qt.event_slices import Slices
from graphview.qt.formatting import human_bytes
from graphview.qt.run_window import RunWindow

#: runs with more events than this are diagnosed a few ms at a time, in the event loop's turns
DIAGNOSE_IN_SLICES_ABOVE = 100_000
#: the least of a turn worth a slice of diagnosis
DIAGNOSE_SLICE_S = 0.008


def per_step(before: list[int], now: list[int]) -> str:
    """``67 → 110`` where every step of both runs made as many (said once); else each step's."""
    if len(before) > 1 and len(before) == len(now) and len(set(before)) == 1 and len(set(now)) == 1:
        return f"{before[0]} → {now[0]}"
    return f"{', '.join(map(str, before))} → {', '.join(map(str, now))}"


def nodes_per_step(run: Run) -> list[int]:
    """How many autograd nodes each step made (the whole run, for a plain script)."""
    if not run.steps:
        return [len(run.op_nodes)]
    starts = [step["start"] for step in run.steps]
    counts = [0] * len(starts)
    for op in run.op_nodes.values():  # one pass: each node to the step it was born in
        at = bisect_right(starts, op.born) - 1
        end = run.steps[at]["end"] if at >= 0 else None
        if at >= 0 and (end is None or op.born <= end):
            counts[at] += 1
    return counts


def forced_detaches(run: Run) -> list[dict]:
    """The detach events the run options forced (``detach at``)."""
    return [ev for _, ev in run.events.where({"detach"}) if ev.get("forced")]


class RunSummary:
    """The summary of the window's run once it has ended.

    Attributes
    ----------
    earlier_runs : list of (label, Run)
        Earlier runs of the current script, oldest first (what a re-run is compared with).
    comparison : str
        What the last finished run changed against the one before it, in words ("" if nothing).
    measured : dict
        Checkpoint pattern tried -> what its re-run measured.
    """

    def __init__(self, window: RunWindow, slices: Slices) -> None:
        self.window = window
        self.slices = slices
        self.earlier_runs: list[tuple[str, Run]] = []
        self.measured: dict[str, str] = {}
        self.comparison = ""

    def forget_earlier_runs(self) -> None:
        """Another script, or a file opened anew: nothing to compare the next run with."""
        self.earlier_runs.clear()
        self.measured.clear()

    def summarise(self) -> None:
        """A finished run in words: diagnostics, the status line, what a re-run changed, a failure.
        A big run is diagnosed in slices of the event loop's turns (see :func:`diagnosing`), so the
        window keeps answering. (Not on a thread: a thread running Python holds the interpreter
        lock the GUI thread needs back after every call into Qt; the window's repaints took 40 ms
        and more while it ran.)"""
        w = self.window
        run = w.run
        if len(run.events) <= DIAGNOSE_IN_SLICES_ABOVE:
            for work in self._summary_works(run, diagnose(run)):
                work()
            return
        w.status_label.setText(f"run {run.status}: {len(run.events):,} events; looking for findings…")
        self.slices.later(partial(self._gather_in_slices, run, diagnosing(run), [], self._diagnosed), DIAGNOSE_SLICE_S)

    def _gather_in_slices(self, run: Run, steps, gathered: list, done) -> None:
        """A turn's worth of ``steps`` (a generator that yields what it finds, and None where it may
        pause) while ``run`` is the one shown; the rest in later turns; then ``done(run, gathered)``."""
        if self.window.run is not run:
            return
        for item in steps:
            if item is not None:
                gathered.append(item)
            elif self.slices.turn.left() < BUDGET_S / 2:  # a point to pause at, and half the turn is spent
                self.slices.later(partial(self._gather_in_slices, run, steps, gathered, done), DIAGNOSE_SLICE_S)
                return
        done(run, gathered)

    def _diagnosed(self, run: Run, findings: list) -> None:
        findings.sort(key=lambda f: f.index)
        self._in_turns(run, self._summary_works(run, findings, sliced=True))  # a turn each

    def _summary_works(self, run: Run, findings: list, sliced: bool = False) -> list:
        """What summarising ``run`` does once its findings are known: what a re-run changed, what
        it did to the memory, what checkpointing would cut, the findings and the status line
        (``sliced``: a big run's, whose modules are weighed for a checkpoint a few a turn; the
        findings and the status line come after that)."""
        summarise = partial(self._summarise, run, findings, forced_detaches(run))
        if sliced:
            return [self._compare_with_earlier, partial(self._what_if, run),
                    partial(self._suggest_in_slices, run, [summarise])]
        return [self._compare_with_earlier, partial(self._what_if, run), partial(self._suggest, run), summarise]

    def _in_turns(self, run: Run, works: list) -> None:
        """Each of ``works`` in a later turn of its own, in order, while ``run`` is the one shown."""
        self.slices.later(partial(self._in_turn, run, works), DIAGNOSE_SLICE_S)

    def _in_turn(self, run: Run, works: list) -> None:
        if self.window.run is run:
            works[0]()
            if len(works) > 1:
                self._in_turns(run, works[1:])

    def _summarise(self, run: Run, findings: list, forced: list) -> None:
        """The run's findings and its status line (see :meth:`_summary_works`)."""
        w = self.window
        w.diagnostics.show_findings(findings, run.nothing_checked())
        w.bottom_tabs.setTabText(w.bottom_tabs.indexOf(w.diagnostics),
                                 f"Diagnostics ({len(findings)})" if findings else "Diagnostics")
        cut = next((f for f in findings if f.code == "graph-cut"), None) if not run.failed else None
        ended = f"run {run.status}" + (f", but the graph is cut at line {cut.line}" if cut is not None else "")
        if findings and cut is None:
            ended += f" · {len(findings)} finding{'s' if len(findings) != 1 else ''} in Diagnostics"
        w.status_label.setText(f"{ended}: {len(run.events)} events, {len(run.ops)} ops, "
                               f"{len(run.op_nodes)} autograd nodes, {len(run.backwards)} backward calls")
        if run.status == "stopped":  # the user pressed Stop: not an error
            w.statusBar().showMessage("stopped: everything recorded until then is kept", 20000)
        elif run.failed:
            self._report_failure(run)
        else:
            self._report_ineffective_options(run, cut, forced)

    def _report_ineffective_options(self, run: Run, cut=None, forced: list = ()) -> None:
        """Options that changed nothing, or that left nothing to differentiate, say so; a graph cut
        off from every parameter (``cut``, the finding) brings the Diagnostics tab forward."""
        w = self.window
        notes = []
        options = RunOptions.from_dict((run.start or {}).get("options") or {})
        for spec in options.detach_at:
            if not forced:
                notes.append(f"detach at {spec!r} matched nothing in this run")
        if cut is not None:
            notes.append(f"{cut.title} (Diagnostics tab)")
            w.bottom_tabs.setCurrentWidget(w.diagnostics)
        elif run.mode == "step" and not run.backwards:
            notes.append("no backward ran: step() returned a tensor without grad_fn "
                         f"(grad mode {options.grad_mode}{', detach at ' + ', '.join(options.detach_at) if options.detach_at else ''})")
        if notes:
            text = "; ".join(notes)
            # a cut graph is the news: first, before what the re-run changed
            parts = [text, self.comparison] if cut is not None else [self.comparison, text]
            self.comparison = "; ".join(part for part in parts if part)
            w.statusBar().showMessage(self.comparison, 30000)

    def _report_failure(self, run: Run) -> None:
        """A failed run says so where a user looks: the console comes to the front, the status bar
        names the error and its line, and an empty canvas explains itself."""
        w = self.window
        error = run.errors[0][1] if run.errors else {}
        what = f"{error.get('type', '')}: {error.get('message', '')}".strip(": ") or (run.end or {}).get("message") \
            or run.status
        line = error.get("line")
        where = f" at line {line}" if line else ""
        ended = {"error": "failed", "exit": f"exited with code {(run.end or {}).get('exit_code')}",
                 "timeout": "was stopped at its time limit"}.get(run.status, run.status)
        w.statusBar().showMessage(f"the script {ended}{where}: "
                                  f"{what.splitlines()[0] if what else ''} (traceback in the Console)", 60000)
        w.bottom_tabs.setCurrentWidget(w.console)
        if not w.scene.placed_ids():
            w.view.set_message(f"The script stopped{where} before autograd recorded anything:\n{what}\n\n"
                               "The Console tab has the traceback; fix the script and open it again.")

    def _compare_with_earlier(self) -> None:
        """After a re-run with other options: what the toggle removed from (or added to) the graph."""
        w = self.window
        if not self.earlier_runs:
            self.comparison = ""
            return
        from graphview.core.diff import describe, diff

        label, earlier = self.earlier_runs[-1]
        result = diff(earlier, None, w.run, None)
        removed = sorted(result.removed.items(), key=lambda kv: -kv[1])
        added = sorted(result.added.items(), key=lambda kv: -kv[1])
        parts = [f"compared with the earlier run ({label} options)"]
        # the memory first: a status bar too narrow for the rest still says it
        peak_before = max(earlier.peak_saved_bytes().values(), default=0)
        peak_now = max(w.run.peak_saved_bytes().values(), default=0)
        if peak_before != peak_now:
            parts[0] += f": peak saved {human_bytes(peak_before)} → {human_bytes(peak_now)}"
        if removed or added:
            parts.append(f"last graph: {sum(result.removed.values())} nodes gone")
            if removed:
                parts.append(", ".join(describe(sig) for sig, _ in removed[:4]) + (" …" if len(removed) > 4 else ""))
            parts.append(f"{sum(result.added.values())} new")
            if added:
                parts.append(", ".join(describe(sig) for sig, _ in added[:4]) + (" …" if len(added) > 4 else ""))
        else:  # (said as "0 nodes gone; 0 new", it left the rest cut at 1366 px)
            parts.append("last graph: the same nodes")
        # the whole run too: a toggle may change one step only (detach at a node of step 1)
        before, now = nodes_per_step(earlier), nodes_per_step(w.run)
        if before != now:
            parts.append(f"autograd nodes per step {per_step(before, now)}")
        self.comparison = "; ".join(parts)
        w.statusBar().showMessage(self.comparison, 30000)

    def _what_if(self, run: Run) -> None:
        """What the re-run's options did to the memory (the summary beside the chart, each module
        box's activations at backward in both runs) and, for a checkpoint tried, the peak measured."""
        w = self.window
        comparisons: list = []
        if self.earlier_runs and not run.failed:
            label, earlier = self.earlier_runs[-1]
            comparisons = compare_runs(earlier, run)
            options = RunOptions.from_dict((run.start or {}).get("options") or {})
            before = RunOptions.from_dict((earlier.start or {}).get("options") or {})
            tried = [p for p in options.checkpoint if p not in before.checkpoint]
            if tried:
                self.measured[", ".join(tried)] = measured_text(", ".join(tried), earlier, run)
            w.whatif.show_comparison(comparisons, f"earlier run: {label}", f"this run: {options.label()}")
            if comparisons:
                w.scene.boxes.set_compared(module_bytes_in_both(earlier, run, comparisons[0].step))

    def _suggest(self, run: Run) -> None:
        """What checkpointing would cut, for Diagnostics (before its findings are shown: it lists
        the suggestions after them)."""
        self.window.diagnostics.set_suggestions(checkpoint_suggestions(run), list(self.measured.values()))

    def _suggest_in_slices(self, run: Run, rest: list) -> None:
        """:meth:`_suggest` for a big run, a few modules weighed a turn; then ``rest`` of the works."""
        self._gather_in_slices(run, suggesting(run), [], partial(self._suggested, rest=rest))

    def _suggested(self, run: Run, chosen: list, rest: list) -> None:
        self.window.diagnostics.set_suggestions(chosen, list(self.measured.values()))
        self._in_turns(run, rest)
