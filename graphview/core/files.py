"""Writing output files safely: beside the target, locked, fsynced, renamed into place.

Every file graphview writes (a trace, a graph export, a picture, a chart) is written to
``<target>.partial`` in the target's own folder, under an exclusive lock, then ``fsync``ed and
renamed onto the target. A reader never sees a half-written target, a crash or a full disk
leaves the old target untouched, and two graphview processes writing one path do not mix their
output: the second is refused while the first holds the lock.

Writes go only where the user said (see docs/safety.md): the ``.partial`` file is always a new
file (``O_CREAT | O_EXCL | O_NOFOLLOW``), so a link or a file planted at that name is never
written through; a link at the target is replaced, never followed; and :func:`check_output`
refuses a target that is no regular file (a device, a FIFO, a link to nothing), a name ending in
``.partial`` (another writer's file in progress) and a file graphview is reading in this process
(:func:`reading`: the script recorded, the trace opened).
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import IO, Iterable, Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, the rename still holds
    fcntl = None

PARTIAL_SUFFIX = ".partial"
_NEW_FILE = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
_PEEK = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_TRIES = 8  # a .partial that keeps changing under graphview's hands: give up after this many

#: the files graphview reads in this process, by who reads them (see :func:`reading`)
_READING: dict[object, tuple[str, ...]] = {}


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


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words."""
    for test, name in ((stat.S_ISREG, "regular file"), (stat.S_ISDIR, "folder"), (stat.S_ISLNK, "symbolic link"),
                       (stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "device"), (stat.S_ISBLK, "device")):
        if test(mode):
            return name
    return "special file"


def set_reading(owner: object, paths: Iterable[str | os.PathLike]) -> None:
    """Say which files ``owner`` reads now (replacing what it said before; none: forget it). No output
    may be one of them: ``record x.py -o x.py`` would replace the script with its trace."""
    kept = tuple(os.path.abspath(os.fspath(p)) for p in paths)
    if kept:
        _READING[owner] = kept
    else:
        _READING.pop(owner, None)


@contextlib.contextmanager
def reading(*paths: str | os.PathLike) -> Iterator[None]:
    """While the block runs, no output may be one of ``paths`` (:func:`set_reading`)."""
    owner = object()
    set_reading(owner, paths)
    try:
        yield
    finally:
        set_reading(owner, ())


def _same_file(path: str, other: str) -> bool:
    try:
        return os.path.samestat(os.stat(path), os.stat(other))
    except (OSError, ValueError):
        return False


def check_output(path: str) -> None:
    """Raise :class:`OutputError` (one line) if ``path`` is no place for graphview to write a file.

    Refused: a missing folder; a name ending in ``.partial`` (graphview's own file in progress: a
    writer would rename it away under another writer); a folder, device, FIFO or socket at the name;
    a symbolic link to nothing or to something other than a regular file (a link to a regular file
    is replaced by the output, its target never written); a file the user cannot write; a file
    graphview is reading (:func:`reading`)."""
    check_folder(path)
    if path.endswith(PARTIAL_SUFFIX):
        raise OutputError(f"cannot write {path}: names ending in {PARTIAL_SUFFIX} are graphview's files being "
                          "written; choose another name")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {os_reason(exc)}") from None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.stat(path)
        except OSError:
            raise OutputError(f"cannot write {path}: it is a symbolic link to {os.readlink(path)!r}, which does not "
                              "exist") from None
        if not stat.S_ISREG(target.st_mode):
            raise OutputError(f"cannot write {path}: it is a symbolic link to a {kind_of(target.st_mode)}, "
                              "not to a regular file")
    elif not stat.S_ISREG(st.st_mode):
        raise OutputError(f"cannot write {path}: it is a {kind_of(st.st_mode)}, not a regular file")
    elif not os.access(path, os.W_OK):
        raise OutputError(f"cannot write {path}: Permission denied")
    for paths in list(_READING.values()):
        for source in paths:
            if _same_file(path, source):
                raise OutputError(f"cannot write {path}: it is {source}, which graphview is reading; "
                                  "choose another output name")


def _lock(fd: int) -> bool:
    """Take ``fd``'s exclusive lock without waiting; False if another process holds it."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _is_at(fd: int, name: str) -> bool:
    """Whether ``name`` is still the file open as ``fd`` (not removed or replaced since)."""
    try:
        return os.path.samestat(os.fstat(fd), os.lstat(name))
    except OSError:
        return False


def _clear_stale(path: str, partial: str) -> None:
    """``partial`` exists: remove it if a killed writer left it (a regular file no one holds locked);
    :class:`OutputError` if a live writer holds it or it is anything else (a link, a FIFO), which is
    never opened for writing, followed or removed."""
    try:
        st = os.lstat(partial)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {partial}: {os_reason(exc)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"cannot write {path}: {partial} is in the way (a {kind_of(st.st_mode)}, where graphview "
                          "writes a new file first); remove it")
    try:
        fd = os.open(partial, _PEEK)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {partial}: {os_reason(exc)}") from None
    try:
        if not os.path.samestat(os.fstat(fd), st):
            return  # changed meanwhile: look again
        if not _lock(fd):
            raise OutputError(f"cannot write {path}: another graphview process is writing it (into {partial})")
        if _is_at(fd, partial):  # a killed writer's partial file: a new one replaces it
            try:
                os.unlink(partial)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise OutputError(f"cannot write {path}: cannot remove the old {partial}: {os_reason(exc)}") from None
    finally:
        os.close(fd)


def open_partial(path: str, binary: bool = False) -> IO:
    """Create ``<path>.partial`` anew and open it for writing under an exclusive lock (a regular
    ``.partial`` file that a killed writer left is removed first). Raises :class:`OutputError` if
    ``path`` is no place to write (:func:`check_output`) or another process is writing it."""
    check_output(path)
    partial = path + PARTIAL_SUFFIX
    for _ in range(_TRIES):
        try:
            fd = os.open(partial, _NEW_FILE, 0o644)
        except FileExistsError:
            _clear_stale(path, partial)
            continue
        except OSError as exc:
            if os.path.islink(partial):  # O_NOFOLLOW's ELOOP: a link planted at the name
                _clear_stale(path, partial)
            raise OutputError(f"cannot write {path}: {os_reason(exc)}") from None
        # locked and still at its name: else another writer took it for a killed one's and removed it
        if _lock(fd) and _is_at(fd, partial):
            if binary:
                return os.fdopen(fd, "wb")
            return os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        os.close(fd)
    raise OutputError(f"cannot write {path}: another graphview process is writing it (into {partial})")


def check_writable(path: str) -> None:
    """Fail early, before anything is recorded or drawn, on an output that could not be written:
    :func:`check_output`, then ``<path>.partial`` created and removed again (the folder's
    permissions, another writer)."""
    file = open_partial(path)
    try:
        os.unlink(path + PARTIAL_SUFFIX)
    except OSError:
        pass
    finally:
        close_quietly(file)


def _rename_into_place(file: IO, path: str) -> None:
    """Rename the ``.partial`` file open as ``file`` onto ``path``, checking first that both are
    still what they were: the partial file ours, the target no special file."""
    partial = path + PARTIAL_SUFFIX
    if not _is_at(file.fileno(), partial):
        raise OSError(0, f"{partial} was removed or replaced while graphview wrote it")
    try:
        check_output(path)  # a FIFO or a link made at the target while graphview wrote
    except OutputError as exc:
        raise OSError(0, str(exc).removeprefix(f"cannot write {path}: ")) from None
    os.replace(partial, path)


def commit_partial(file: IO, path: str) -> None:
    """Flush, fsync and rename the ``.partial`` file onto ``path``, then close it (the lock goes
    last). Raises :class:`WriteError`; the partial file is left as it is then."""
    try:
        file.flush()
        os.fsync(file.fileno())
        _rename_into_place(file, path)
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
        _rename_into_place(file, path)
    except OSError as exc:
        if _is_at(file.fileno(), path + PARTIAL_SUFFIX):  # still under the lock
            _remove(path + PARTIAL_SUFFIX)
        raise WriteError(f"cannot write {path}: {os_reason(exc)}; nothing was written to it") from None
    finally:
        close_quietly(file)
    _fsync_folder(path)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
