"""Landmarks: the moments of a run that a re-run of its script has too, named by what they are.

Event indices do not survive a re-run: another option (``retain_graph``, a detach) adds or drops
events (saved tensors kept, nodes destroyed later), so event 412 of one run is some other moment
of the next. A landmark is named by what happened instead: ``(step, kind, key, n)``, the n-th
event of its step of that kind and key, where the key is what identifies it in the script:

=================  =========================================
op                 the op's name and source line
bw_node(_done)     the name of the autograd node that runs
backward_start     the line of the backward() call
backward_end       the line of its backward() call
detach, grad_reset, optimizer_step, module_mode, mode   the line
error              the error's type and line
run_start, run_end, step_start, step_end   nothing more
=================  =========================================

Other events (tensors, saved tensors, releases, nodes) are no landmarks: they are what options
change. The step of an event is the number of the last ``step_start`` before it (0 before the
first one, and in a plain script).
"""

from __future__ import annotations

from graphview.core.run import Run

Name = tuple  # (step, kind, key, n)

_BY_LINE = frozenset({"detach", "grad_reset", "optimizer_step", "module_mode", "mode", "backward_start"})
_PLAIN = frozenset({"run_start", "run_end", "step_start", "step_end"})
_NAMED = _BY_LINE | _PLAIN | {"op", "bw_node", "bw_node_done", "backward_end", "error"}  # the kinds of landmarks


class Landmarks:
    """The landmark names of a run's events, kept up to date as a live run grows (:meth:`update`).

    Attributes
    ----------
    names : list
        For every event index taken in so far, its name, or ``None`` for an event that is no
        landmark.
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        self.names: list[Name | None] = []
        self._index_of: dict[Name, int] = {}
        self._counts: dict[tuple, int] = {}
        self._step = 0

    def update(self) -> "Landmarks":
        """Name the events the run gained since the last call."""
        events = self.run.events
        begin = len(self.names)
        self.names.extend([None] * (len(events) - begin))
        for index, ev in events.where(_NAMED, begin):
            key = self._key(ev)
            if key is None:
                continue
            if ev.get("ev") == "step_start":
                self._step = ev.get("step", self._step + 1)
            counted = (self._step, ev.get("ev"), key)
            n = self._counts.get(counted, 0)
            self._counts[counted] = n + 1
            name = (*counted, n)
            self.names[index] = name
            self._index_of[name] = index
        return self

    def _key(self, ev: dict) -> tuple | None:
        kind = ev.get("ev")
        if kind == "op":
            return (ev.get("op"), ev.get("line"))
        if kind in ("bw_node", "bw_node_done"):
            node = self.run.op_nodes.get(ev.get("vid"))
            return (node.name if node is not None else None,)
        if kind in _BY_LINE:
            return (ev.get("line"),)
        if kind == "backward_end":
            call = self.run.backwards.get(ev.get("bid"))
            return (call.line if call is not None else None,)
        if kind == "error":
            return (ev.get("type"), ev.get("line"))
        if kind in _PLAIN:
            return ()
        return None

    def find(self, name: Name) -> int | None:
        """The index of the event called ``name`` in this run, or None."""
        return self._index_of.get(name)

    def landmarks(self) -> list[tuple[int, Name]]:
        """(index, name) of every landmark, in order."""
        return [(i, name) for i, name in enumerate(self.names) if name is not None]


def place(earlier: Landmarks, index: int, later: Landmarks) -> tuple[int, bool] | None:
    """Where event ``index`` of the earlier run is in the later run: ``(index, True)`` when the
    same landmark is there (the event itself, or the landmark the cursor rests after), else
    ``(index of the nearest earlier landmark both runs have, False)``; None if they share none."""
    earlier.update()
    later.update()
    exact = True
    for i in range(min(index, len(earlier.names) - 1), -1, -1):
        name = earlier.names[i]
        if name is None:
            continue
        found = later.find(name)
        if found is not None:
            return found, exact
        exact = False
    return None
