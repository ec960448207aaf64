"""Recording from inside a program or a notebook: ``with graphview.record("run.gvtrace"):``.

The same :class:`~graphview.capture.recorder.Recorder` the runner process uses records what runs
inside the block, in the user's own process and thread, and the events go, in batches written
where control goes back to the program, to a process of graphview's that writes the trace file
as they come (:mod:`graphview.core.trace_process`: flushed at every step end and at least once a
second; the records and their JSON are made there, on another core). The trace is the one
``graphview record`` writes, and opens the same way.

Steps are the user's own loop: a step ends when ``optimizer.step()`` returns (any optimizer), or
at ``rec.step()`` for a loop without one (once it is called, only its calls count).
``start_step=k, steps=n`` records steps ``k .. k+n-1`` only: before them and after them no hook is
installed, so the rest of the loop runs as if graphview were not there. ``rec.pause()`` /
``rec.resume()`` leave out a part by hand.

Under ``torchrun`` (``RANK`` and ``WORLD_SIZE`` in the environment, or an initialized process
group) every process writes its own trace, ``run.rank<N>.gvtrace``, with its rank in the header.
"""

from __future__ import annotations

import linecache
import os
import platform
import sys
import threading
from functools import partial
from typing import Callable

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from torch.overrides import _get_current_function_mode_stack

from graphview.capture.collector import OlderObjectsFrozen
from graphview.capture.hooks.ops import _OpMode
from graphview.capture.recorder import Recorder
from graphview.capture.runner import EventPipe
from graphview.capture.script import OBSERVER_NOTES, available_devices, error_event
from graphview.core.events import OUTPUT_CAP
from graphview.core.options import RunOptions
from graphview.core.files import PARTIAL_SUFFIX
from graphview.core.ranks import rank_path
from graphview.core.trace import SUFFIX, TraceError, TraceWriter, make_header
from graphview.core.trace_process import TraceProcess

_STEP_OPENING = frozenset({"op", "module_enter", "backward_start", "grad_reset", "optimizer_step", "tensor"})
_OPTION_NAMES = ("retain_graph", "create_graph", "detach_at")


def distributed_rank() -> tuple[int | None, int | None]:
    """(rank, world size) of this process in a job of several (torchrun's environment, or an
    initialized process group); (None, None) for a single process."""
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            return dist.get_rank(), dist.get_world_size()
    except (ImportError, RuntimeError, ValueError):
        pass
    try:
        world = int(os.environ.get("WORLD_SIZE", "1"))
        rank = int(os.environ["RANK"]) if world > 1 else None
    except (KeyError, ValueError):
        return None, None
    return (rank, world) if rank is not None else (None, None)


def already_recording() -> bool:
    """Whether a recorder records this thread now (the program runs under ``graphview record`` or
    in the app, or inside another ``graphview.record()`` block)."""
    return any(isinstance(mode, _OpMode) for mode in _get_current_function_mode_stack())


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    return get is not None and get() is not None


def notebook_name() -> str | None:
    """The file name of the notebook this kernel runs (``train.ipynb``), where the front end says
    it: VS Code in ``__vsc_ipynb_file__``, JupyterLab in ``__session__``, Jupyter Server in the
    kernel's ``JPY_SESSION_NAME``; None when none does (a cell's own file is the kernel's
    temporary ``/tmp/ipykernel_123/35464209.py``, no name for a caption)."""
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    ip = get() if get is not None else None
    names = dict(getattr(ip, "user_ns", None) or {})
    for value in (names.get("__vsc_ipynb_file__"), names.get("__session__"), os.environ.get("JPY_SESSION_NAME")):
        if isinstance(value, str) and value.strip().lower().endswith(".ipynb"):
            return os.path.basename(value.strip())
    return None


def _source_of(filename: str) -> str | None:
    """The caller's source: its file, or a notebook cell (IPython keeps cells in linecache)."""
    lines = linecache.getlines(filename)
    return "".join(lines) if lines else None


class _Tee:
    """``sys.stdout`` / ``sys.stderr`` while recording: everything still goes where it went, and
    the first :data:`OUTPUT_CAP` characters become events too (the app's Console)."""

    def __init__(self, stream, name: str, emit: Callable[[dict], None]) -> None:
        self._stream = stream
        self._name = name
        self._emit = emit
        self._left = OUTPUT_CAP

    def write(self, text):
        written = self._stream.write(text)
        if self._left > 0 and isinstance(text, str) and text:
            part = text[: self._left]
            self._left -= len(part)
            self._emit({"ev": self._name, "text": part})
        return written

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


#: how long leaving the block waits for the process writing the trace when no run_end could reach it
LOST_PIPE_WAIT_S = 10.0


class Recording:
    """What ``graphview.record(...)`` returns: a context manager, and the handle of its trace.

    ``path``: the trace written (``run.rank1.gvtrace`` on rank 1 of a distributed job).
    In a notebook the object shows the recorded graph inline; :meth:`open` opens the trace in the
    graphview app.
    """

    def __init__(self, path: str | os.PathLike = "run" + SUFFIX, *, start_step: int = 1, steps: int | None = None,
                 caller=None, **options) -> None:
        unknown = sorted(set(options) - set(_OPTION_NAMES))
        if unknown:
            raise TypeError(f"graphview.record() got unknown option(s) {', '.join(unknown)}; "
                            f"it takes {', '.join(_OPTION_NAMES)}, start_step and steps")
        if not isinstance(start_step, int) or start_step < 1:
            raise ValueError(f"graphview.record(): start_step must be a step number from 1, not {start_step!r}")
        if steps is not None and (not isinstance(steps, int) or steps < 1):
            raise ValueError(f"graphview.record(): steps must be at least 1 (or None: to the end), not {steps!r}")
        detach = options.get("detach_at") or []
        self.options = RunOptions(retain_graph=bool(options.get("retain_graph")),
                                  create_graph=bool(options.get("create_graph")),
                                  detach_at=[detach] if isinstance(detach, str) else list(detach))
        self.options.validate()
        self.rank, self.world_size = distributed_rank()
        self.path = os.path.abspath(rank_path(os.fspath(path), self.rank))
        self.start_step = start_step
        self.steps = steps
        frame = caller if caller is not None else sys._getframe(1)
        self.script = frame.f_code.co_filename
        self._scope = frame.f_globals
        self.step_number = 1  # the user's loop: the step running now
        self.status = "new"  # new -> waiting (before start_step) | recording <-> paused -> done
        self._pipe: EventPipe | None = None  # the events, in batches, to the process writing the trace
        self._trace_process: TraceProcess | None = None
        self._pid: int | None = None  # the process that began the block (a fork of it leaves the trace to it)
        self._recorder: Recorder | None = None
        self._lock = threading.RLock()
        self._step_open = False
        self._explicit_steps = False
        self._hook = None
        self._in_hook = False  # inside torch's loop over the optimizer-step hooks (see _optimizer_stepped)
        self._streams: tuple | None = None
        self._svg: str | None = None
        self._page: str | None = None  # the web page player, made once asked for (player())
        # the program's older objects out of the collector's full collections while the window is open
        self._older = OlderObjectsFrozen()  # (NOTE [The collector during a recording] in capture/collector.py)
        self.write_error: str | None = None

    # ------------------------------------------------------------------ the block
    def __enter__(self) -> "Recording":
        if self.status != "new":
            raise RuntimeError("this graphview recording was used already: call graphview.record() again")
        if already_recording():
            print(f"graphview: this program is being recorded already (graphview record, or the app): "
                  f"graphview.record({os.path.basename(self.path)!r}) adds nothing to that recording", file=sys.stderr)
            self.status = "outer"
            return self
        header = make_header(script=self.script, options=self.options.to_dict(), origin="graphview.record()",
                             rank=self.rank, world_size=self.world_size)
        try:
            writer = TraceWriter(self.path, header)
        except TraceError as exc:
            raise OSError(f"graphview.record(): {exc}") from None
        try:
            self._trace_process = TraceProcess(writer)
        except OSError as exc:
            writer.abandon()
            raise OSError(f"graphview.record(): cannot start the process that writes {self.path}: {exc}") from None
        self._pipe = EventPipe(self._trace_process.events_fd)
        self._pid = os.getpid()
        self._emit(self._run_start())
        self._hook = register_optimizer_step_post_hook(self._optimizer_stepped)
        self.status = "waiting"
        if self.start_step == 1:
            self._begin_window()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._in_hook = False
        if self.status in ("done", "outer"):
            self._remove_hook()
            return False
        if exc is None:
            self._finish("ok", 0, "")
        elif isinstance(exc, KeyboardInterrupt):
            self._finish("stopped", 1, "interrupted")
        elif isinstance(exc, SystemExit) and exc.code in (None, 0):
            self._finish("ok", 0, "the program called sys.exit(0)")
        else:
            self._emit(error_event(exc, os.path.abspath(self.script)))
            self._finish("error", 1, f"{type(exc).__name__}: {exc}")
        return False  # the program's exception goes on as it would without graphview

    def _run_start(self) -> dict:
        start = {"ev": "run_start", "script": self.script, "mode": "inprocess", "torch": torch.__version__,
                 "python": platform.python_version(), "devices": available_devices(),
                 "options": self.options.to_dict(), "notes": OBSERVER_NOTES, "source": _source_of(self.script)}
        if not _in_notebook():  # a kernel's argv is the kernel's, not the user's program's
            start["argv"] = [str(a) for a in sys.argv]
        else:  # the cell's file is a temporary one: captions name the notebook ("" when unknown)
            start["notebook"] = notebook_name() or ""
        if self.rank is not None:
            start["rank"], start["world_size"] = self.rank, self.world_size
        return start

    # ------------------------------------------------------------------ writing
    def _emit(self, event: dict | tuple) -> None:
        """Hand ``event`` to the process writing the trace (see graphview/core/trace_process.py:
        the events go in batches, written where control goes back to the program; one that can no
        longer write, a full disk, says why at the end)."""
        with self._lock:
            pipe = self._pipe
            if pipe is None:
                return
            if not self._step_open and self.status == "recording" and \
                    (event[0] if type(event) is tuple else event["ev"]) in _STEP_OPENING:
                self._step_open = True
                pipe({"ev": "step_start", "step": self.step_number})
            pipe(event)

    def _handover(self) -> None:
        pipe = self._pipe
        if pipe is not None:
            pipe.handover()

    # ------------------------------------------------------------------ the recording window
    def _begin_window(self) -> None:
        emit = partial(Recording._emit, self)  # (a partial takes an attribute; no call between)
        emit.handover = self._handover  # written where control goes back to the program
        emit.takes_compact = True  # (the trace's process reads them as the runner's reader does)
        self._recorder = Recorder(emit, self.script, self.options)
        self._recorder.own_optimizer_hooks = False  # this recording's one hook calls it (_optimizer_stepped)
        self._recorder.script = self.script  # as Python names it (a notebook cell has no real path)
        self._recorder.extra_scopes.append(self._scope)
        self._resume_hooks()
        self._older.freeze()

    def _resume_hooks(self) -> None:
        self._recorder.__enter__()
        self.status = "recording"
        self._streams = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = _Tee(sys.stdout, "stdout", self._emit), _Tee(sys.stderr, "stderr", self._emit)

    def _pause_hooks(self) -> None:
        if self._streams is not None:
            sys.stdout, sys.stderr = self._streams
            self._streams = None
        self._recorder.__exit__(None, None, None)

    def _close_step(self) -> None:
        if self._step_open:
            self._step_open = False
            self._emit({"ev": "step_end", "step": self.step_number, "result": None})

    def _finish(self, status: str, exit_code: int, message: str) -> None:
        """End the recording: hooks off, ``run_end`` written, the trace renamed into place."""
        if self.status == "waiting" and status == "ok":
            message = (f"nothing recorded: the block ended in step {self.step_number}, before start_step "
                       f"{self.start_step}")
        self._older.give_back()
        if self.status in ("recording", "paused"):
            self._close_step()
            if self.status == "recording":
                self._pause_hooks()
            self._recorder._active = False
        if not self._in_hook:
            self._remove_hook()
        self.status = "done"
        self._emit({"ev": "run_end", "status": status, "exit_code": exit_code, "message": message})
        with self._lock:
            pipe, self._pipe = self._pipe, None
        pipe.close()
        if os.getpid() != self._pid:  # a process forked inside the block: the trace is its parent's
            self._trace_process.forget()
            return
        if pipe.lost or pipe.broken:  # (no run_end reached the writing process: it ends with the pipe)
            reason = self._trace_process.finish(timeout=LOST_PIPE_WAIT_S)
            if pipe.lost:
                reason = (f"the program closed the pipe to the process writing {self.path}; what was "
                          f"recorded before is kept in {self.path}{PARTIAL_SUFFIX}")
        else:
            reason = self._trace_process.finish()
        if reason is not None:  # (a full disk: the program went on, and what was written is kept)
            self.write_error = reason
            print(f"graphview: {reason}", file=sys.__stderr__)

    # ------------------------------------------------------------------ steps
    def step(self) -> None:
        """End the step now (a loop without an optimizer): from this call on, only calls of
        ``rec.step()`` end steps, not ``optimizer.step()``."""
        self._explicit_steps = True
        self._next_step()

    def _optimizer_stepped(self, optimizer, args, kwargs) -> None:
        """The recording's one global optimizer-step hook, registered when the block begins and
        removed when it ends. torch loops over these hooks while it runs, and a dict of hooks must
        not change size in that loop: the recorder of a window registers none of its own (its post
        hook is called from here), so a window opens and closes here, in the hook, with no hook
        added or removed. No profile function is set either: cProfile, py-spy and torch.profiler
        see the program as they would without graphview."""
        if self.status in ("done", "new", "outer"):
            return
        if self.status == "recording":
            self._recorder._optimizer_post(optimizer, args, kwargs, depth=4)
        if self._explicit_steps:
            return
        self._in_hook = True
        try:
            self._next_step()
        finally:
            self._in_hook = False

    def _remove_hook(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

    def _next_step(self) -> None:
        if self.status in ("done", "new", "outer"):
            return
        if self.status in ("recording", "paused"):
            self._close_step()
        self.step_number += 1
        if self.steps is not None and self.step_number >= self.start_step + self.steps:
            if self.status != "waiting":
                self._finish("ok", 0, f"recorded steps {self.start_step} to {self.step_number - 1}")
        elif self.status == "waiting" and self.step_number >= self.start_step:
            self._begin_window()

    # ------------------------------------------------------------------ pausing by hand
    def pause(self) -> None:
        """Stop recording until :meth:`resume`: the code in between runs without graphview's hooks.
        Nodes and saved tensors recorded before are still reported when autograd frees them."""
        if self.status != "recording":
            return
        line = _caller_line(self.script)
        self._emit({"ev": "paused", "line": line})
        self._pause_hooks()
        self._recorder._active = True  # its finalizers still report what the paused code frees
        self.status = "paused"

    def resume(self) -> None:
        """Record again after :meth:`pause`."""
        if self.status != "paused":
            return
        self._resume_hooks()
        self._emit({"ev": "resumed", "line": _caller_line(self.script)})

    # ------------------------------------------------------------------ showing it
    def open(self):
        """Open the trace in the graphview app (a process of its own); returns that process."""
        from graphview.capture.showing import open_in_app

        return open_in_app(self._finished_path("open"))

    def svg(self) -> str:
        """The graph as the CLI's ``graphview export run.gvtrace -o graph.svg`` draws it."""
        if self._svg is None:
            from graphview.capture.showing import export_svg

            self._svg = export_svg(self._finished_path("draw"))
        return self._svg

    def player(self):
        """The run as the web page player, shown inline by a notebook (``rec.player()`` in a cell):
        a slider and the window's keys to step through it, in a sandboxed frame."""
        if self._page is None:
            from graphview.capture.showing import export_web_page

            self._page = export_web_page(self._finished_path("play"))
        from graphview.capture.showing import Player

        return Player(self._page)

    def _repr_svg_(self) -> str | None:
        if self.status != "done" or self.write_error:
            return None
        return self.svg()

    def _finished_path(self, what: str) -> str:
        if self.status == "outer":
            raise RuntimeError("graphview: this block wrote no trace of its own: the program was being recorded "
                               "already (graphview record, or the app), and that recording holds it")
        if self.status != "done":
            raise RuntimeError(f"graphview: the recording is still going on: {what} it after the with block")
        if self.write_error:
            raise RuntimeError(f"graphview: {self.write_error}")
        return self.path

    def __repr__(self) -> str:
        steps = f", steps {self.start_step}-{self.start_step + self.steps - 1}" if self.steps else ""
        return f"<graphview recording {self.path} ({self.status}{steps})>"


def _caller_line(script: str) -> int | None:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == script:
            return frame.f_lineno
        frame = frame.f_back
    return None


def record(path: str | os.PathLike = "run" + SUFFIX, *, start_step: int = 1, steps: int | None = None,
           _caller=None, **options) -> Recording:
    """See :func:`graphview.record`."""
    return Recording(path, start_step=start_step, steps=steps, caller=_caller or sys._getframe(1), **options)
