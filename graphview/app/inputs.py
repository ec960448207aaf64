"""Checks of what a user hands graphview (a script, a trace, an output path), shared by the
command line and the window: each fails with a :class:`UserError` that reads as one line."""

from __future__ import annotations

import os

from graphview.core.export import ExportError
from graphview.core.export import check_writable as export_check_writable
from graphview.core.trace import SUFFIX


class UserError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def check_script(path: str) -> None:
    """Fail early, before starting a runner, on a script that cannot be run at all."""
    if not os.path.exists(path):
        raise UserError(f"no such file: {path}")
    if os.path.isdir(path):
        raise UserError(f"{path} is a folder, not a Python script")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def is_trace(path: str) -> bool:
    if path.endswith(SUFFIX):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    return head.lstrip().startswith(b'{"format"')


def check_writable(path: str) -> None:
    """Fail early, before recording or drawing, on an output that cannot be written (the OS's reason)."""
    try:
        export_check_writable(path)
    except ExportError as exc:
        raise UserError(str(exc)) from None
