"""The runner process, started by :mod:`graphview.app.runner_client` (``python -P -c BOOTSTRAP``).

Runs one script under recording and writes its events, in batches (:mod:`graphview.core.channel`),
to the file descriptor given by ``--events-fd``. It is started by :mod:`graphview.app.runner_client`; a
clean interpreter per run keeps the script's state (default dtype, monkeypatches, CUDA
context) out of graphview, and a crash of the script out of the app.

SIGTERM stops the script at the next Python bytecode (``StopRun``), so its ``run_end`` event
is still written; a script stuck in native code is killed by the parent instead. The process
the parent starts leads its own process group and becomes the run's *keeper*
(:func:`start_keeper`): it forks the runner, adopts every orphan of the script (a child
subreaper, on Linux), and when the runner ends (or the parent's end of the ``--lifeline-fd`` pipe
closes: the parent ended the run, exited or was killed) kills every process left below it.

The event channel is moved to a high descriptor that no program the script runs inherits
(:func:`hide_channel`) and checked before each write (:class:`EventPipe`).
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import faulthandler
import gc
import json
import os
import re
import signal
import sys
import threading
import time
import weakref
from functools import partial
from typing import Callable

from graphview.core.options import RunOptions
from graphview.capture.collector import OlderObjectsFrozen
from graphview.core.channel import BatchEncoder, descriptor_identity, encode_batch


class EventPipe:
    """Writes events to the parent in batches (:mod:`graphview.core.channel`: a pickle of a list
    of events each), in as few writes as keep a crash from losing anything the script could see.

    Events wait in a list while the recorder works inside one torch call and go out as one batch
    in one write when it hands control back to the script (:meth:`handover`: an op returned,
    backward ended), at once for the script's output and the run's and steps' boundaries, and
    otherwise within :data:`WRITE_EVERY_S` while events keep coming (a backward of thousands of
    nodes), within :data:`LATE_WRITE_S` when none follow (nodes freed by the script's ``del``,
    then a long stretch of plain Python, a node that runs long: a small thread writes what
    waits). A crash in native code loses at most that much of its events.
    A write per event (11,000 a step of a 256-layer MLP) cost more than the recording itself;
    merging the events into a trace's records and encoding those as JSON here cost a 256-layer
    MLP step about 50 ms (a pickle of its events about 6 ms): whoever reads the channel and
    writes a trace does that, in its own process.

    Before ``run_end`` the C library's and Python's own stdout/stderr buffers are flushed, so the
    parent has the script's native output before it learns that the run ended. A process forked
    by the script writes nothing here.

    Before each write the descriptor is checked to be still the channel (the same pipe): a script
    that closed it (``os.closerange(3, 1024)``), or put another file in its place, gets nothing
    written into its files; the pipe stops writing and ``on_lost`` is called (the runner tells its
    keeper, which ends the run and says why)."""

    def __init__(self, fd: int, on_lost: Callable[[], None] | None = None) -> None:
        self._fd = fd
        self._on_lost = on_lost
        self.lost = False
        _widen_pipe(fd)
        self._identity = descriptor_identity(fd)
        self._events: list[dict] = []
        self._encode = BatchEncoder().encode_parts
        self._writing = 0  # the thread writing a batch (its ident), 0 when none is
        self._after_write: Callable[[], None] | None = None  # a stop that came while the script's thread wrote
        self._unsent: list = []  # the pieces of encoded batches not written yet (see BatchEncoder)
        self._counts = [0, 0]  # events and batches handed to the channel
        self._since = time.perf_counter()
        self.broken = False
        self._closed = False
        self._off = False  # a closed, broken or forked-off pipe writes nothing
        # held by whoever writes (the script's thread, the late writer; re-entered when a finaliser
        # emits a kind written at once); events are appended without it
        self._lock = threading.RLock()
        if hasattr(os, "register_at_fork"):  # not os.getpid() per event: a system call each
            os.register_at_fork(after_in_child=partial(_forked, weakref.ref(self)))  # (kept by no fork hook)
        threading.Thread(target=self._write_late_events, name="graphview-pipe", daemon=True).start()

    @property
    def counts(self) -> tuple[int, int]:
        """(events, batches) written so far (the events waiting for their batch included)."""
        return self._counts[0] + len(self._events), self._counts[1]

    def _forked(self) -> None:
        self._off = True
        self._events, self._unsent = [], []
        self._lock = threading.RLock()  # a fork may have copied it held

    #: the recorder may hand it compact events (tuples: graphview/core/compact_events.py): the
    #: channel's reader makes them the dicts they stand for, in its own process
    takes_compact = True

    def __call__(self, event: dict | tuple) -> None:
        if self._off:
            return
        # (a compact event, a tuple, is none of the kinds written at once: no look at its kind)
        at_once = type(event) is not tuple and event.get("ev") in _WRITE_AT_ONCE
        if at_once and event["ev"] == "run_end":
            flush_native_output()
        # no lock to append (one each event was most of what the pipe cost a step): the list is
        # never replaced, and a writer takes from its front what it encoded (see _take_and_send)
        self._events.append(event)
        if at_once or time.perf_counter() - self._since >= WRITE_EVERY_S:
            with self._lock:
                self._write()

    def handover(self) -> None:
        """Write what is waiting: control goes back to code that could crash the process."""
        if self._events or self._unsent:
            with self._lock:
                self._write()

    def _write(self) -> None:
        if self._off or self._writing:
            return  # (an event a finaliser emits while a batch is written goes with the next one)
        self._writing = threading.get_ident()
        try:
            self._take_and_send()
        finally:
            self._writing = 0
            after, self._after_write = self._after_write, None
            if after is not None:
                after()

    def stop_after_write(self, stop: Callable[[], None]) -> bool:
        """For a signal handler that would raise in the script's thread (the runner's Stop): when
        that thread is writing a batch, ``stop`` is called once the batch is written, and True
        returned. Raised between taking the events and sending them, it would lose them, or send
        them twice. (Python runs handlers in the main thread whichever thread the signal reached:
        blocking the signal in the writing thread could not hold it off.)"""
        if self._writing == threading.get_ident():  # (0 when no thread writes: no thread's ident)
            self._after_write = stop
            return True
        return False

    def _take_and_send(self) -> None:
        waiting = self._events
        count = len(waiting)
        if count:
            # those waiting now; any appended from here on (by another thread, or a finaliser that
            # runs while they are encoded) stay behind them for the next batch
            try:
                data = self._encode(waiting[:count])
            except MemoryError:  # at the script's memory limit: no room for a copy of them all
                self._send_one_by_one(count)
                return
            # (Ctrl-C in the script's thread: they stay and go next time)
            del waiting[:count]
            self._unsent += data
            self._counts[0] += count
            self._counts[1] += 1
        if not self._unsent:
            return
        self._since = time.perf_counter()
        if descriptor_identity(self._fd) != self._identity:
            self._lose()
            return
        self._send()

    def _send(self) -> None:
        try:
            _write_parts(self._fd, self._unsent)
        except (BrokenPipeError, OSError, ValueError) as exc:  # the parent went away: finish quietly
            self.broken = self._off = True
            if isinstance(exc, OSError) and exc.errno == errno.EBADF:  # closed since it was checked
                self._lose()

    def _send_one_by_one(self, count: int) -> None:
        """Write what is unsent, then the first ``count`` events waiting, each as a batch of its own:
        one event's copy at a time (a script at its memory limit left no room for a copy of every
        event at once)."""
        waiting = self._events
        try:
            _write_parts(self._fd, self._unsent)
            for _ in range(count):
                _write_parts(self._fd, self._encode([waiting[0]]))
                del waiting[0]
                self._counts[0] += 1
                self._counts[1] += 1
        except (BrokenPipeError, OSError, ValueError):
            self.broken = self._off = True

    def _lose(self) -> None:
        """The script closed the channel (or replaced it): write nothing more, and say so once."""
        self.broken = self._off = self.lost = True
        self._events, self._unsent = [], []
        if self._on_lost is not None:
            on_lost, self._on_lost = self._on_lost, None
            on_lost()

    def _write_late_events(self) -> None:
        """Events that no handover follows (the script freed a graph, then runs plain Python for a
        while) are written within :data:`LATE_WRITE_S` of their coming.

        The thread looks on its own clock and is never woken by the script's thread: waking it
        whenever an event came after a write (an Event set at every op) made it take the
        interpreter lock from the script twice per op, which cost more than writing the events
        (about 30 ms of a 256-layer MLP step)."""
        while not self._closed:
            # looks twice per LATE_WRITE_S: an event that came just after a write still waits at most that
            time.sleep(LATE_WRITE_S / 2)
            if self._events and time.perf_counter() - self._since >= LATE_WRITE_S / 2:
                self.handover()

    def close(self) -> None:
        if self._closed:
            return
        self.handover()
        self._closed = self._off = True  # the writer thread ends at its next look
        if self.lost or descriptor_identity(self._fd) != self._identity:
            return  # (the script closed it: the number may be a file of the script's now)
        try:
            os.close(self._fd)
        except OSError:
            pass


def _forked(pipe_ref: "weakref.ref[EventPipe]") -> None:
    pipe = pipe_ref()
    if pipe is not None:
        pipe._forked()


#: what in a script's text says it will import torch's compiler: every optimizer's constructor
#: does (torch.optim), and so do torch.compile and Hugging Face's models
_COMPILER_USERS = re.compile(rb"optim|compile|dynamo|transformers")


def import_the_compiler_if_used(script: str) -> bool:
    """Import torch's compiler (``torch._dynamo``) before the runner freezes what torch left
    behind, when the script will import it anyway; whether it did.

    An optimizer's constructor imports it (1.3-1.6 s, ~120,000 objects) after the freeze: every full
    collection then scanned them all again, 10-15% of a recorded 256-layer MLP step, as the
    recorder's short-lived events promote the script's live tensors and trigger full collections
    every few steps. Imported before the freeze, they are never scanned again. Nothing the script
    sees changes: it imports the same module, only earlier; a script that never names an
    optimizer, compile or transformers starts 1.4 s sooner without it."""
    try:
        with open(script, "rb") as source:
            text = source.read(1 << 22)
    except OSError:
        return False  # (run_script says what is wrong with the path)
    if not _COMPILER_USERS.search(text):
        return False
    try:
        import torch._dynamo  # noqa: F401
    except Exception:  # noqa: BLE001 - a torch without it, or one that fails: the script will say
        return False
    return True


#: the most pieces one ``writev`` takes (Linux's IOV_MAX)
_PIECES_A_WRITE = 1024


def _write_parts(fd: int, parts: list) -> None:
    """Write ``parts`` (bytes) to ``fd`` in order, each taken off the list once written (a write
    cut short by a signal leaves the rest: the list is what is still unsent). One ``writev``
    for a batch's pieces: the system copies them where ``os.write`` needed them joined first."""
    while parts:
        if _WRITEV is None:  # (Windows)
            parts[:] = [b"".join(parts)]
            written = os.write(fd, parts[0])
        else:
            written = _WRITEV(fd, parts[:_PIECES_A_WRITE])
        done = 0
        for part in parts:
            if written < len(part):
                break
            written -= len(part)
            done += 1
        del parts[:done]
        if written:
            parts[0] = memoryview(parts[0])[written:]


_WRITEV = getattr(os, "writev", None)


def _widen_pipe(fd: int, size: int = 1 << 20) -> None:
    """Give a pipe room for a step's events (Linux: 64 KiB by default), so the script does not
    wait while the parent, busy on the other core, has not read them yet."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except (ImportError, OSError, ValueError):  # not a pipe, not Linux, or above pipe-max-size
        pass


#: the longest an event waits in the pipe's list while the recorder keeps working
WRITE_EVERY_S = 0.002
#: the longest an event waits when nothing follows it (no handover, no other event)
LATE_WRITE_S = 0.02
#: kinds written at once: the script's output (printed just before a crash) and the boundaries
_WRITE_AT_ONCE = frozenset({  # (none a compact kind: see EventPipe.__call__)
    "run_start", "run_end", "step_start", "step_end", "stdout", "stderr", "output_capped", "error", "phase",
    "backward_end", "optimizer_step", "paused", "resumed"})


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


#: seconds the runner has to end after its keeper asks it to (its channel was closed) before it is killed
KEEPER_GRACE = 0.5
#: the message the keeper gives when the script closed the runner's end of the event channel
CHANNEL_CLOSED = ("the script closed graphview's event channel (a file descriptor of the runner); "
                  "nothing after that could be recorded, and the script was stopped there")


def start_keeper(lifeline_fd: int | None, events_fd: int) -> int | None:
    """Fork; the child returns the keeper's pid and goes on as the runner. The parent stays behind as
    the run's *keeper* and never returns.

    The keeper is a child subreaper (Linux, :func:`graphview.core.processes.become_subreaper`): a
    process the script starts that leaves its session and loses its parent (a double fork with
    ``setsid``) re-parents to the keeper, not to init, so it is still found by walking the keeper's
    descendants. The keeper:

    - forwards SIGTERM (Stop, a timeout) to the runner, and ignores SIGINT and SIGHUP;
    - when the runner exits, however it exits, kills every process left below it, then exits as the
      runner did (the same exit code, or the same signal), so the parent learns of the end only
      once nothing of the run is left;
    - when the ``lifeline_fd`` pipe closes (the parent ended the run, exited or was killed), kills
      the runner and everything below it;
    - holds its own copy of the event channel, which the script cannot close: when the runner
      finds that the script closed its copy (SIGUSR1), the keeper stops the runner and writes the
      run's end there itself (:data:`CHANNEL_CLOSED`).

    Returns None without forking where there is no ``fork``."""
    if not hasattr(os, "fork"):
        return None
    from graphview.core.processes import become_subreaper

    become_subreaper()
    keeper = os.getpid()
    # no signal may reach the keeper between the fork and its handlers: it would die, and orphan the runner
    held = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGCHLD}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    pid = os.fork()
    if pid == 0:  # the runner
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        if lifeline_fd is not None:
            os.close(lifeline_fd)
        return keeper
    try:
        code = _keep(pid, lifeline_fd, events_fd, previous)
    except BaseException:  # noqa: BLE001 - a keeper that failed still takes the run down with it
        code = 1
        _kill_all(pid)
    os._exit(code)


def _keep(runner: int, lifeline_fd: int | None, events_fd: int, mask) -> int:
    """The keeper's loop (see :func:`start_keeper`); returns its exit code or ends by the runner's signal."""
    import select

    from graphview.core.processes import _reap_children, kill_descendants

    null = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1):  # the keeper writes nothing there, and holds none of the script's output open
        os.dup2(null, target)
    os.close(null)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    state = {"lost": False, "kill_at": None}

    def on_term(signum, frame):
        _signal(runner, signal.SIGTERM)

    def on_lost(signum, frame):  # the runner says the script closed its event channel
        if not state["lost"]:
            state["lost"] = True
            state["kill_at"] = time.monotonic() + KEEPER_GRACE
            _signal(runner, signal.SIGTERM)

    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGUSR1, on_lost)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # wakes the select below
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    watched = [wake_read] + ([lifeline_fd] if lifeline_fd is not None else [])
    status = None
    while status is None:
        for pid, wait_status in _reap_children():  # the runner, and orphans that came to the keeper and ended
            if pid == runner:
                status = wait_status
        if status is not None:
            break
        if state["kill_at"] is not None and time.monotonic() >= state["kill_at"]:
            _signal(runner, signal.SIGKILL)
        ready, _, _ = select.select(watched, [], [], 0.1)
        if wake_read in ready:
            os.read(wake_read, 512)
        if lifeline_fd is not None and lifeline_fd in ready and not os.read(lifeline_fd, 1):
            # the parent is gone or ended the run: nothing of it may outlive that
            _kill_all(runner)
            return 1
    kill_descendants(os.getpid(), reap=True)
    if state["lost"]:
        _write_end(events_fd, {"ev": "run_end", "status": "error", "exit_code": 1, "message": CHANNEL_CLOSED})
    return _exit_as(status)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _kill_all(runner: int) -> None:
    from graphview.core.processes import kill_descendants

    _signal(runner, signal.SIGKILL)
    kill_descendants(os.getpid(), reap=True)


def _write_end(fd: int, event: dict) -> None:
    try:
        os.write(fd, encode_batch([event]))
    except OSError:  # the parent went away
        pass


def _exit_as(status: int) -> int:
    """End this process as the runner ended: its exit code, or the signal that killed it."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the runner dumped its own core, if any
        except (ImportError, OSError, ValueError):
            pass
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else os.WEXITSTATUS(status)


#: the lowest descriptor the runner moves its event channel to (:func:`hide_channel`)
CHANNEL_FD_FLOOR = 1024


def hide_channel(fd: int) -> int:
    """Move the event channel out of the script's way: to a high descriptor (the first free one from
    :data:`CHANNEL_FD_FLOOR`, above the ``closerange(3, 1024)`` of daemonizing code, or from just
    below the descriptor limit where that is lower), marked close-on-exec so that no program the
    script runs inherits it. The descriptor it came on is closed. Returns the new descriptor."""
    import fcntl

    import resource

    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    floor = CHANNEL_FD_FLOOR
    if limit != resource.RLIM_INFINITY and limit - 8 < floor:
        floor = max(3, limit - 8)
    try:
        moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor)
    except OSError:
        os.set_inheritable(fd, False)
        return fd
    os.close(fd)
    return moved


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


def freeze_the_setup() -> None:
    """What a step script's top level made (``import transformers``; the model, its modules and
    parameters) kept out of the collector's full collections from its first step on, as torch's
    objects are once it is imported (see :func:`main`): cyclic garbage the top level left is collected
    first (NOTE [The collector during a recording] in graphview/capture/collector.py). Given back at
    the script's own ``gc.collect()``."""
    gc.collect()
    _SETUP.freeze(over_ours=True)  # (torch's objects, frozen once it was imported)


_SETUP = OlderObjectsFrozen()


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
    keeper = start_keeper(args.lifeline_fd, args.events_fd)  # from here on this process is the runner
    faulthandler.enable(file=sys.__stderr__, all_threads=False)
    on_lost = None if keeper is None else (lambda: _signal(keeper, signal.SIGUSR1))
    pipe = EventPipe(hide_channel(args.events_fd), on_lost=on_lost)
    pipe({"ev": "phase", "phase": "torch"})  # the slow part of starting: the window says so

    from graphview.capture.script import StopRun, reserve_memory, run_script  # imports torch

    reserve_memory()
    if not args.gradcheck:
        import_the_compiler_if_used(args.script)

    # torch leaves ~10^5 long-lived objects behind; freezing them keeps the collector from
    # re-scanning them every time the recorder's short-lived events trigger a full collection.
    # Refcounting, and so every tensor's lifetime, is unchanged.
    gc.freeze()

    def stop():
        raise StopRun("stopped by graphview")

    def on_term(signum, frame):
        if not pipe.stop_after_write(stop):  # (a batch being written goes whole first)
            stop()

    signal.signal(signal.SIGTERM, on_term)
    _report_os_exit(pipe, os.path.abspath(args.script))
    options = RunOptions.from_dict(json.loads(args.options))
    end = None
    try:
        if args.gradcheck:
            end = _gradcheck(args, pipe)
        else:
            end = run_script(args.script, pipe, options, argv=json.loads(args.argv) if args.argv else None,
                             before_steps=freeze_the_setup)
        # the run is over: a Stop that comes now must not raise StopRun inside the interpreter's exit
        # (the finalisers of torch and the script, run at exit, would print it as a traceback)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except StopRun:  # a Stop that came as the run ended, after its end was recorded: it is over anyway
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pipe.close()
    return 0 if end is not None and end["status"] == "ok" else 1


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
