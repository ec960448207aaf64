"""Checks of what a user hands graphview (a script, a trace, an output path), shared by the
command line and the window: each fails with a :class:`UserError` that reads as one line."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import textwrap

from graphview.core.export import ExportError
from graphview.core.export import check_writable as export_check_writable
from graphview.core.text import visible
from graphview.core.trace import SCRIPT_SUFFIX, is_script


class UserError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def check_script(path: str) -> None:
    """Fail early, before starting a runner, on a script that cannot be run at all, or is not named
    as a script (:func:`graphview.core.trace.is_script`: graphview runs only files named ``.py``)."""
    if not os.path.exists(path):
        raise UserError(f"no such file: {path}")
    if os.path.isdir(path):
        raise UserError(f"{path} is a folder, not a Python script")
    if not is_script(path):
        raise UserError(f"{path} is not named as a Python script: graphview runs only files whose name ends "
                        f"in {SCRIPT_SUFFIX}")
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would make the reading wait; /dev/zero never end
            raise UserError(f"{path} is not a regular file: graphview runs only scripts that are files")
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def shown(text: object) -> str:
    """``text`` with its control characters escaped: a string a trace holds, safe to print on one line
    (:func:`graphview.core.text.visible`)."""
    return visible(text)


def shown_lines(text: object) -> str:
    """:func:`shown` keeping line breaks: text printed as several lines, each escaped."""
    return visible(text, newlines=True)


def say(*values: object, file=None, end: str = "\n") -> None:
    """``print`` for graphview's own lines: every value :func:`shown_lines` (a trace's string or a
    script's message escaped, line breaks kept), so no line graphview prints can clear, retitle or
    recolour the terminal. A one-line field inside a value (a name, an error message) is passed
    through :func:`shown` first, so that it cannot start a line of its own either."""
    print(*(shown_lines(v) for v in values), file=sys.stdout if file is None else file, end=end)


def say_wrapped(text: str, file=None, indent: str = "    ") -> None:
    """:func:`say` of one long line (torch's message of a failed script runs to 400 characters),
    wrapped at the terminal's width, its continuation lines indented, the words as they were.
    Into a pipe or a file it stays one line, for grep."""
    stream = sys.stdout if file is None else file
    line = shown_lines(text)
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        width = max(40, shutil.get_terminal_size().columns - 1)
        line = "\n".join(textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False,
                                       break_on_hyphens=False))
    print(line, file=stream)


def is_trace(path: str) -> bool:
    """Whether graphview reads ``path`` as a trace: every file not named as a script is one (and is
    refused if it does not hold a trace). Never decided by what the file holds."""
    return not is_script(path)


def looks_like_trace(path: str) -> bool:
    """Whether the first line of ``path`` is a trace header: only to word a message (a file that is
    no trace at all, or a damaged one), never to decide whether to run it."""
    from graphview.core.trace import TraceError, open_trace_file, parse_header

    try:
        with open_trace_file(path) as f:
            parse_header(f.readline(64 * 1024))
    except (TraceError, OSError):
        return False
    return True


def check_writable(path: str) -> None:
    """Fail early, before recording or drawing, on an output that cannot be written (the OS's
    reason; a device, a FIFO, a link to nothing, a file being read: :mod:`graphview.core.files`)."""
    try:
        export_check_writable(path)
    except ExportError as exc:
        raise UserError(str(exc)) from None
