"""The edges of a run's graph: noted as the events come, made into :class:`Edge` objects when asked.

A big run has some 10^5 edges of autograd's own structure (a node's ``next`` entries, a tensor's
``grad_fn``, an AccumulateGrad's leaf, a node's saved tensors, a view's base), and nothing the
canvas draws reads them: the drawing takes that structure from the run's autograd nodes and
tensors, and reads only the edges besides it (:attr:`RunEdges.side`: an op's input without grad,
a detach, an op under no_grad). The others are noted as a short tuple each and made into edges,
in the order they came and without the ones the run has already, when something first reads them
all (an export, a test): the same list an edge made at once for each would give.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

_NO_ATTRS: dict = {}  # the attrs of every edge that has none (read, never changed)
#: the kinds of edge the drawing reads (made at once, kept in :attr:`RunEdges.side` too)
SIDE_KINDS = frozenset({"input", "detach", "no_grad_op"})


@dataclass(slots=True)
class Edge:
    source: str
    target: str
    kind: str  # "next" | "grad_fn" | "accumulate" | "saved" | "input" | "no_grad_op" | "detach" | "view"
    born: int
    attrs: dict = field(default_factory=dict)


class RunEdges:
    """A run's edges, one per source, target and kind (a ``next`` edge one per entry of its source's
    ``next_functions``, so that an op given one tensor twice, ``w * w``, has two).

    The run notes an edge of autograd's structure with :attr:`note` (a list's ``append``: one tuple,
    as :func:`_spelled` reads it) and adds an edge besides it with :meth:`add_side`."""

    def __init__(self) -> None:
        self.notes: list = []  # edges noted, in order: a tuple (see _spelled), or a side Edge made at once
        self.note = self.notes.append
        self.side: list[Edge] = []  # the edges of SIDE_KINDS, in order
        self._made: list[Edge] = []  # the notes made into edges so far
        self._read = 0  # notes looked at (made into edges, or found there already) and not yet dropped
        self._keys: set = set()
        self._side_keys: set = set()
        self._attrs: dict[tuple, dict] = {}
        self._lock = threading.Lock()  # (an export may read them on a thread of its own)

    def add_side(self, source: str, target: str, kind: str, born: int, items: tuple = ()) -> None:
        """An edge of :data:`SIDE_KINDS` (``items``: its attrs as ``((name, value), ...)``), unless the run has it."""
        key = (source, target, kind)
        if key in self._side_keys:
            return
        self._side_keys.add(key)
        edge = Edge(source, target, kind, born, self._shared(items) if items else _NO_ATTRS)
        self.side.append(edge)
        self.notes.append(edge)

    def all(self) -> list[Edge]:
        """Every edge, in the order the run made them (the same list grows as the run does)."""
        if self._read < len(self.notes):
            with self._lock:
                self._make()
        return self._made

    def replace(self, edges: list[Edge]) -> None:
        """The edges noted so far replaced by ``edges`` (the edges noted later are added to them)."""
        with self._lock:
            self._made = list(edges)
            del self.notes[:]  # (the notes so far are in ``edges`` now)
            self._read = 0

    def _make(self) -> None:
        notes, made, keys = self.notes, self._made, self._keys
        end = len(notes)
        for note in notes[self._read:end]:
            if type(note) is Edge:
                made.append(note)
                continue
            source, target, kind, born, items = _spelled(note)
            key = (source, target, kind, items if kind == "next" else None)
            if key in keys:
                continue
            keys.add(key)
            made.append(Edge(source, target, kind, born, self._shared(items) if items else _NO_ATTRS))
        del notes[:end]  # (made into edges: not kept twice; ``note`` appends to the same list)
        self._read = 0

    def _shared(self, items: tuple) -> dict:
        """The attrs ``items`` give: edges with the same attrs share one dict of them (read, never changed)."""
        attrs = self._attrs.get(items)
        if attrs is None:
            attrs = self._attrs[items] = dict(items)
        return attrs


def _spelled(note: tuple) -> tuple:
    """``(source, target, kind, born, attr items)`` of a noted edge, by its kind (first):
    ``("next", source, child vid, born, input_nr, position)``, ``("grad_fn", source, vid, born)``,
    ``("saved", owner vid, saved id, born, attr)``, ``(kind, source, target, born)`` (accumulate, view)."""
    kind = note[0]
    if kind == "next":
        return note[1], f"op{note[2]}", kind, note[3], (("input_nr", note[4]), ("position", note[5]))
    if kind == "grad_fn":
        return note[1], f"op{note[2]}", kind, note[3], ()
    if kind == "saved":
        return f"op{note[1]}", note[2], kind, note[3], (("attr", note[4]),)
    return note[1], note[2], kind, note[3], ()
