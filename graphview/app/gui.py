"""Start the desktop app and wire runner processes into the window.

The runner's events arrive on a reader thread; a 30 ms timer on the GUI thread hands them to
the window in batches, so the GUI thread never waits on the runner.
"""

from __future__ import annotations

import gc
import os
import queue
import sys
import threading

from graphview.core.bundled import bundled_samples
from graphview.core.files import set_reading
from graphview.core.options import APP_STEPS, RunOptions
from graphview.core.run import bulk_load

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BATCH_MS = 30
QUEUE_LIMIT = 50_000  # events waiting for the GUI; beyond this the runner waits (pipe backpressure)
BATCH_EVENTS = 500
#: the longest the pump hands events to the window in one tick, and the least of the event
#: loop's turn it takes (less is left: it waits for the next tick, unless it waited too long)
PUMP_S, PUMP_MIN_S = 0.012, 0.004


def ensure_display() -> None:
    """Render offscreen when there is no display (CI, ssh): the CLI export needs no screen."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") and sys.platform.startswith("linux"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def qt_app():
    ensure_display()
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv[:1])
        app.setApplicationName("graphview")
        app.setOrganizationName("graphview")
    return app


class LiveRun:
    """A runner process whose events flow into a queue drained by the GUI thread."""

    def __init__(self, script: str, options: RunOptions) -> None:
        from graphview.app.runner_client import RunnerProcess

        self.queue: queue.Queue = queue.Queue(maxsize=QUEUE_LIMIT)
        self.done = threading.Event()
        self.stopping = False
        self.abandoned = False
        self.runner = None
        self._spawned = threading.Event()
        # starting a process takes tens of milliseconds: not on the GUI thread
        self.thread = threading.Thread(target=self._wait, args=(RunnerProcess, script, options), daemon=True)
        self.thread.start()

    def _put(self, event: dict) -> None:
        """Runs on the reader thread: blocks while the GUI is behind, so the runner waits too."""
        while True:
            try:
                self.queue.put(event, timeout=0.2)
                return
            except queue.Full:
                if self.abandoned:  # the user moved on to another run: nobody will read these
                    return

    def _wait(self, runner_class, script, options) -> None:
        try:
            self.runner = runner_class(script, options, self._put, on_phase=self._put)
            self._spawned.set()
            if self.stopping:
                self.runner.stop("stopped", grace=0.8)
            self.runner.wait()
        finally:
            self._spawned.set()
            self.done.set()

    def drain(self, limit: int = 20000) -> list[dict]:
        events = []
        while len(events) < limit:
            try:
                events.append(self.queue.get_nowait())
            except queue.Empty:
                break
        return events

    def stop(self) -> None:
        self.stopping = True
        if self.runner is not None:
            self.runner.stop("stopped", grace=0.8)

    @property
    def process_ended(self) -> bool:
        return self.runner is not None and self.runner.exited


class App:
    """The running application: one window, the current live run (if any)."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        from graphview.qt.event_loop_turn import event_loop_turn
        from graphview.qt.main_window import MainWindow

        self.qt = qt_app()
        # the thread reading a runner's events shares the interpreter lock with the GUI thread:
        # hand it over every 1 ms rather than 5 ms, so a burst of parsing never holds the GUI up
        sys.setswitchinterval(0.001)
        self.window = MainWindow(samples=bundled_samples())
        self.live: LiveRun | None = None
        self.window.sigOpenRequested.connect(self.open)
        self.window.sigRunRequested.connect(self.rerun)
        self.window.sigStopRequested.connect(self.stop)
        self.window.sigGradcheckRequested.connect(self.gradcheck)
        self.window.progress.sigCancel.connect(self.stop)
        self.gradchecks: queue.SimpleQueue = queue.SimpleQueue()
        self.turn = event_loop_turn()  # the pump shares each pass of the event loop with the window's slices
        self.timer = QTimer()
        self.timer.timeout.connect(self._pump)
        self.timer.start(BATCH_MS)
        # Everything built so far (Qt wrappers, torch-free modules) lives as long as the app: keep
        # the collector's full passes from re-scanning it (a full pass over it blocks ~100 ms).
        gc.freeze()

    def open(self, path: str, args: list[str] | None = None) -> bool:
        """Run a script (a file named ``.py``; ``args``: its arguments, ``sys.argv[1:]``) or open a
        trace (any other file, refused unless it is one): what a file holds never makes it run."""
        from graphview.app.inputs import UserError, check_script, is_trace

        if not path:
            return False
        if not os.path.exists(path):
            self.window.show_error("Cannot open", f"no such file: {path}")
            return False
        if is_trace(path):
            return self.open_trace(path)
        try:
            check_script(path)
        except UserError as exc:
            self.window.show_error("Cannot open script", str(exc))
            return False
        set_reading(self, [path])  # no export or saved trace may replace it
        self.window.remember(os.path.abspath(path))
        self.window.runs.start_afresh()  # opening a file starts afresh: overlays come from "Run again"
        self.start(os.path.abspath(path), RunOptions(steps=APP_STEPS, args=list(args or [])))
        return True

    def open_trace(self, path: str) -> bool:
        """Open a trace. Its first piece is read and checked before the run on screen is touched (a
        file that is no trace is refused with its reason); a trace longer than that is shown as it
        is read on a piece at a time between repaints, with a progress bar and a Cancel in the status bar."""
        from graphview.app.trace_load import TraceLoad
        from graphview.core.run import Run, bulk_load
        from graphview.app.inputs import looks_like_trace
        from graphview.core.files import PARTIAL_SUFFIX
        from graphview.core.trace import SCRIPT_SUFFIX, SUFFIX, TraceError
        from graphview.core.trace_pieces import TracePieces

        try:
            pieces = TracePieces(path)
            first = pieces.next_piece()
        except TraceError as exc:
            if not path.endswith((SUFFIX, SUFFIX + PARTIAL_SUFFIX)) and not looks_like_trace(path):
                self.window.show_error("Cannot open", f"{os.path.basename(path)} is neither a Python script "
                                       f"({SCRIPT_SUFFIX}) nor a graphview trace ({SUFFIX}): graphview runs scripts "
                                       f"named {SCRIPT_SUFFIX} and opens traces")
            else:
                self.window.show_error("Cannot open trace", str(exc))
            return False
        if not first:
            note = "; ".join(pieces.warnings) or "the recording stopped before the script started"
            self.window.show_error("Damaged trace", f"{path} holds no readable events: {note}")
            return False
        self.stop()
        if self.live is not None:
            self.live.abandoned = True
            self.live = None
        header = pieces.header
        options = RunOptions.from_dict(header.get("options") or {})
        if pieces.done:  # all of it in one piece: shown whole at once
            with bulk_load():
                run = Run(first)
                self.window.begin_run(None, options, run)
        else:
            run = Run()
            self.window.begin_run(None, options, run)
            self.window.runs.reading = True  # its end will come: the drawing waits for it as for a whole trace
            self.live = TraceLoad(pieces)
            self.window.progress.start_reading(os.path.basename(path), self.live)
            self.window.append_events(first)
        self.loading_path = path
        set_reading(self, [path])  # no export or saved trace may replace it
        self.window.script_path = None
        self.window.remember(os.path.abspath(path))
        script = (run.start or {}).get("script") or header.get("script")
        self.window.setWindowTitle(trace_title(path, script, options, header, run.start))
        self.show_rank_set(path, header, run.start)
        if pieces.done:
            self._warn_if_damaged(path, pieces.warnings)
        return True

    def _warn_if_damaged(self, path: str, warnings: list[str]) -> None:
        if warnings:
            note = "; ".join(warnings)
            self.window.statusBar().showMessage(f"warning: {note}", 60000)
            self.window.show_warning("Damaged trace", f"Only part of {path} could be read; what was "
                                     f"readable is shown.\n\n{note}")

    def _trace_read(self, load) -> None:
        """A trace load has handed over its last event: say how it ended; a trace without an end
        (cut off, cancelled, refused part way) is placed as a finished one would be."""
        window = self.window
        window.progress.finish()
        window.runs.events_ended()
        path = getattr(self, "loading_path", "the trace")
        shown = len(window.run.events) if window.run is not None else 0
        if load.error:
            message = f"{load.error}; stopped reading there: the {shown:,} events before it are shown"
            window.statusBar().showMessage(message, 60000)
            window.show_warning("Trace partly refused", message)
        elif load.cancelled:
            window.statusBar().showMessage(f"stopped reading {os.path.basename(path)} at event {shown:,} "
                                           f"({load.fraction:.0%} of the file): what was read is shown", 30000)
        else:
            self._warn_if_damaged(path, load.pieces.warnings)

    def show_rank_set(self, path: str, header: dict, start: dict | None) -> None:
        """A rank's trace of a distributed job: the window offers the job's other ranks."""
        from graphview.core.ranks import rank_label, rank_set

        start = start or {}
        rank = start.get("rank", header.get("rank"))
        ranks = rank_set(path) if rank_label(header, start) else {}
        self.window.show_ranks(ranks, rank if ranks or rank is not None else None,
                               start.get("world_size", header.get("world_size")))

    def start(self, script: str, options: RunOptions) -> None:
        if self.live is not None:
            self.live.abandoned = True
        self.stop()
        self.window.begin_run(script, options)
        self.window.show_ranks({}, None)
        self.live = LiveRun(script, options)

    def rerun(self, options: RunOptions) -> None:
        if self.window.script_path:
            self.start(self.window.script_path, options)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()

    def gradcheck(self, tensor: str) -> None:
        """Run a gradient check in its own runner process; the result arrives through the pump."""
        from graphview.app.runner_client import gradient_check

        script = self.window.script_path

        def work():
            try:
                self.gradchecks.put(gradient_check(script, tensor))
            except Exception as exc:  # noqa: BLE001 - reported in the window
                self.gradchecks.put((None, {"status": "error", "message": str(exc)}))

        threading.Thread(target=work, daemon=True).start()

    def _pump(self) -> None:
        """Hand queued events to the window in batches, for about 12 ms per timer tick (less when
        the window's own slices have used this pass of the event loop: see EventLoopTurn)."""
        import time

        while not self.gradchecks.empty():
            self.window.show_gradcheck(*self.gradchecks.get())
        live = self.live
        if live is None or not self.turn.room_for(self._pump, PUMP_MIN_S):
            return
        deadline = time.monotonic() + min(PUMP_S, max(self.turn.left(), PUMP_MIN_S))
        events = live.drain(BATCH_EVENTS)
        if events:
            # the run's records live on: no collection of young objects while they are made (each
            # would look them over; in a slice of a few ms they cost as much as the slice), and
            # frozen after, out of every later collection
            with bulk_load():
                while events:
                    self.window.append_events(events)
                    events = live.drain(BATCH_EVENTS) if time.monotonic() < deadline else None
        if getattr(live, "fraction", None) is not None:  # a trace being read
            self.window.progress.update_reading(len(self.window.run.events) if self.window.run else 0)
            if live.finished:
                self.live = None
                self._trace_read(live)
        elif live.done.is_set() and live.queue.empty():
            self.live = None

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Tests and screenshot scripts: process events until the live run has ended."""
        import time

        deadline = time.monotonic() + timeout
        window = self.window
        while time.monotonic() < deadline and (self.live is not None or not window.runs.settled):
            self.qt.processEvents()
            time.sleep(0.01)
            self._pump()
        for _ in range(5):
            self.qt.processEvents()
        return self.live is None


def trace_title(path: str, script: str | None, options: RunOptions, header: dict, start: dict | None) -> str:
    """``graphview — run.rank1.gvtrace (train.py --lr 0.1, rank 1 of 2)``."""
    from graphview.core.options import args_text
    from graphview.core.ranks import rank_label

    what = os.path.basename(script or "")
    argv = (start or {}).get("argv") or header.get("argv") or []
    args = argv[1:] if argv else options.args
    if args:
        what += " " + args_text(args)
    label = rank_label(header, start)
    if label:
        what += f", {label}"
    return f"graphview — {os.path.basename(path)} ({what.strip()})"


def main(path: str | None = None, args: list[str] | None = None) -> int:
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                                                  or os.environ.get("QT_QPA_PLATFORM")):
        print("graphview: no display to open the window on (DISPLAY is not set). Run it on a desktop, "
              "under a virtual one (xvfb-run -a graphview ...), or use graphview record/export/info.",
              file=sys.stderr)
        return 2
    app = App()
    app.window.show()
    if path:
        app.open(path, args)
    return app.qt.exec()
