"""Moving a cursor through a run's events by the units a user steps in.

Each function takes a run and a cursor (an event index) and returns the new index; when there
is nowhere to go it returns the last index (forward) or 0 (backward). Pure functions of the
event list, so the GUI, tests and a future debugger protocol share them.

The forward units that look for a kind of moment (the next backward, the end of the step, the
next step, the next backward node, past a module call) are :class:`Unit` s: called, they are such
a function; their :meth:`Unit.find` says instead that the moment is not in the events yet, so a
window showing a run still being recorded can wait for it rather than stop at the newest event.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable

from graphview.core.run import Run

#: events a plain "step" stops at: what a user perceives as one thing happening
STOP_EVENTS = frozenset({"op", "bw_node", "backward_start", "backward_end", "grad_reset", "optimizer_step",
                         "error", "run_end", "step_start", "detach"})


#: the file of a notebook cell as a kernel names it: ipykernel's ``/tmp/ipykernel_4242/35464209.py``,
#: IPython's ``<ipython-input-3-1f2e>``
NOTEBOOK_CELL = re.compile(r"(^|[\\/])ipykernel_\d+[\\/]\d+\.py$|^<ipython-input-")


def program_name(start: dict) -> str:
    """What a run's ``run_start`` event ``start`` names the program: its script's file name
    (``transformer_block.py``); for a recording in a notebook the notebook's name
    (``train.ipynb``), else ``"notebook"``, never the kernel's temporary file of a cell."""
    script = str(start.get("script") or "")
    if "notebook" in start:
        return os.path.basename(str(start["notebook"] or "")) or "notebook"
    if NOTEBOOK_CELL.search(script):  # a trace from a notebook recorded before it said its name
        return "notebook"
    return os.path.basename(script)


def _find(run: Run, start: int, kinds: frozenset | set, step: int = 1) -> int | None:
    if not 0 <= start + step < len(run.events):
        return None
    return run.events.find(kinds, start + step, step)


def error_line(run: Run, index: int) -> int | None:
    """The source line of the run's first error, once the cursor ``index`` has reached it."""
    for at, ev in run.errors:
        if at <= index:
            return ev.get("line")
    return None


def last(run: Run) -> int:
    return max(0, len(run.events) - 1)


def stops_between(run: Run, first: int, last: int, limit: int) -> list[int]:
    """``first``, every moment Step forward stops at after it before ``last``, and ``last``;
    evenly sampled (first and last kept) when there are more than ``limit`` (at least 2)."""
    chosen = [first] + [i for i in range(first + 1, last) if run.events[i].get("ev") in STOP_EVENTS]
    if last != first:
        chosen.append(last)
    if len(chosen) > limit:
        step = (len(chosen) - 1) / (limit - 1)
        chosen = [chosen[round(k * step)] for k in range(limit)]
    return chosen


def step_forward(run: Run, cursor: int) -> int:
    found = _find(run, cursor, STOP_EVENTS)
    return found if found is not None else last(run)


def step_back(run: Run, cursor: int) -> int:
    found = _find(run, cursor, STOP_EVENTS, -1)
    return found if found is not None else 0


@dataclass(frozen=True)
class Unit:
    """A forward unit of stepping that stops at a kind of moment which may not be recorded yet.

    Attributes
    ----------
    find : callable
        ``find(run, cursor)``: the index of the moment after ``cursor``, or None when the run's
        events have no such moment (yet: a live run may still record it).
    what : str
        The moment in words, for "waiting for {what} to be recorded": ``"the next backward"``.
    """

    find: Callable[[Run, int], int | None]
    what: str

    def __call__(self, run: Run, cursor: int) -> int:
        """The moment's index, or the last index when the run has no such moment."""
        found = self.find(run, cursor)
        return found if found is not None else last(run)


def _next_backward(run: Run, cursor: int) -> int | None:
    return _find(run, cursor, {"backward_start"})


def _next_backward_node(run: Run, cursor: int) -> int | None:
    return _find(run, cursor, {"bw_node"})


def _end_of_step(run: Run, cursor: int) -> int | None:
    return _find(run, cursor, _step_ends(run))


def _next_step(run: Run, cursor: int) -> int | None:
    """The first moment of the next step: of the step the cursor is in when the cursor is before
    that moment (at the run's start, step 1's; at a step's start event, that step's), else of
    the step after it."""
    if _is_step_script(run):
        begun = _find(run, cursor + 1, {"step_start"}, -1)  # the start of the step the cursor is in
        first = _find(run, begun, STOP_EVENTS) if begun is not None else None
        if begun is not None and (first is None or first > cursor):
            return first  # (None: a live run has not recorded it yet)
        found = _find(run, cursor, {"step_start"})
    else:  # a plain script: the next iteration begins after this one's end (the cursor's own event, if it ends one)
        first = _first_iteration(run)
        if first is not None and cursor < first:
            return first
        found = _find(run, cursor - 1, _step_ends(run) - {"run_end"})
    if found is None:
        return None
    after = _find(run, found, STOP_EVENTS)
    return after if after is not None else found


def _first_iteration(run: Run) -> int | None:
    """Where a plain script's first iteration of its training loop begins: its first moment on the
    line (and of the kind) the second iteration begins with, as a loop runs the same lines again;
    None until a second iteration is recorded, or when no moment before the first end matches."""
    first_end = _find(run, -1, _step_ends(run) - {"run_end"})
    second = _find(run, first_end, STOP_EVENTS) if first_end is not None else None
    if second is None or run.events.kind(second) == "run_end":
        return None
    kind, line = run.events.kind(second), run.events[second].get("line")
    if line is None:
        return None
    return next((i for i, ev in run.events.where({kind}, 0, first_end) if ev.get("line") == line), None)


def _past_module(run: Run, cursor: int) -> int | None:
    """Past the next module call (its enter to its matching exit), or one step if there is none."""
    events = run.events
    enter = _find(run, cursor, STOP_EVENTS | {"module_enter"})
    if enter is None or events.kind(enter) != "module_enter":
        return enter
    depth = 0
    for j in events.indices({"module_enter", "module_exit"}, enter):
        kind = events.kind(j)
        if kind == "module_enter":
            depth += 1
        elif kind == "module_exit":
            depth -= 1
            if depth == 0:
                return j
    return None


next_backward = Unit(_next_backward, "the next backward")
next_backward_node = Unit(_next_backward_node, "the next backward node")
end_of_step = Unit(_end_of_step, "the end of the step")
next_step = Unit(_next_step, "the next step")
#: past the next module call (its enter to its matching exit), or one step if there is none
step_over_module = Unit(_past_module, "the end of the next module call")


def _is_step_script(run: Run) -> bool:
    """The run calls a step script's ``step()`` (known from its first event, before any step began)."""
    return bool(run.steps) or run.mode == "step"


def _step_ends(run: Run) -> set[str]:
    """Where a step ends: a step script's ``step()`` returning; in a plain script's training loop,
    each optimizer step (or, with none, each backward call's end: a loop that updates by hand)."""
    if _is_step_script(run):
        return {"step_end", "run_end"}
    if run.optimizer_steps:
        return {"optimizer_step", "run_end"}
    return {"backward_end", "run_end"}


def opening(run: Run) -> int:
    """Where the window opens a run: at its start (event 0), so stepping tells the script from
    its first op; a run that failed opens where it failed (the graph up to the error)."""
    if run.errors:
        return run.errors[0][0]
    return 0


def overview(run: Run) -> int:
    """Where a finished run is best seen whole: its last graph complete, just before the backward
    that consumes it (at the very end, autograd has freed most graphs). A run that failed opens
    where it failed: the graph up to the error, the failing node marked."""
    if run.errors:
        return run.errors[0][0]
    starts = [call.start for call in run.backwards.values()]
    return max(starts) if starts else last(run)


def line_at(run: Run, cursor: int) -> int | None:
    """The script line being executed at the cursor: the latest event that names one."""
    events = run.events
    i = min(cursor, len(events) - 1)
    while i >= 0:
        line = events[i].get("line")
        if isinstance(line, int):
            return line
        if events[i].get("ev") in ("bw_node", "bw_node_done"):
            start = _find(run, i, {"backward_start"}, -1)
            if start is not None:
                return events[start].get("line")
        i -= 1
    return None
