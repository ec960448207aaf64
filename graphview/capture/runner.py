"""The runner process, started by :mod:`graphview.app.runner_client` (``python -P -c BOOTSTRAP``).

Runs one script under recording and writes its events, one JSON object per line, to the file
descriptor given by ``--events-fd``. It is started by :mod:`graphview.app.runner_client`; a
clean interpreter per run keeps the script's state (default dtype, monkeypatches, CUDA
context) out of graphview, and a crash of the script out of the app.

SIGTERM stops the script at the next Python bytecode (``StopRun``), so its ``run_end`` event
is still written; a script stuck in native code is killed by the parent instead. The runner
leads its own process group; a forked watchdog kills the whole group when the parent's end of
the ``--lifeline-fd`` pipe closes (the parent ended the run, exited or was killed).
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import gc
import json
from json.encoder import c_make_encoder, encode_basestring_ascii
import os
import signal
import sys
import threading
import time

from graphview.core.options import RunOptions


class EventPipe:
    """Writes events to the parent, one JSON line each, in as few writes as keep a crash from
    losing anything the script could see.

    Lines wait in a buffer while the recorder works inside one torch call and go out in one
    write when it hands control back to the script (:meth:`handover`: an op returned, backward
    ended), at once for the script's output and the run's and steps' boundaries, and otherwise
    within :data:`WRITE_EVERY_S` while events keep coming (a backward of thousands of nodes),
    within :data:`LATE_WRITE_S` when none follow (nodes freed by the script's ``del``, then a long
    stretch of plain Python: a small thread writes what waits). A crash in native code loses at
    most that much of its events. A write per event (11,000 a step of a
    256-layer MLP) cost more than the recording itself.

    Before ``run_end`` the C library's and Python's own stdout/stderr buffers are flushed, so the
    parent has the script's native output before it learns that the run ended. A process forked
    by the script writes nothing here."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        _widen_pipe(fd)
        self._dumps = event_encoder()
        self._lines: list[str] = []
        self._unsent = b""
        self._since = time.perf_counter()
        self.broken = False
        self._closed = False
        self._off = False  # a closed, broken or forked-off pipe writes nothing
        # the script's thread and the late-line writer; re-entered when a finaliser emits
        self._lock = threading.RLock()
        if hasattr(os, "register_at_fork"):  # not os.getpid() per event: a system call each
            os.register_at_fork(after_in_child=self._forked)
        threading.Thread(target=self._write_late_lines, name="graphview-pipe", daemon=True).start()

    def _forked(self) -> None:
        self._off = True
        self._lines, self._unsent = [], b""
        self._lock = threading.RLock()  # a fork may have copied it held

    def __call__(self, event: dict) -> None:
        if self._off:
            return
        kind = event.get("ev")
        if kind == "run_end":
            flush_native_output()
        line = self._dumps(event)
        with self._lock:
            self._lines.append(line)
            if kind in _WRITE_AT_ONCE or time.perf_counter() - self._since >= WRITE_EVERY_S:
                self._write()

    def handover(self) -> None:
        """Write what is buffered: control goes back to code that could crash the process."""
        if self._lines or self._unsent:
            with self._lock:
                self._write()

    def _write(self) -> None:
        if self._off:
            return
        lines = self._lines
        if lines:
            # no container is made from here to the clear (that could start the collector, whose
            # finalisers emit: see NOTE [Deaths reported by finalisers]), and a Stop (SIGTERM raises
            # in the script's thread) loses no line; what a write left goes first next time
            self._unsent += ("\n".join(lines) + "\n").encode("ascii")
            lines.clear()
        if not self._unsent:
            return
        self._since = time.perf_counter()
        try:
            while self._unsent:
                self._unsent = self._unsent[os.write(self._fd, self._unsent):]
        except (BrokenPipeError, OSError, ValueError):  # the parent went away: finish quietly
            self.broken = self._off = True

    def _write_late_lines(self) -> None:
        """Lines that no handover follows (the script freed a graph, then runs plain Python for a
        while) are written within :data:`LATE_WRITE_S` of their coming.

        The thread looks on its own clock and is never woken by the script's thread: waking it
        whenever a line came after a write (an Event set at every op) made it take the
        interpreter lock from the script twice per op, which cost more than writing the lines
        (about 30 ms of a 256-layer MLP step)."""
        while not self._closed:
            # looks twice per LATE_WRITE_S: a line that came just after a write still waits at most that
            time.sleep(LATE_WRITE_S / 2)
            if self._lines and time.perf_counter() - self._since >= LATE_WRITE_S / 2:
                self.handover()

    def close(self) -> None:
        if self._closed:
            return
        self.handover()
        self._closed = self._off = True  # the writer thread ends at its next look
        try:
            os.close(self._fd)
        except OSError:
            pass


def _widen_pipe(fd: int, size: int = 1 << 20) -> None:
    """Give a pipe room for a step's events (Linux: 64 KiB by default), so the script does not
    wait while the parent, busy on the other core, has not read them yet."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except (ImportError, OSError, ValueError):  # not a pipe, not Linux, or above pipe-max-size
        pass


def event_encoder():
    """``event -> one line of JSON`` (compact, ASCII, anything unknown as its ``str``).

    json's C encoder made once and called directly: ``JSONEncoder.encode`` builds it anew for
    every call and tracks containers against cycles (events are trees), which cost more than
    encoding a small event."""
    if c_make_encoder is None:  # a Python without json's C speedups
        return json.JSONEncoder(separators=(",", ":"), default=str, check_circular=False).encode
    chunks = c_make_encoder(None, str, encode_basestring_ascii, None, ":", ",", False, False, True)
    join = "".join
    return lambda event: join(chunks(event, 0))


#: the longest a line waits in the pipe's buffer while the recorder keeps working
WRITE_EVERY_S = 0.002
#: the longest a line waits when nothing follows it (no handover, no other event)
LATE_WRITE_S = 0.02
#: kinds written at once: the script's output (printed just before a crash) and the boundaries
_WRITE_AT_ONCE = frozenset({"run_start", "run_end", "step_start", "step_end", "stdout", "stderr", "output_capped",
                            "error", "phase", "backward_end", "optimizer_step", "paused", "resumed"})


def flush_native_output() -> None:
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no C library to ask (not a POSIX system)
        pass


def watch_lifeline(fd: int) -> None:
    """Fork a watchdog that kills this process group once ``fd`` reads end-of-file."""
    if not hasattr(os, "fork"):
        return
    if os.fork() != 0:
        os.close(fd)
        return
    try:  # the watchdog: holds no descriptor but its lifeline, so it keeps no pipe of the run open
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):
            os.dup2(null, target)
        os.closerange(3, fd)
        os.closerange(fd + 1, 1 << 16)
        while os.read(fd, 1):
            pass
        os.killpg(os.getpgrp(), signal.SIGKILL)
    finally:
        os._exit(0)


def _report_os_exit(pipe: EventPipe, script: str) -> None:
    """``os._exit(n)`` skips every ``finally``: say where the script called it before it happens."""
    real_exit = os._exit
    runner_pid = os.getpid()

    def _exit(code: int) -> None:
        if os.getpid() == runner_pid:
            frame, line = sys._getframe(1), None
            while frame is not None:
                if os.path.abspath(frame.f_code.co_filename) == script:
                    line = frame.f_lineno
                    break
                frame = frame.f_back
            where = f" at line {line}" if line else ""
            pipe({"ev": "run_end", "status": "ok" if code == 0 else "exit", "exit_code": code,
                  "message": f"the script called os._exit({code}){where}"})
        real_exit(code)

    os._exit = _exit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="graphview-runner")
    parser.add_argument("script")
    parser.add_argument("--events-fd", type=int, required=True)
    parser.add_argument("--lifeline-fd", type=int, default=None)
    parser.add_argument("--options", default="{}", help="RunOptions as JSON")
    parser.add_argument("--argv", default=None, help="the script's sys.argv as JSON (argv[0] as the user typed it)")
    parser.add_argument("--gradcheck", metavar="TENSOR", help="check this leaf's gradient instead of recording")
    parser.add_argument("--eps", type=float, default=1e-6)
    args = parser.parse_args(argv)
    if args.lifeline_fd is not None:
        watch_lifeline(args.lifeline_fd)
    faulthandler.enable(file=sys.__stderr__, all_threads=False)
    pipe = EventPipe(args.events_fd)
    pipe({"ev": "phase", "phase": "torch"})  # the slow part of starting: the window says so

    from graphview.capture.script import StopRun, run_script  # imports torch

    # torch leaves ~10^5 long-lived objects behind; freezing them keeps the collector from
    # re-scanning them every time the recorder's short-lived events trigger a full collection.
    # Refcounting, and so every tensor's lifetime, is unchanged.
    gc.freeze()

    def on_term(signum, frame):
        raise StopRun("stopped by graphview")

    signal.signal(signal.SIGTERM, on_term)
    _report_os_exit(pipe, os.path.abspath(args.script))
    options = RunOptions.from_dict(json.loads(args.options))
    if args.gradcheck:
        end = _gradcheck(args, pipe)
    else:
        end = run_script(args.script, pipe, options, argv=json.loads(args.argv) if args.argv else None)
    pipe.close()
    return 0 if end["status"] == "ok" else 1


def _gradcheck(args, pipe) -> dict:
    import torch

    from graphview.capture.gradcheck import gradient_check
    from graphview.capture.script import ScriptError, StopRun, error_event

    pipe({"ev": "run_start", "script": os.path.abspath(args.script), "mode": "gradcheck", "torch": torch.__version__,
          "python": sys.version.split()[0], "devices": ["cpu"], "options": {}, "notes": [], "source": None})
    try:
        result = gradient_check(args.script, args.gradcheck, args.eps)
    except (ScriptError, StopRun) as exc:
        end = {"ev": "run_end", "status": "error", "exit_code": 1, "message": str(exc)}
    except Exception as exc:  # noqa: BLE001 - the script failed during a re-run
        pipe(error_event(exc, os.path.abspath(args.script)))
        end = {"ev": "run_end", "status": "error", "exit_code": 1, "message": f"{type(exc).__name__}: {exc}"}
    else:
        pipe({"ev": "gradcheck", **result})
        end = {"ev": "run_end", "status": "ok", "exit_code": 0, "message": ""}
    pipe(end)
    return end


if __name__ == "__main__":
    sys.exit(main())
