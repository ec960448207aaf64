"""RunController: the lifecycle of the run the window shows (begin, grow, finish).

A run begins empty (a live runner is starting) or whole (a trace, a test's recording). A live
run grows in short event-loop slices while the runner streams (:class:`~graphview.qt.event_slices.Slices`),
so the window keeps answering, and the status bar says what the runner is doing
(:mod:`graphview.qt.run_progress`); when it ends, it is finished (chart, diagnostics) and
summarised in words (:class:`~graphview.qt.run_summary.RunSummary`, which keeps the earlier runs
of the same script for the chart's overlays and for saying what a re-run with other options
changed). Where its cursor and canvas open is :mod:`graphview.qt.run_placement`: at the start, or
after "Run again" at the same op of the same step.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from functools import partial

from PySide6.QtCore import QObject, QTimer

from graphview.core import timeline
from graphview.core.options import DEFAULT_LABEL, RunOptions
from graphview.core.run import Run, bulk_load
from graphview.qt.actions import update_enabled
from graphview.qt.event_slices import Slices
from graphview.qt.plain import esc
from graphview.qt.run_placement import RunPlacement
from graphview.qt.run_summary import RunSummary
from graphview.qt.run_window import RunWindow

OVERLAY_COLORS = ["#7c3aed", "#db2777", "#0891b2", "#65a30d", "#ea580c", "#475569"]
#: the least of the event loop's turn worth a round of growing the canvas (less: a later turn)
GROW_SLICE_MIN_S = 0.010
#: what the slices after a round take, about, on a run of a million events: the cursor and its
#: panels; the memory chart; the end of the run (its chart whole, its findings)
CURSOR_SLICE_S, CHART_SLICE_S, FINISH_SLICE_S = 0.012, 0.020, 0.030


class RunController(QObject):
    """Begins, grows and finishes the window's run; ``window`` gives the parts of the window it
    uses (:class:`~graphview.qt.run_window.RunWindow`).

    Attributes
    ----------
    summary : RunSummary
        The finished run in words, and the earlier runs of the same script.
    slices : Slices
        The work of a live round (and of the summary) waiting for a turn of the event loop.
    live_refresh : QTimer
        The next round of catching up with a streaming run; idle when there is nothing to do.
    """

    def __init__(self, window: RunWindow) -> None:
        super().__init__(window)  # (the window is a QObject too: the controller's parent)
        self.window = window
        self._afresh = False  # the next run begun is of a file opened anew, not a re-run
        self.slices = Slices(self)
        self.summary = RunSummary(window, self.slices)
        self.placement = RunPlacement(window.session, window.view, window.keep_in_view)
        self._rerun_from: tuple[Run, int] | None = None
        self._finished = False
        self._events_over = False  # no more events will come (a trace read to its end, or cancelled)
        self.reading = False  # the run's events come from a trace being read, not from a runner
        self._chart_turn = 0
        # while a runner streams, the views catch up at most ten times a second
        self.live_refresh = QTimer(self)
        self.live_refresh.setSingleShot(True)
        self.live_refresh.setInterval(60)
        self.live_refresh.timeout.connect(self._refresh_live)

    @property
    def earlier_runs(self) -> list[tuple[str, Run]]:
        """Earlier runs of the current script, oldest first, drawn as overlays on the memory chart."""
        return self.summary.earlier_runs

    @property
    def comparison(self) -> str:
        """What the last finished run changed against the one before it, in words ("" if nothing)."""
        return self.summary.comparison

    @property
    def settled(self) -> bool:
        """Nothing of the run is waiting to be drawn or summarised."""
        run = self.window.run
        return not (self.live_refresh.isActive() or self.slices.pending > 0
                    or self.window.scene.boxes.pending
                    or (run is not None and (run.end is not None or self._events_over) and not self._finished))

    @property
    def going(self) -> bool:
        """Events may still come: a runner is running, or a trace is being read."""
        run = self.window.run
        return run is not None and run.end is None and not self._events_over

    def overview_index(self) -> int:
        """The run's last graph complete, just before backward consumes it (what an image export
        draws by default)."""
        return timeline.overview(self.window.run)

    def start_afresh(self) -> None:
        """A file is opened (again): the next run has no earlier runs to compare with, even of the same script."""
        self._afresh = True

    def note_rerun(self, options: RunOptions | None = None) -> None:
        """A re-run of the shown script was asked for: the next run begun keeps the cursor's place."""
        w = self.window
        self._rerun_from = (w.run, w.cursor) if w.run is not None and w.run.events else None

    def begin(self, script_path: str | None, options: RunOptions, run: Run | None = None) -> None:
        """Show a (new) run; the previous one stays as an overlay on the memory chart."""
        w = self.window
        rerun, self._rerun_from = self._rerun_from, None
        if rerun is not None and (script_path is None or script_path != w.script_path or rerun[0] is not w.run):
            rerun = None  # the place of a run of another script means nothing here
        afresh, self._afresh = self._afresh, False
        if afresh or script_path is None or script_path != w.script_path:
            self.summary.forget_earlier_runs()  # another script, or a file opened anew: nothing to compare with
        elif w.run is not None and len(w.run.events) > 1:
            label = RunOptions.from_dict((w.run.start or {}).get("options", {})).label()
            self.earlier_runs.append((label, w.run))
        run = run if run is not None else Run()
        w.statusBar().clearMessage()  # what the last run ended with is not this run's news
        w.status_label.setText("")
        w.bottom_tabs.setTabText(w.bottom_tabs.indexOf(w.diagnostics), "Diagnostics")
        w.script_path = script_path
        w.options = options
        w.toggles.set_options(options)
        self._say_if_rerun(script_path, run)
        # a trace shown whole: nothing of it is waiting, so nothing to stop (said before the views
        # hear of the run: the actions are greyed as they hear it, even for a trace cut off without an end)
        self._finished = self._events_over = bool(run.events)
        self.reading = False
        self._chart_turn = 0
        w.whatif.clear()  # the comparison comes when this run has ended
        w.scene.boxes.set_compared({})
        w.session.set_run(run)  # every view: the scene, the chart, the panels, the timeline bar
        w.session.follow_live = False  # a run opens at its start (or where the re-run left it), not at its end
        self.placement.begin(run, *(rerun or (None, -1)))
        w.search.clear()
        if w.bottom_tabs.currentWidget() is w.console:  # brought forward by an earlier failure
            w.bottom_tabs.setCurrentWidget(w.memory_tab)
        for i, (name, earlier) in enumerate(overlay_names(self.earlier_runs[-6:])):
            w.memory.add_overlay(earlier, name, OVERLAY_COLORS[i % len(OVERLAY_COLORS)])
        w.show_workspace()
        name = os.path.basename(script_path) if script_path else "run"
        w.setWindowTitle(window_title(name, options))
        self.refresh_source()
        if run.events:  # a trace: all of it at once
            w.progress.finish()
            self.grow()
            self.placement.place(final=True)
        elif script_path:
            w.progress.start(script_path)

    def _say_if_rerun(self, script_path: str | None, run: Run) -> None:
        """A trace is a recording: running it again (other options, a suggestion's "Try it") needs
        its script, which the user opens; a path the trace names is never run for them."""
        w = self.window
        w.toggles.setEnabled(bool(script_path))
        w.toggles.setToolTip("" if script_path else "a trace is a recording: open its script to run it again "
                             "with other options")
        named = str((run.start or {}).get("script") or "")
        script = f"its script ({os.path.basename(named)})" if named else "its script"
        w.diagnostics.set_rerun(None if script_path else f"This is a trace, a recording: open {script} with "
                                "File > Open to re-run it with this checkpoint.")

    def append_events(self, events: list[dict]) -> None:
        """Live: the runner sent more events."""
        w = self.window
        if w.run is None or not events:
            return
        if w.run.start is None:  # the runner's phases come before the run itself: news, not events
            for event in events:
                if event.get("ev") == "phase":
                    w.progress.set_phase(str(event.get("phase")))
            events = [event for event in events if event.get("ev") != "phase"]
            if not events:
                return
        first = len(w.run.events) == 0
        w.run.extend(events)
        if first:
            self.refresh_source()
            self._refresh_live()
        elif not self.live_refresh.isActive():
            self.live_refresh.start()

    def events_ended(self) -> None:
        """No more events will come for this run (a trace read to its end, cut off, or cancelled):
        what is left is drawn and the run is placed as a finished one, even without an end event."""
        self._events_over = True
        if not self._finished and not self.live_refresh.isActive():
            self.live_refresh.start()

    def _refresh_live(self) -> None:
        """One round of catching up with a streaming run, in short event-loop slices (new items;
        then the cursor and its panels; then, every fifth round, the chart), so the window
        repaints and answers input between them. Reschedules itself while work is left."""
        w = self.window
        run = w.run
        if run is None:
            return
        ended = run.end is not None or self._events_over
        if not self.slices.turn.room_for(self._refresh_live, GROW_SLICE_MIN_S):
            self.slices.later(self._retry_refresh)  # this pass of the event loop is full: a later one
            return
        # while the runner streams, small rounds keep the window responsive; once it has ended,
        # nothing competes and the backlog is worked off in larger ones
        with bulk_load() if self.reading else nullcontext():  # (see bulk_load: what a trace makes lives on)
            more = self.grow(budget=200 if ended else 40, chart=False, seconds=self.slices.turn.left())
        w.progress.update_run(run, w.options.steps)
        # the chart of a trace being read is drawn less often: its picture of a million events costs
        self._chart_turn = (self._chart_turn + 1) % (20 if self.reading and not ended else 5)

        def cursor_slice() -> None:
            if self.reading and w.run is run:
                run.memory_arrays(self._device())  # kept current a little at a time; pictured now and then
            if w.run is run and not w.player.playing:
                if w.pending_step.waiting:  # a step asked for goes to its moment once it is recorded
                    if not w.pending_step.check(ended=False):  # (the run's end: finish says)
                        w.set_cursor(w.cursor)
                elif self.placement.active:
                    self.placement.place()
                else:
                    w.set_cursor(w.cursor)  # the run grew under the cursor: the views count it
            # while a trace is read, the chart waits its turn even when the canvas has caught up
            if self._chart_turn == 0 or (not more and (ended or not self.reading)):
                self.slices.later(chart_slice, CHART_SLICE_S)

        def chart_slice() -> None:
            if w.run is run:
                # a trace still being read: a rough picture, cheap enough to draw often
                w.memory.show_run(run, self._device(), rough=self.reading and not self._events_over)
                w.memory.set_cursor(w.cursor)

        self.slices.later(cursor_slice, CURSOR_SLICE_S)
        if more:
            if not self.live_refresh.isActive():
                self.live_refresh.start()
        elif ended and not self._finished:
            self._finished = True
            self.slices.later(partial(self._finish_slice, run), FINISH_SLICE_S)

    def _retry_refresh(self) -> None:
        if not self.live_refresh.isActive():  # (else the timer's round comes soon enough)
            self._refresh_live()

    def _finish_slice(self, run: Run) -> None:
        if self.window.run is run:  # (not a run opened since)
            self.finish()

    def finish(self) -> None:
        """The run is over and drawn: its chart, diagnostics and summary, and (unless the user
        moved the cursor) the cursor where the run opens, in an event-loop slice of its own."""
        w = self.window
        if w.run is None or (w.run.end is None and not self._events_over):
            return
        update_enabled(w, w.actions)  # (Stop: nothing runs any more)
        w.progress.finish()
        w.memory.show_run(w.run, self._device())
        # a step asked for while the run was recorded: taken now, or the run ended without its
        # moment (before the summary: a failure's report, said after, is the last word)
        w.pending_step.check(ended=True)
        if w.run.end is not None:
            self.summary.summarise()
        if self.placement.active:
            self.placement.place(final=True)
        else:
            w.set_cursor(w.cursor)

    def grow(self, budget: int | None = None, chart: bool = True, seconds: float | None = None) -> bool:
        """Take in what the run gained (``budget`` items in about ``seconds``: see
        :meth:`GraphScene.grow`); returns True while canvas items are still waiting."""
        w = self.window
        run = w.run
        w.scene.live = run.end is None and not self._events_over
        w.scene.ended = not w.scene.live
        w.scene.patient = self.reading and not self._events_over
        more = w.scene.grow(budget=budget, seconds=seconds)
        w.timeline_bar.set_length(len(run.events))
        if run.start:
            w.toggles.set_devices(run.start.get("devices") or [])
        if chart:
            w.memory.show_run(run, self._device())
        if budget is None and run.end is not None:
            self.summary.summarise()
        return more

    def _device(self) -> str:
        w = self.window
        if w.options.device:
            return w.options.device
        run = w.run
        if run is not None:
            used = [d for d in run.devices if d.startswith("cuda")]
            if used and any(p[1] == used[0] for p in run.memory_points):
                return used[0]
        return "cpu"

    def refresh_source(self) -> None:
        """The code pane shows the run's source (or the script's file) and, for a step script, how
        graphview runs it."""
        w = self.window
        source = (w.run.start or {}).get("source") if w.run else None
        if source is None and w.script_path and os.path.exists(w.script_path):
            try:
                with open(w.script_path, encoding="utf-8") as f:
                    source = f.read()
            except (OSError, UnicodeDecodeError):
                source = ""
        w.code.set_source(source or "")
        start = w.run.start if w.run else None
        if start and start.get("mode") == "step":
            steps = (start.get("options") or {}).get("steps") or w.options.steps
            # two lines of the pane at 1366x768 (its narrowest); the tooltip says it in whole sentences
            w.code_note.setText(f"<b>step()</b> runs {esc(steps)}× (Run options → steps), backward on its loss, then "
                                "the optimizer; skips <code>__main__</code>.")
            w.code_note.setToolTip(f"<qt>A step script: graphview calls <b>step()</b> {esc(steps)} times (Run options → "
                                   "steps), runs backward on the loss it returns and steps <code>optimizer</code> "
                                   "after each call; the script's <code>if __name__ == \"__main__\":</code> block "
                                   "does not run.</qt>")
            w.code_note.show()
        else:
            w.code_note.hide()
        # the number of steps means something only for a step script
        w.toggles.steps.setEnabled(bool(start) and start.get("mode") == "step")


def overlay_names(earlier_runs: list[tuple[str, Run]]) -> list[tuple[str, Run]]:
    """The memory chart's name of each earlier run: its options, numbered where two runs had the same
    options (a script edited and run again), so that no two lines of the legend read alike."""
    counts: dict[str, int] = {}
    for label, _ in earlier_runs:
        counts[label] = counts.get(label, 0) + 1
    seen: dict[str, int] = {}
    named = []
    for label, run in earlier_runs:
        seen[label] = seen.get(label, 0) + 1
        number = f" {seen[label]}" if counts[label] > 1 else ""
        named.append((f"earlier run{number}: {label} options", run))
    return named


def window_title(name: str, options: RunOptions) -> str:
    """``graphview — train.py``, with the run's options where they are not the defaults
    (``[retain_graph=on, detach at fc2]``): a bare "[default]" read as nothing a newcomer knew."""
    label = options.label()
    return f"graphview — {name}" if label == DEFAULT_LABEL else f"graphview — {name} [{label}]"
