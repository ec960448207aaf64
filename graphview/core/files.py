"""Writing output files safely: beside the target, locked, fsynced, renamed into place.

Every file graphview writes (a trace, a graph export, a picture, a chart) is written to
``<target>.partial`` in the target's own folder, under an exclusive lock, then ``fsync``ed and
renamed onto the target. A reader never sees a half-written target, a crash or a full disk
leaves the old target untouched, and two graphview processes writing one path do not mix their
output: the second is refused while the first holds the lock.
"""

from __future__ import annotations

import os
from typing import IO, Iterable

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, the rename still holds
    fcntl = None

PARTIAL_SUFFIX = ".partial"


class OutputError(Exception):
    """An output that cannot be started (a missing folder, no permission, locked). For the user."""


class WriteError(OutputError):
    """An output that failed while being written (a full disk, an I/O error). For the user."""


def os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def check_folder(path: str) -> None:
    """Raise :class:`OutputError` if ``path`` could never be written (its folder, a folder at it)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(folder):
        raise OutputError(f"cannot write {path}: folder {folder} does not exist")
    if not os.path.isdir(folder):
        raise OutputError(f"cannot write {path}: {folder} is not a folder")
    if os.path.isdir(path):
        raise OutputError(f"cannot write {path}: it is a folder")


def open_partial(path: str, binary: bool = False) -> IO:
    """Open ``<path>.partial`` for writing under an exclusive lock (truncating what a killed
    writer left there). Raises :class:`OutputError` if another process is writing ``path``."""
    check_folder(path)
    partial = path + PARTIAL_SUFFIX
    while True:
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {os_reason(exc)}") from None
        if fcntl is None:
            break
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise OutputError(f"cannot write {path}: another graphview process is writing it "
                              f"(into {partial})") from None
        # the file locked may be one another writer has just renamed into place: then start over
        try:
            if os.path.samestat(os.fstat(fd), os.stat(partial)):
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    os.ftruncate(fd, 0)
    if binary:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding="utf-8", newline="\n")


def commit_partial(file: IO, path: str) -> None:
    """Flush, fsync and rename the ``.partial`` file onto ``path``, then close it (the lock goes
    last). Raises :class:`WriteError`; the partial file is left as it is then."""
    try:
        file.flush()
        os.fsync(file.fileno())
        os.replace(path + PARTIAL_SUFFIX, path)
        _fsync_folder(path)
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {os_reason(exc)}") from None
    finally:
        close_quietly(file)


def close_quietly(file: IO) -> None:
    try:
        file.close()
    except OSError:  # the data that could not be written is already reported
        pass


def _fsync_folder(path: str) -> None:
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_file(path: str | os.PathLike, data: bytes | str | Iterable[str]) -> None:
    """Write a whole file safely. On failure the target is untouched and the partial file removed;
    raises :class:`OutputError` (could not start) or :class:`WriteError` (failed while writing).

    ``data`` may be an iterable of text chunks, written as they come, so that a big export is never
    one string in memory."""
    path = os.fspath(path)
    file = open_partial(path, binary=isinstance(data, bytes))
    try:
        if isinstance(data, (bytes, str)):
            file.write(data)
        else:
            for chunk in data:
                file.write(chunk)
        file.flush()
        os.fsync(file.fileno())
        os.replace(path + PARTIAL_SUFFIX, path)
    except OSError as exc:
        _remove(path + PARTIAL_SUFFIX)  # still under the lock
        raise WriteError(f"cannot write {path}: {os_reason(exc)}; nothing was written to it") from None
    finally:
        close_quietly(file)
    _fsync_folder(path)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
