"""Start a runner process for a script and collect its events.

The runner (``graphview.capture.runner``) writes events to a pipe; this side reads them,
hands each to a callback (the trace writer, the GUI's model) and, when the runner dies without
saying goodbye (a segfault, ``os.abort()``, a kill), adds the ``run_end`` it could not write,
with what the runner printed on its way down. Nothing the runner sent is ever lost.

The process started here is the run's keeper (:func:`graphview.capture.runner.start_keeper`): it
forks the runner, and every process the script starts stays below it, even one that leaves its
session and loses its parent (on Linux the keeper is a child subreaper). Stop, a timeout,
SIGINT / SIGTERM / SIGHUP while recording, and this process's exit (:mod:`atexit`) end all of them
(:func:`graphview.core.processes.kill_descendants`, then the process group), and the keeper ends
them when this process dies without cleaning up (``kill -9``), because the lifeline pipe it reads
closes then.

Every line from the runner is checked as a trace file's lines are (JSON, then the schema of
:mod:`graphview.core.events` with its references to earlier events), and in the order a runner
writes them (``run_start`` first, nothing after ``run_end``). A line that fails is not the
runner's: the script wrote into graphview's event channel. Nothing from that line on is
delivered, the script is stopped, and the run ends saying so; what was delivered before it is a
valid run.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import threading
import time
from typing import Callable

from graphview.core.channel import BatchReader, ChannelError
from graphview.core.events import EventChecker, SchemaError
from graphview.core.isolated import SAFE_PATH, boot_code
from graphview.core.options import RunOptions
from graphview.core.processes import kill_descendants

STDERR_KEEP = 64 * 1024
STOP_GRACE = 0.5  # seconds a runner has to write its run_end after SIGTERM before its group is killed
STARTUP_ALLOWANCE = 120.0  # seconds graphview's own start-up (Python, importing torch) may take before a --timeout counts
#: after a short read, the events pipe is read again this much later. A reader blocked on the
#: pipe is woken by each of the runner's writes (one per op it hands back to the script): on two
#: cores that cost the recording script ~30 us a write, more than the write itself. Pausing a
#: few milliseconds lets the writes of that while pile up in the pipe (1 MiB) and go in one read.
READ_PACE_S = 0.004
#: a read at least this long means more is coming: read on at once
_FULL_READ = 1 << 15
#: pause only on a pipe this roomy (the runner widens its pipe to 1 MiB where Linux lets it): a
#: default 64 KiB pipe could fill within a pause and make the script wait
_PACED_PIPE = 1 << 18
# the runner boots isolated (graphview.core.isolated): nothing from the folder the user stands in is
# imported (a json.py there never runs), and graphview is loaded from its own folder without putting
# that folder on the script's sys.path
_BOOT = boot_code("from graphview.capture.runner import main\nsys.exit(main())")
_LIVE: set["RunnerProcess"] = set()  # runners whose process group may still be alive


def _pipe_size(fd: int) -> int:
    """The capacity of pipe ``fd`` in bytes (Linux), or 0 where it cannot be asked."""
    try:
        import fcntl

        return fcntl.fcntl(fd, getattr(fcntl, "F_GETPIPE_SZ", 1032))
    except (ImportError, OSError, ValueError):
        return 0


class Interrupted(Exception):
    """The recording was ended by a signal to this process (Ctrl-C, SIGTERM); the run's events up to
    then were delivered, ending with its ``run_end``."""

    def __init__(self, signum: int, end: dict) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.end = end
        self.detail = ""
_FAULT_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


class RunnerProcess:
    """One script running in its own interpreter, streaming events to ``on_event``."""

    def __init__(self, script: str, options: RunOptions, on_event: Callable[[dict], None],
                 python: str | None = None, extra_args: list[str] | None = None,
                 script_args: list[str] | None = None, on_phase: Callable[[dict], None] | None = None) -> None:
        """``script`` as the user typed it becomes the script's ``sys.argv[0]``, followed by
        ``script_args`` (default: ``options.args``), as ``python script ARGS`` would set them. The
        runner's ``phase`` events (what it does before the script starts) go to ``on_phase``, never
        to ``on_event``: they are no part of the run."""
        self.script = os.path.abspath(script)
        self.options = options
        self.on_event = on_event
        self.on_phase = on_phase
        self.ended = False
        self.end_event: dict | None = None
        self.stop_reason: str | None = None
        self.signal_received: int | None = None
        self._saw_start = False
        self._last_line: int | None = None
        self._reaped = False
        self._kill_timer: threading.Timer | None = None
        self._deadline: float | None = None
        self._timeout: float | None = None
        self._held_end: dict | None = None
        self._native_out: list[bytes] = []
        self._native_size = 0
        self._native_lock = threading.Lock()
        self._native_pending: list[tuple[str, bytes]] = []
        self._partial: dict[str, bytes] = {}
        self._checker = EventChecker()  # what a trace reader checks, in the same order
        self._reader = BatchReader()
        self._batches_read = 0  # batches delivered whole
        self._ended_by_runner = False
        #: why the channel's lines stopped being delivered: the script wrote into it
        self.foreign: str | None = None
        read_fd, write_fd = os.pipe()
        life_read, self._lifeline = os.pipe()
        python = python or sys.executable
        safe_path = SAFE_PATH if python == sys.executable else []
        cmd = [python, *safe_path, "-c", _BOOT, self.script,
               "--events-fd", str(write_fd), "--lifeline-fd", str(life_read),
               "--options", json.dumps(options.to_dict()),
               "--argv", json.dumps([script, *(options.args if script_args is None else script_args)])] + list(extra_args or [])
        try:
            self._proc = subprocess.Popen(
                cmd, pass_fds=(write_fd, life_read), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True,
            )
            _LIVE.add(self)
        finally:
            os.close(life_read)
            os.close(write_fd)
        self._events = os.fdopen(read_fd, "rb")
        self._drainers = [threading.Thread(target=self._drain, args=(s, name), daemon=True)
                          for s, name in ((self._proc.stdout, "stdout"), (self._proc.stderr, "stderr"))]
        for t in self._drainers:
            t.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def exited(self) -> bool:
        return self._reaped or self._exited()

    def _drain(self, stream, name: str) -> None:
        """Output written straight to the runner's descriptors (C code, child processes)."""
        for chunk in iter(lambda: stream.read1(4096) if hasattr(stream, "read1") else stream.read(4096), b""):
            with self._native_lock:
                if self._native_size < STDERR_KEEP:
                    self._native_out.append(chunk)
                    self._native_pending.append((name, chunk))
                    self._native_size += len(chunk)

    def _deliver_native(self, final: bool = False) -> None:
        """Whole lines only; a crash dump loses graphview's own frames (the script's stay)."""
        with self._native_lock:
            pending, self._native_pending = self._native_pending, []
        for name, chunk in pending:
            self._partial[name] = self._partial.get(name, b"") + chunk
        for name, data in list(self._partial.items()):
            cut = len(data) if final else data.rfind(b"\n") + 1
            if cut <= 0:
                continue
            self._partial[name] = data[cut:]
            text = data[:cut].decode("utf-8", "replace")
            if name == "stderr":
                text = self._script_frames_only(text)
            if text:
                self.on_event({"ev": name, "text": text, "native": True})

    def stop(self, reason: str = "stopped", grace: float = STOP_GRACE) -> None:
        """Ask the runner to stop (SIGTERM); kill its process group if it has not ended after
        ``grace`` seconds (a timer that is not a daemon: it fires even while this process exits)."""
        if self._reaped or self.stop_reason is not None:
            return
        self.stop_reason = reason
        try:
            self._proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            return
        self._kill_timer = threading.Timer(grace, self.kill)
        self._kill_timer.daemon = False
        self._kill_timer.start()

    def kill(self) -> None:
        """SIGKILL the runner and every process below the keeper (the script's, including those that
        left its session), then the process group."""
        if not self._reaped:
            kill_descendants(self._proc.pid)
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _exited(self) -> bool:
        """Whether the runner has exited, without reaping it (its pid, the group's id, stays ours)."""
        try:
            return os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def _check_deadline(self) -> None:
        if self._deadline is not None and self.stop_reason is None and time.monotonic() >= self._deadline:
            self.stop("timeout")

    def _reap(self) -> int:
        """The runner has exited: kill what is left of its group, close the lifeline, collect it."""
        self.kill()
        code = self._proc.wait()
        self._reaped = True
        if self._kill_timer is not None:
            self._kill_timer.cancel()  # nothing left to kill: do not keep this process waiting
        _LIVE.discard(self)
        try:
            os.close(self._lifeline)
        except OSError:
            pass
        return code

    def terminate(self, reason: str = "stopped", grace: float = STOP_GRACE) -> None:
        """Stop the runner and its group now, waiting at most ``grace`` seconds (and a little more
        for the kill); no more events are delivered."""
        if self._reaped:
            return
        self.stop(reason, grace)
        limit = time.monotonic() + grace
        while not self._exited() and time.monotonic() < limit:
            time.sleep(0.01)
        self.kill()
        self._reap()

    def _reject(self, reason: str) -> None:
        """A line the runner did not write: deliver nothing more, stop the script, end saying why."""
        self.foreign = (f"the script wrote to graphview's event channel (batch {self._batches_read + 1} of it: {reason}); "
                        "what came before is recorded, and the script was stopped there")
        self.stop("channel")

    def _in_order(self, event: dict) -> str | None:
        """What is wrong with the place of ``event`` in the runner's stream, or None."""
        kind = event["ev"]
        if self._ended_by_runner:
            return f"a {kind} event after the end of the run"
        if kind == "phase":
            return "a phase event after the start of the run" if self._saw_start else None
        if kind == "run_start":
            return "a second start of the run" if self._saw_start else None
        if not self._saw_start and kind != "run_end":
            return f"a {kind} event before the start of the run"
        return None

    def _deliver(self, event: dict) -> None:
        misplaced = self._in_order(event)
        if misplaced is not None:
            self._reject(misplaced)
            return
        if event.get("ev") == "phase":
            if self.on_phase is not None:
                self.on_phase(event)
            return
        if event.get("ev") == "run_start":
            self._saw_start = True
            if self._timeout is not None:
                self._deadline = time.monotonic() + self._timeout
        elif event.get("ev") == "run_end":
            if self.stop_reason == "timeout" and event.get("status") == "stopped":
                event["status"] = "timeout"
                event["message"] = "stopped: the script ran past its time limit"
            elif self.signal_received is not None and event.get("status") == "stopped":
                event["message"] = f"stopped: graphview received {signal.Signals(self.signal_received).name}"
            self._ended_by_runner = True
            self.end_event = self._held_end = event  # delivered after the native output still on its way
            return
        line_no = event.get("line")
        if isinstance(line_no, int):
            self._last_line = line_no
        self.on_event(event)

    def wait(self, timeout: float | None = None, poll: Callable[[], None] | None = None) -> dict:
        """Read events until the runner ends; returns the ``run_end`` event (real or synthesized).

        The runner's ``run_end`` is delivered last, after everything it wrote to its descriptors."""
        # the limit is the script's: it counts from run_start, not from graphview's own start-up
        # (Python, importing torch: seconds on a loaded machine); a start-up that hangs is still stopped
        self._timeout = timeout
        self._deadline = None if timeout is None else time.monotonic() + timeout + STARTUP_ALLOWANCE
        self._read_events(poll)
        code = self._reap_once_exited(poll)
        return self._finish(code)

    def _read_events(self, poll: Callable[[], None] | None) -> None:
        """Deliver the events of the pipe until it closes or the runner is gone (stopping it at its
        deadline, passing its native output on as it comes, calling ``poll`` between reads)."""
        selector = selectors.DefaultSelector()
        selector.register(self._events, selectors.EVENT_READ)
        fd = self._events.fileno()
        paced: bool | None = None  # asked once, after the first read
        while True:
            self._check_deadline()
            wait_for = 0.1
            if self._deadline is not None and self.stop_reason is None:
                wait_for = max(0.0, min(wait_for, self._deadline - time.monotonic()))
            if selector.select(wait_for):
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                self._take(chunk)
                if paced is None:  # by the first read the runner has widened its end of the pipe
                    paced = _pipe_size(fd) >= _PACED_PIPE
                if paced and len(chunk) < _FULL_READ:
                    time.sleep(READ_PACE_S)
            elif self._exited():
                # the runner is gone, but a process the script forked may hold the pipe open: take
                # what is already there and stop reading
                self._read_what_is_left(selector, fd)
                break
            if self._native_pending:
                self._deliver_native()
            if poll is not None:
                poll()
        selector.close()
        self._events.close()

    def _read_what_is_left(self, selector, fd: int) -> None:
        """Deliver what the pipe already holds, without waiting for more."""
        for _ in range(1024):
            if not selector.select(0):
                break
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            self._take(chunk)

    def _reap_once_exited(self, poll: Callable[[], None] | None) -> int:
        """Wait for the runner to exit (e.g. a thread of the script still running after its end),
        then reap it; returns its exit code."""
        while not self._exited():
            self._check_deadline()
            if poll is not None:
                poll()
            time.sleep(0.02)
        return self._reap()

    def _finish(self, code: int) -> dict:
        """Deliver the native output still on its way, then the run's end: the runner's own
        ``run_end``, or one said for it from its exit ``code``; returns that end."""
        limit = time.monotonic() + STOP_GRACE
        for t in self._drainers:
            t.join(timeout=max(0.0, limit - time.monotonic()))
        self.ended = True
        crash_text = self.native_output()
        self._deliver_native(final=True)
        if self.foreign is not None:  # the runner's own end, if it came, came after the script's line
            self._held_end = self.end_event = None
        if self._held_end is not None:
            self.on_event(self._held_end)
            self._held_end = None
        if self.end_event is None:
            self.end_event = self._synthesize_end(code, crash_text)
        return self.end_event

    def _take(self, chunk: bytes) -> None:
        """Deliver the events of the batches ``chunk`` completes (:mod:`graphview.core.channel`),
        each checked as a trace reader checks an event (one that fails ends the delivery:
        :meth:`_reject`); a batch not read whole yet waits for the next chunk."""
        if self.foreign is not None:
            return
        try:
            batches = self._reader.feed(chunk)
            damage = None
        except ChannelError as exc:
            batches, damage = exc.before, str(exc)
        for events in batches:
            try:
                for event in events:
                    self._checker.check(event)
                    self._deliver(event)
                    if self.foreign is not None:
                        return
            except SchemaError as exc:
                self._reject(str(exc))
                return
            self._batches_read += 1
        if damage is not None:
            self._reject(damage)

    def native_output(self) -> str:
        return b"".join(self._native_out).decode("utf-8", "replace")

    def _synthesize_end(self, code: int, text: str) -> dict:
        """The runner died without its own ``run_end``: say how, and keep what it printed."""
        if not self._saw_start:
            self.on_event({"ev": "run_start", "script": self.script, "mode": "plain", "torch": None,
                           "python": None, "devices": [], "options": self.options.to_dict(), "notes": [],
                           "source": None})
        if self.foreign is not None:
            status, message = "error", self.foreign
        elif self.stop_reason == "timeout":
            status, message = "timeout", "killed: the script ran past its time limit"
        elif self.signal_received is not None:
            status, message = "stopped", f"killed: graphview received {signal.Signals(self.signal_received).name}"
        elif self.stop_reason:
            status, message = "stopped", "killed by the user"
        else:
            status = "crashed"
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"signal {-code}"
                message = f"the script's process crashed ({name})"
            else:
                message = f"the script's process exited with code {code} before finishing"
            line = self._crash_line(text)
            self.on_event({"ev": "error", "type": "Crash", "message": message, "traceback": [], "line": line,
                           "vid": None, "bid": None})
        end = {"ev": "run_end", "status": status, "exit_code": code if code else 1, "message": message}
        self.on_event(end)
        return end

    def _script_frames_only(self, text: str) -> str:
        """A crash dump shows the runner's own frames too: keep the script's, drop graphview's."""
        kept = []
        for line in text.splitlines(keepends=True):
            match = _FAULT_LINE.search(line)
            if match and os.path.abspath(match.group("file")) != self.script and (
                    "graphview" in match.group("file") or match.group("file").startswith("<frozen")):
                continue
            kept.append(line)
        return "".join(kept)

    def _crash_line(self, text: str) -> int | None:
        """The script line in a faulthandler dump (innermost first), else the last line seen."""
        for match in _FAULT_LINE.finditer(text):
            if os.path.abspath(match.group("file")) == self.script:
                return int(match.group("line"))
        return self._last_line


def gradient_check(script: str, tensor: str, eps: float = 1e-6, timeout: float | None = 300) -> tuple[dict | None, dict]:
    """Run a gradient check in a runner process: (the ``gradcheck`` event or None, ``run_end``)."""
    events: list[dict] = []
    end = _own(lambda: RunnerProcess(script, RunOptions(), events.append,
                                     extra_args=["--gradcheck", tensor, "--eps", str(eps)]), timeout, None)
    result = next((e for e in events if e.get("ev") == "gradcheck"), None)
    return result, end


def record(script: str, options: RunOptions, on_event: Callable[[dict], None],
           timeout: float | None = None, poll: Callable[[], None] | None = None,
           script_args: list[str] | None = None) -> dict:
    """Run ``script`` in a runner process; every event goes to ``on_event``. Returns ``run_end``.

    Called on the main thread, a SIGINT, SIGTERM or SIGHUP stops the script (its run_end still
    comes) and then raises :class:`Interrupted`; a second one kills it at once."""
    return _own(lambda: RunnerProcess(script, options, on_event, script_args=script_args), timeout, poll)


def _own(start: Callable[[], RunnerProcess], timeout: float | None, poll: Callable[[], None] | None) -> dict:
    with _SignalsStop() as signals:
        runner = signals.runner = start()
        if signals.pending is not None:
            signals.stop(signals.pending)
        try:
            end = runner.wait(timeout=timeout, poll=poll)
        except BaseException:
            runner.terminate()
            raise
    if runner.signal_received is not None:
        raise Interrupted(runner.signal_received, end)
    return end


_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class _SignalsStop:
    """While a runner is started and waited for on the main thread, a stop signal stops it
    (instead of killing this process mid-write); the signal is reported afterwards."""

    def __init__(self) -> None:
        self.runner: RunnerProcess | None = None
        self.pending: int | None = None
        self.previous: dict = {}

    def stop(self, signum: int) -> None:
        runner = self.runner
        if runner is None:  # still starting: stopped as soon as it exists
            self.pending = signum
        elif runner.signal_received is None:
            runner.signal_received = signum
            runner.stop("interrupted")
        else:  # a second signal: no more waiting
            runner.kill()

    def __enter__(self) -> "_SignalsStop":
        if threading.current_thread() is threading.main_thread():
            for sig in _STOP_SIGNALS:
                self.previous[sig] = signal.signal(sig, lambda signum, frame: self.stop(signum))
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


@atexit.register
def _end_all() -> None:
    """This process is exiting: no runner or process of the script outlives it."""
    for runner in list(_LIVE):
        runner.terminate(grace=0.2)
