"""Start a runner process for a script and collect its events.

The runner (``graphview.capture.runner``) writes events to a pipe; this side reads them,
hands each to a callback (the trace writer, the GUI's model) and, when the runner dies without
saying goodbye (a segfault, ``os.abort()``, a kill), adds the ``run_end`` it could not write,
with what the runner printed on its way down. Nothing the runner sent is ever lost.
"""

from __future__ import annotations

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

from graphview.core.options import RunOptions

STDERR_KEEP = 64 * 1024
_FAULT_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


class RunnerProcess:
    """One script running in its own interpreter, streaming events to ``on_event``."""

    def __init__(self, script: str, options: RunOptions, on_event: Callable[[dict], None],
                 python: str | None = None, extra_args: list[str] | None = None) -> None:
        self.script = os.path.abspath(script)
        self.options = options
        self.on_event = on_event
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONFAULTHANDLER"] = "1"
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        cmd = [python or sys.executable, "-m", "graphview.capture.runner", self.script,
               "--events-fd", str(write_fd), "--options", json.dumps(options.to_dict())] + list(extra_args or [])
        self._proc = subprocess.Popen(
            cmd, pass_fds=(write_fd,), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=env, start_new_session=True,
        )
        os.close(write_fd)
        self._events = os.fdopen(read_fd, "rb")
        self._native_out: list[bytes] = []
        self._native_size = 0
        self._native_lock = threading.Lock()
        self._native_pending: list[tuple[str, bytes]] = []
        self._partial: dict[str, bytes] = {}
        self._drainers = [threading.Thread(target=self._drain, args=(s, name), daemon=True)
                          for s, name in ((self._proc.stdout, "stdout"), (self._proc.stderr, "stderr"))]
        for t in self._drainers:
            t.start()
        self.ended = False
        self.end_event: dict | None = None
        self.stop_reason: str | None = None
        self._saw_start = False
        self._last_line: int | None = None

    @property
    def pid(self) -> int:
        return self._proc.pid

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

    def stop(self, reason: str = "stopped", grace: float = 1.0) -> None:
        """Ask the runner to stop (SIGTERM); kill it if it has not ended after ``grace`` seconds."""
        if self._proc.poll() is not None:
            return
        self.stop_reason = reason
        try:
            self._proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            return
        timer = threading.Timer(grace, self._kill)
        timer.daemon = True
        timer.start()

    def _kill(self) -> None:
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self._proc.kill()

    def _deliver(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return  # a line cut off by a crash
        if event.get("ev") == "run_start":
            self._saw_start = True
        elif event.get("ev") == "run_end":
            if self.stop_reason == "timeout" and event.get("status") == "stopped":
                event["status"] = "timeout"
                event["message"] = "stopped: the script ran past its time limit"
            self.end_event = event
        line_no = event.get("line")
        if isinstance(line_no, int):
            self._last_line = line_no
        self.on_event(event)

    def wait(self, timeout: float | None = None, poll: Callable[[], None] | None = None) -> dict:
        """Read events until the runner ends; returns the ``run_end`` event (real or synthesized)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        selector = selectors.DefaultSelector()
        selector.register(self._events, selectors.EVENT_READ)
        buffer = b""
        fd = self._events.fileno()
        while True:
            wait_for = 0.1
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 and self.stop_reason is None:
                    self.stop("timeout")
                wait_for = max(0.0, min(wait_for, left)) if left > 0 else 0.1
            if selector.select(wait_for):
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line:
                        self._deliver(line)
            if self._native_pending:
                self._deliver_native()
            if poll is not None:
                poll()
        selector.close()
        self._events.close()
        code = self._proc.wait()
        for t in self._drainers:
            t.join(timeout=2)
        self.ended = True
        crash_text = self.native_output()
        self._deliver_native(final=True)
        if self.end_event is None:
            self.end_event = self._synthesize_end(code, crash_text)
        return self.end_event

    def native_output(self) -> str:
        return b"".join(self._native_out).decode("utf-8", "replace")

    def _synthesize_end(self, code: int, text: str) -> dict:
        """The runner died without its own ``run_end``: say how, and keep what it printed."""
        if not self._saw_start:
            self.on_event({"ev": "run_start", "script": self.script, "mode": "plain", "torch": None,
                           "python": None, "devices": [], "options": self.options.to_dict(), "notes": [],
                           "source": None})
        if self.stop_reason == "timeout":
            status, message = "timeout", "killed: the script ran past its time limit"
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
    runner = RunnerProcess(script, RunOptions(), events.append, extra_args=["--gradcheck", tensor, "--eps", str(eps)])
    end = runner.wait(timeout=timeout)
    result = next((e for e in events if e.get("ev") == "gradcheck"), None)
    return result, end


def record(script: str, options: RunOptions, on_event: Callable[[dict], None],
           timeout: float | None = None) -> dict:
    """Run ``script`` in a runner process; every event goes to ``on_event``. Returns ``run_end``."""
    runner = RunnerProcess(script, options, on_event)
    try:
        return runner.wait(timeout=timeout)
    except BaseException:
        runner.stop("stopped", grace=0.2)
        raise
