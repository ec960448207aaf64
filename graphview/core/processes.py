"""The processes of a run: finding every descendant of a process and ending them all.

A script may start processes that leave its process group (``setsid``, ``subprocess`` with
``start_new_session=True``) and whose parent exits (a double fork), so that killing the run's
process group misses them. On Linux the runner is started under a *child subreaper*
(``prctl(PR_SET_CHILD_SUBREAPER)``, see :func:`become_subreaper`): an orphan re-parents to it
instead of to init, so every process the script started, however it left its session, stays a
descendant of the subreaper while it lives, and :func:`kill_descendants` finds and kills them by
walking ``/proc``.

Elsewhere (macOS, BSD) there is no subreaper and no ``/proc``: :func:`become_subreaper` returns
False, :func:`descendants` finds nothing, and a run is ended by its process group alone.

Stdlib only: the app's process (which never imports torch) uses it too.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

#: prctl option (linux/prctl.h)
PR_SET_CHILD_SUBREAPER = 36
PROC = "/proc"


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux): orphaned descendants re-parent to it.
    Returns whether it is one."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process in /proc (empty where there is no /proc)."""
    table: dict[int, tuple[int, str]] = {}
    try:
        names = os.listdir(PROC)
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{PROC}/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # it ended while we looked
            continue
        # the command name (in parentheses) may hold spaces and parentheses: the fields follow its last ')'
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) >= 2:
            table[int(name)] = (int(fields[1]), fields[0].decode("ascii", "replace"))
    return table


def descendants(pid: int, table: dict[int, tuple[int, str]] | None = None) -> dict[int, str]:
    """Every descendant of ``pid`` (not ``pid`` itself) with its state (``Z``: a zombie), found by
    following parent links in /proc; empty where there is no /proc."""
    table = _parents() if table is None else table
    children: dict[int, list[int]] = {}
    for child, (parent, _) in table.items():
        children.setdefault(parent, []).append(child)
    found: dict[int, str] = {}
    todo = list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        if child in found or child == pid:
            continue
        found[child] = table[child][1]
        todo.extend(children.get(child, ()))
    return found


def _kill(pid: int, tree: set[int]) -> None:
    """SIGKILL ``pid`` if it is still in ``tree`` (through a pidfd where Linux has them, so that a
    pid freed and reused by another process since /proc was read is never signalled)."""
    pidfd = None
    if hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal"):
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            pidfd = None
            if not os.path.exists(f"{PROC}/{pid}"):
                return  # gone
    try:
        if pidfd is not None:
            try:  # the pidfd holds this very process: is it still one of the tree's?
                with open(f"{PROC}/{pid}/stat", "rb") as f:
                    stat = f.read()
                parent = int(stat[stat.rfind(b")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                return
            if parent not in tree:
                return
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass
    finally:
        if pidfd is not None:
            os.close(pidfd)


def kill_descendants(pid: int, within: float = 2.0, reap: bool = False) -> int:
    """SIGKILL every descendant of ``pid`` (Linux; nothing elsewhere), again and again until none is
    left alive (a child forked meanwhile re-parents into the tree, to ``pid`` if it is a subreaper)
    or ``within`` seconds have passed. With ``reap`` (``pid`` is this process) the zombies that come
    back to it are collected. Returns how many processes were signalled."""
    if not os.path.isdir(PROC):
        return 0
    signalled = 0
    deadline = time.monotonic() + within
    while True:
        if reap:
            _reap_children()
        alive = {child for child, state in descendants(pid).items() if state != "Z"}
        if not alive or time.monotonic() > deadline:
            break
        tree = alive | {pid}
        for child in alive:
            _kill(child, tree)
        signalled += len(alive)
        time.sleep(0.005)
    if reap:
        _reap_children()
    return signalled


def _reap_children() -> list[tuple[int, int]]:
    """Collect every child of this process that has exited: [(pid, wait status)]."""
    done = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        done.append((pid, status))
    return done
