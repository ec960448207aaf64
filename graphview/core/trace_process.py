"""A trace written by a process of its own, from the events another process sends it in batches.

``graphview.record()`` records in the user's own process. Making a trace's records and their
JSON there (graphview/core/records.py) cost a recorded 256-layer MLP step about 50 ms of the
program's time; here the program only sends its events down a pipe, in the batches of the runner's
channel (graphview/core/channel.py, written by ``EventPipe``), and this process, started when the
recording begins, makes the trace from them on another core.

The program opens the trace's ``.partial`` file itself and writes its header
(:class:`~graphview.core.trace.TraceWriter`, so that a path it cannot write fails at once, in the
program, as it always did), then hands the open file to this process, which writes the rest and,
once the recording's ``run_end`` came, fsyncs it and renames it into place. Its last line on
stdout says how that went (:meth:`TraceProcess.finish` returns it). A program that dies before
its ``run_end`` leaves everything it sent as a partial recording. The process runs in a session
of its own, where the terminal's Ctrl-C (sent to the program's whole process group) does not
reach it: the program's own ``finally`` ends the recording, and this process writes it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

from graphview.core.channel import BatchReader, ChannelError, descriptor_identity
from graphview.core.isolated import SAFE_PATH, boot_code
from graphview.core.trace import TraceError, TraceWriter

#: what the program's side waits, at most, for this process to finish the trace after ``run_end``
FINISH_TIMEOUT_S = 600.0
_BOOT = boot_code("from graphview.core.trace_process import main\nsys.exit(main(sys.argv[1:]))")


class TraceProcess:
    """The program's side: starts the process that writes ``writer``'s trace, and the pipes to it
    (plain descriptors, each checked before use: the program may close them, and open files of its
    own on their numbers, which graphview must then neither read nor close)."""

    def __init__(self, writer: TraceWriter) -> None:
        read_end, self.events_fd = os.pipe()
        self._status_fd, status_end = os.pipe()
        fd = writer.fileno()
        try:
            self._process = subprocess.Popen(
                [sys.executable, *SAFE_PATH, "-c", _BOOT, str(fd), writer.path], stdin=read_end,
                stdout=status_end, pass_fds=(fd,), close_fds=True,
                start_new_session=True)  # (out of the terminal's process group: Ctrl-C is the program's alone)
        except BaseException:
            os.close(self.events_fd)
            os.close(self._status_fd)
            raise
        finally:
            os.close(read_end)
            os.close(status_end)
        self._status = descriptor_identity(self._status_fd)
        writer.abandon()  # (this process's descriptor: the file stays open, and locked, in the other)

    def finish(self, timeout: float = FINISH_TIMEOUT_S) -> str | None:
        """Wait for the trace to be written (the events' pipe closed first); the reason it could
        not be, or None."""
        deadline = time.monotonic() + timeout
        if descriptor_identity(self._status_fd) != self._status:
            out = None  # (the program closed it: the process's word is lost, its trace is not)
        else:
            out = _read_status(self._status_fd, deadline)
            os.close(self._status_fd)
        try:
            self._process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            return (f"the process writing the trace did not finish within {timeout:.0f} s; it was stopped, "
                    "and what it wrote is kept as a partial recording")
        if out is None:
            return "the program closed graphview's pipe from the process writing the trace"
        lines = out.decode("utf-8", "replace").strip().splitlines()
        try:
            reason = json.loads(lines[-1])["error"] if lines else "the process writing the trace ended early"
        except (ValueError, KeyError, TypeError):
            reason = lines[-1][:300]
        return reason or None

    def forget(self) -> None:
        """In a process forked while recording: let go of the writing process, which is the
        parent's (its result is the parent's to read), without waiting for it."""
        if descriptor_identity(self._status_fd) == self._status:
            os.close(self._status_fd)
        self._process.returncode = 0  # (never waited for here: no warning that it still runs)


def _read_status(fd: int, deadline: float) -> bytes:
    """What the writing process says on its status pipe, to the pipe's end or ``deadline``."""
    chunks = []
    while select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def main(argv: list[str]) -> int:
    """The writing process: ``FD PATH``, the events on stdin."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    fd, path = int(argv[0]), argv[1]
    writer = TraceWriter(path, started=os.fdopen(fd, "w", encoding="utf-8", newline="\n"))
    reader = BatchReader()
    try:
        reason = _write_until_the_end(writer, reader)
    except TraceError as exc:  # (a TraceWriteError: the disk is full, the file system went away)
        reason = str(exc)
        writer.abandon()
    if reason is not None:
        _read_until_the_end(reader)
    try:
        print(json.dumps({"error": reason}), flush=True)
    except OSError:  # (the program is gone, killed: no one reads this; the trace says it all)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # (and Python's own flush at exit finds no pipe)
    return 0 if reason is None else 1


def _chunks():
    """What the pipe brings, or None each FLUSH_SECONDS nothing came; ends with the pipe."""
    while True:
        if not select.select([0], [], [], TraceWriter.FLUSH_SECONDS)[0]:
            yield None
            continue
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return
        yield chunk


def _write_until_the_end(writer: TraceWriter, reader: BatchReader) -> str | None:
    """Write the events read from stdin until the recording's ``run_end`` (then the trace is
    committed) or the end of the pipe (then it is left a partial recording)."""
    for chunk in _chunks():
        if chunk is None:
            writer.tick()
            continue
        try:
            batches, damage = reader.feed(chunk), None
        except ChannelError as exc:
            batches, damage = exc.before, exc
        for batch in batches:
            for event in batch:
                writer.write(event)
                if event.get("ev") == "run_end":
                    writer.close()
                    return None
        if damage is not None:
            writer.abandon()
            return f"the recording's events were damaged ({damage}); what came before is kept in {writer.partial}"
        writer.tick()
    writer.abandon()
    return f"the program ended before its recording did; what it recorded is kept in {writer.partial}"


def _read_until_the_end(reader: BatchReader) -> None:
    """After a failure, take what the program still sends until its ``run_end`` (or the pipe's
    end), writing nothing: a program whose SIGPIPE kills it (``signal(SIGPIPE, SIG_DFL)``) must
    not die of writing to a pipe nobody reads."""
    for chunk in _chunks():
        if chunk is None:
            continue
        try:
            batches = reader.feed(chunk)
        except ChannelError:
            reader = BatchReader()  # (damaged: from here only the pipe's end is looked for)
            continue
        if any(event.get("ev") == "run_end" for batch in batches for event in batch):
            return
