"""Run a user's script under the recorder: plain scripts and step scripts.

A *plain script* runs top to bottom as ``__main__``. A *step script* defines a top-level
``step()``: it is imported (its ``if __name__ == "__main__":`` block does not run) and
``step()`` is called once per training step by the protocol in :mod:`graphview.capture.steps`.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import os
import warnings
import platform
import sys
import traceback
import types
from typing import Callable

import torch

from graphview.capture.recorder import Recorder
from graphview.capture.script_names import bound
from graphview.capture.steps import StepLog, run_steps
from graphview.capture.summaries import summarize
from graphview.capture.whatif import WhatIf
from graphview.core.events import OUTPUT_CAP
from graphview.core.options import RunOptions

OBSERVER_NOTES = [
    "Recording uses a TorchFunctionMode, which turns off the fused fast path of "
    "nn.MultiheadAttention / nn.TransformerEncoderLayer (used only in eval mode without grad); "
    "their outputs may differ in the last bits from an unrecorded run.",
    "Ops a torch.utils.checkpoint recompute runs inside backward are recorded and marked as the "
    "'checkpoint recompute' module; other code inside backward (a custom autograd.Function's "
    "backward) is not recorded op by op.",
    "A script that installs its own saved_tensors_hooks (save_on_cpu, checkpoint) manages those "
    "saved tensors itself: they are not counted while its hooks are active.",
    "Ops run in threads other than the script's main thread are not recorded (backward calls are).",
    "torch.compile'd code runs differently under recording (Dynamo sees the recording mode); "
    "results may differ in the last bits.",
    "Objects that exist when recording starts (a step script's setup; in graphview.record(), the "
    "program's) are left out of Python's automatic full garbage collections while recording: a "
    "reference cycle among them is freed at the script's own gc.collect(), or when recording ends.",
]


class StopRun(BaseException):
    """Raised in the script's thread to stop it (a user's Stop, a timeout)."""


class ScriptError(Exception):
    """The script could not be started (unreadable, not UTF-8, a syntax error)."""


def available_devices() -> list[str]:
    devices = ["cpu"]
    try:
        if torch.cuda.is_available():
            devices += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    except Exception:  # noqa: BLE001 - a broken driver must not stop the run
        pass
    try:
        if torch.backends.mps.is_available():
            devices.append("mps")
    except Exception:  # noqa: BLE001
        pass
    return devices


def load_source(path: str) -> str:
    """The script's text; raises :class:`ScriptError` with a user-facing reason."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ScriptError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise ScriptError(f"{path} is a folder, not a Python script") from None
    except OSError as exc:
        raise ScriptError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")  # a byte order mark, as Python itself accepts it
    except UnicodeDecodeError as exc:
        raise ScriptError(f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # Windows (and old Mac) line ends


def is_step_script(tree: ast.Module) -> bool:
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "step" for node in tree.body)


class _Output(io.TextIOBase):
    """Replaces ``sys.stdout``/``sys.stderr`` while the script runs: its output becomes events.

    The cap counts characters. ``buffer`` takes bytes (decoded as UTF-8); ``fileno()`` is the
    real descriptor, whose output the parent process collects too.
    """

    def __init__(self, stream: str, emit: Callable[[dict], None], cap: int = OUTPUT_CAP,
                 real: object = None) -> None:
        self.stream = stream
        self._emit = emit
        self._left = cap
        self._capped = 0
        self._real = real
        self.buffer = _BinaryOutput(self)

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self._left > 0:
            part = text[: self._left]
            self._left -= len(part)
            self._emit({"ev": self.stream, "text": part})
            if len(part) < len(text):
                self._capped += len(text) - len(part)
        else:
            self._capped += len(text)
        return len(text)

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        if self._real is None:
            raise io.UnsupportedOperation("fileno")
        return self._real.fileno()

    def close_report(self) -> None:
        if self._capped:
            self._emit({"ev": "output_capped", "stream": self.stream, "bytes": self._capped})

    @property
    def encoding(self) -> str:  # some libraries ask
        return "utf-8"

    def isatty(self) -> bool:
        return False


class _BinaryOutput(io.RawIOBase):
    def __init__(self, text: _Output) -> None:
        self._text = text

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._text.write(bytes(data).decode("utf-8", "replace"))
        return len(data)


# errors torch raises only because graphview records (a mode or hook it needs is refused): what to
# tell the user instead of a bare torch message
RECORDING_LIMITS = [
    ("don't yet support saved tensor hooks",
     "graphview cannot record this: torch.func transforms (grad, vjp, jacrev, hessian) refuse the "
     "saved-tensor hooks graphview counts saved tensors with"),
]


def recording_limit(message: str) -> str | None:
    return next((text for pattern, text in RECORDING_LIMITS if pattern in message), None)


def error_event(exc: BaseException, script: str) -> dict:
    """An ``error`` event: exact message, and the traceback frames that are in the script."""
    frames = []
    for fs in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(fs.filename) == script:
            frames.append({"file": fs.filename, "line": fs.lineno, "func": fs.name, "text": (fs.line or "").strip()})
    line = frames[-1]["line"] if frames else None
    if isinstance(exc, SyntaxError) and exc.lineno and os.path.abspath(exc.filename or "") == script:
        line = exc.lineno
        frames.append({"file": exc.filename, "line": exc.lineno, "func": "<module>", "text": (exc.text or "").strip()})
    message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    limit = recording_limit(message)
    if limit is not None:
        message = f"{limit}. torch says: {message}"
    event = {
        "ev": "error", "type": type(exc).__name__, "message": message, "traceback": frames, "line": line,
        "vid": getattr(exc, "_graphview_vid", None), "bid": getattr(exc, "_graphview_bid", None),
        "limit": limit is not None,
    }
    failed = getattr(exc, "_graphview_op", None)  # an op the script called raised (OpHooks._note_failed_op)
    if isinstance(failed, dict) and event["vid"] is None and event["bid"] is None:
        # its three fields only, each of its type (the script could have set the attribute itself)
        op, inputs, module = failed.get("op"), failed.get("inputs"), failed.get("module")
        if type(op) is str and type(inputs) is list and all(type(t) is int for t in inputs) \
                and (module is None or type(module) is str):
            event.update(op=op, inputs=inputs, module=module)
    return event


def _grad_mode_context(mode: str):
    if mode == "no_grad":
        return torch.no_grad()
    if mode == "inference_mode":
        return torch.inference_mode()
    return contextlib.nullcontext()


_GRAPHVIEW_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_TORCH_DISPATCH = (os.sep + os.path.join("torch", "overrides.py"), os.sep + os.path.join("torch", "_tensor.py"))


_GRAPHVIEWS_OWN_HOOKS = "when there are global hooks on modules"


@contextlib.contextmanager
def _warnings_point_at_the_script():
    """A warning torch raises inside a recorded op names the frame that called the op, which is
    now the recorder's: show it at the script's line instead, as plain Python would."""
    original = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if _GRAPHVIEWS_OWN_HOOKS in str(message):
            return  # torch.compile(module) warns of the global module hooks: graphview's, not the script's
        if filename.startswith(_GRAPHVIEW_DIR) or filename.endswith(_TORCH_DISPATCH):
            frame = sys._getframe(1)
            while frame is not None:
                name = frame.f_code.co_filename
                if not (name.startswith(_GRAPHVIEW_DIR) or name.endswith(_TORCH_DISPATCH)
                        or name == warnings.__file__):
                    filename, lineno, line = name, frame.f_lineno, None
                    break
                frame = frame.f_back
        original(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning
    try:
        yield
    finally:
        warnings.showwarning = original


class _NoInput(io.TextIOBase):
    """``sys.stdin`` while the script runs: graphview gives scripts no input, and says so."""

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> str:
        raise EOFError("EOF when reading a line: graphview runs scripts without standard input; "
                       "give the values in the script or as arguments after --")

    readline = read

    def isatty(self) -> bool:
        return False


def run_script(path: str, emit: Callable[[dict], None], options: RunOptions | None = None,
               keep_globals: dict | None = None, record: bool = True,
               on_step_result: Callable[[int, object], None] | None = None,
               argv: list[str] | None = None, before_steps: Callable[[], None] | None = None) -> dict:
    """Run ``path`` under recording, sending every event to ``emit``. Returns the ``run_end`` event.

    Never raises for problems of the script itself: they become ``error`` events. If
    ``keep_globals`` is a dict, the script's module globals are copied into it (in-process use).
    ``record=False`` runs the script the same way without the recorder (the reference a
    fidelity check compares with); ``on_step_result(step, result)`` sees what each ``step()``
    returned. The script sees what ``python ARGV...`` gives it (``argv[0]`` the path as typed,
    default ``path``, then ``options.args``): that ``sys.argv``, ``__file__``, and its own folder (symlinks resolved)
    first on ``sys.path``. ``before_steps()`` is called once a step script's top level has run, before its
    first step (the runner's process keeps the collector off what it made: see there).
    """
    options = options or RunOptions()
    if argv is None and options.args:
        argv = [path, *options.args]
    script = os.path.abspath(path)
    start = _start_event(path, script, options, argv)
    loaded = _load(script, start, emit)
    if isinstance(loaded, dict):
        return loaded  # the run_end of a script that could not start
    tree, code = loaded
    step_mode = is_step_script(tree)
    start["mode"] = "step" if step_mode else "plain"
    emit(start)

    stdout, stderr = _Output("stdout", emit, real=sys.__stdout__), _Output("stderr", emit, real=sys.__stderr__)
    recorder = Recorder(emit, script, options) if record else None
    status, exit_code, message = "ok", 0, ""
    with _script_environment(path, script, argv, stdout, stderr, options.device):
        module = _script_module(step_mode, recorder)
        whatif = WhatIf(options, script, [module.__dict__], recorder, emit)
        try:
            with recorder or contextlib.nullcontext(), _grad_mode_context(options.grad_mode), \
                    _warnings_point_at_the_script(), whatif.installed():
                try:
                    sys.modules[module.__name__] = module
                    if step_mode:
                        exec(code, module.__dict__)
                        if before_steps is not None:
                            before_steps()
                        _run_steps(module, options, recorder, emit, _returned_name(tree), on_step_result, whatif)
                    else:  # a plain script is all forward and all step
                        with whatif.around_step(), whatif.around_forward():
                            exec(code, module.__dict__)
                finally:
                    _collect_script_globals(recorder, module.__dict__, emit, keep_globals)
        except BaseException as exc:  # noqa: BLE001 - every failure of the script is an event
            status, exit_code, message = _outcome(exc, script, emit)
    _report_after_run(whatif, stdout, stderr, recorder, options, emit)
    return _end(emit, status, exit_code, message)


def _start_event(path: str, script: str, options: RunOptions, argv: list[str] | None) -> dict:
    """The ``run_start`` event of a run of ``script`` (its mode and source are filled in once it is loaded)."""
    return {
        "ev": "run_start", "script": script, "mode": "plain", "torch": torch.__version__,
        "python": platform.python_version(), "devices": available_devices(), "options": options.to_dict(),
        "notes": OBSERVER_NOTES, "source": None, "argv": [str(a) for a in argv] if argv else [path],
    }


def _script_module(step_mode: bool, recorder: Recorder | None) -> types.ModuleType:
    """The module the script runs as: ``__main__``, or for a step script a module of its own name (so
    its ``if __name__ == "__main__":`` block does not run), with the ``__file__`` ``python`` gives it;
    the recorder also looks in its globals for the names of tensors."""
    module = types.ModuleType("__main__" if not step_mode else "graphview_step_script")
    module.__file__ = os.path.join(os.getcwd(), sys.argv[0])
    module.__builtins__ = builtins
    if recorder is not None:
        recorder.extra_scopes.append(module.__dict__)
    return module


def _collect_script_globals(recorder: Recorder | None, scope: dict, emit, keep_globals: dict | None) -> None:
    """Once the script has run (or failed): the tensors its globals still hold named after them,
    and (in-process use) the globals copied into ``keep_globals``."""
    if recorder is not None:
        recorder.flush_names()
        _final_names(recorder, scope, emit)
    if keep_globals is not None:
        keep_globals.update(scope)


def _report_after_run(whatif: WhatIf, stdout: _Output, stderr: _Output, recorder: Recorder | None,
                      options: RunOptions, emit) -> None:
    """What is left to say once the script has ended: the what-if options' report, how much output
    the cap dropped, and a ``--detach-at`` that matched nothing."""
    whatif.report()
    stdout.close_report()
    stderr.close_report()
    if recorder is not None and options.detach_at and recorder.detach_hits == 0:
        emit({"ev": "stderr", "text": f"graphview: --detach-at {', '.join(options.detach_at)} "
                                      "matched nothing in this run\n"})


def _load(script: str, start: dict, emit) -> tuple | dict:
    """(ast, code) of the script, or the ``run_end`` of one that cannot start (emitted, with
    ``run_start`` and the error)."""
    try:
        source = load_source(script)
    except ScriptError as exc:
        emit(start)
        emit({"ev": "error", "type": "ScriptError", "message": str(exc), "traceback": [], "line": None, "vid": None, "bid": None})
        return _end(emit, "error", 1, str(exc))
    start["source"] = source
    try:
        tree = ast.parse(source, filename=script)
        return tree, compile(tree, script, "exec")
    except SyntaxError as exc:
        emit(start)
        emit(error_event(exc, script))
        return _end(emit, "error", 1, f"syntax error at line {exc.lineno}: {exc.msg}")


@contextlib.contextmanager
def _script_environment(path: str, script: str, argv: list[str] | None, stdout, stderr, device: str | None):
    """What ``python ARGV...`` gives the script (``sys.argv``, its folder first on ``sys.path``, no
    stdin), its output captured, the default device set; all of it restored afterwards."""
    saved = (sys.argv, list(sys.path), sys.stdout, sys.stderr, sys.stdin)
    previous_main = sys.modules.get("__main__")
    sys.argv = list(argv) if argv else [path]
    sys.path.insert(0, os.path.dirname(os.path.realpath(script)))
    sys.stdout, sys.stderr, sys.stdin = stdout, stderr, _NoInput()
    try:
        if device:
            torch.set_default_device(device)
        yield
    finally:
        sys.argv, sys.path[:], sys.stdout, sys.stderr, sys.stdin = saved
        if previous_main is not None:
            sys.modules["__main__"] = previous_main
        sys.modules.pop("graphview_step_script", None)
        if device:
            torch.set_default_device(None)


def _outcome(exc: BaseException, script: str, emit) -> tuple[str, int, str]:
    """(status, exit code, message) of a run the script ended with ``exc``; an ``error`` event for failures."""
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None or code == 0:
            return "ok", 0, "the script called sys.exit(0)"
        return "exit", code if isinstance(code, int) else 1, f"the script called sys.exit({code!r})"
    if isinstance(exc, StopRun):
        return "stopped", 1, str(exc) or "stopped"
    if isinstance(exc, KeyboardInterrupt):
        return "stopped", 1, "interrupted"
    _RESERVE.clear()  # the run is over: what was held back is for reporting how it ended
    if isinstance(exc, MemoryError) and _raised_by_graphview(exc, script):
        return _out_of_memory(exc, script, emit)
    event = error_event(exc, script)
    emit(event)
    where = f" at line {event['line']}" if event["line"] else ""
    return "error", 1, f"{type(exc).__name__}{where}: {exc}"


#: address space held back while the script runs (:func:`reserve_memory`)
_RESERVE: list = []


def reserve_memory(size: int = 8 << 20) -> None:
    """Hold ``size`` bytes of address space back (never touched, so no memory is used) for
    reporting how the run ended: a script at its memory limit (``RLIMIT_AS``) leaves no room for the
    report's own objects, and without them the report fails too."""
    _RESERVE[:] = [bytearray(size)]


def _raised_by_graphview(exc: BaseException, script: str) -> bool:
    """Whether the innermost frame of ``exc`` that is the script's or graphview's is graphview's
    (frames of torch and of the standard library in between do not count)."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    for name in reversed(frames):
        if os.path.abspath(name) == script:
            return False
        if name.startswith(_GRAPHVIEW_DIR):
            return True
    return False


def memory_limit() -> str | None:
    """The memory limit this process runs under (``RLIMIT_AS 512 MiB``), or None if it has none."""
    try:
        import resource
    except ImportError:
        return None
    for name in ("RLIMIT_AS", "RLIMIT_DATA"):
        which = getattr(resource, name, None)
        if which is None:
            continue
        soft = resource.getrlimit(which)[0]
        if soft != resource.RLIM_INFINITY:
            return f"{name} {soft / 2**20:.0f} MiB"
    return None


def _out_of_memory(exc: MemoryError, script: str, emit) -> tuple[str, int, str]:
    """graphview's own work ran out of memory while the script ran: the script reached its memory
    limit (or the machine's memory); its own code did not fail, and the report says so."""
    event = error_event(exc, script)
    where = f" at line {event['line']}" if event["line"] else ""
    limit = memory_limit()
    if limit is not None:
        message = (f"the script's memory limit ({limit}) was reached{where}: graphview's own records of the run "
                   "needed the memory there, not the script's code; raise the limit to record this script")
    else:
        message = (f"memory ran out{where}: graphview's own records of the run needed the memory there, "
                   "not the script's code")
    event.update(message=message, limit=True)
    emit(event)
    return "error", 1, message


def _end(emit, status: str, exit_code: int, message: str) -> dict:
    event = {"ev": "run_end", "status": status, "exit_code": exit_code, "message": message}
    emit(event)
    return event


def _final_names(recorder: Recorder, scope: dict, emit) -> None:
    """Name still-unnamed tensors after the variables the script's module left behind."""
    with recorder.quiet():
        wanted = {}
        for entry in recorder._pending_names:
            t = entry[0]()
            if t is not None:
                wanted[id(t)] = entry
        for name, value in bound(scope):
            entry = wanted.pop(id(value), None)
            if entry is not None and entry[0]() is value:
                emit({"ev": "name", "tid": entry[1], "name": name})
        recorder._pending_names = []


def _returned_name(tree: ast.Module) -> str:
    """The variable ``step()`` returns (``return loss`` -> ``loss``), to name its result."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "step":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Name):
                    return sub.value.id
    return "step()"


def _run_steps(module: types.ModuleType, options: RunOptions, recorder: Recorder | None, emit, result_name: str,
               on_step_result: Callable[[int, object], None] | None = None, whatif: WhatIf | None = None) -> None:
    def name_result(number: int, result) -> None:
        if on_step_result is not None:
            on_step_result(number, result)
        if recorder is None:
            return
        recorder.flush_names()
        if isinstance(result, torch.Tensor):
            tid = recorder.tid_of(result)
            if tid is not None and any(e[1] == tid for e in recorder._pending_names):
                emit({"ev": "name", "tid": tid, "name": result_name})
                recorder._pending_names = [e for e in recorder._pending_names if e[1] != tid]

    def read_result(result) -> object:
        with recorder.at_work() if recorder is not None else contextlib.nullcontext():
            return summarize(result)  # graphview reading the loss: none of the script's ops

    with StepLog().installed() as log:
        run_steps(module, options, log, emit, on_result=name_result, summarize=read_result,
                  identify=recorder.tid_of if recorder is not None else None,
                  around_step=whatif.around_step if whatif is not None else contextlib.nullcontext,
                  around_forward=whatif.around_forward if whatif is not None else contextlib.nullcontext)
