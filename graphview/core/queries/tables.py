"""What the queries read of a run, as protocols: they name no type of :mod:`graphview.core.run`,
which builds on them (the run inherits the queries and is one of these)."""

from __future__ import annotations

from typing import Mapping, Protocol, Sequence, Sized, runtime_checkable


@runtime_checkable
class DrawnTensor(Protocol):
    """A tensor as the graph draws it: one state of a tensor (``TensorNode``)."""

    tid: int
    version: int
    born: int  # the index of the event that made this state


@runtime_checkable
class RunTables(Protocol):
    """The tables of a run (``Run``) that its summary counts, and the queries it asks."""

    start: dict | None  # the run_start event
    end: dict | None  # the run_end event
    events: Sized
    steps: Sequence[dict]
    ops: Sequence[tuple[int, dict]]
    op_nodes: Mapping[int, object]
    tensors: Mapping[int, dict]
    saved: Mapping[int, object]
    backwards: Mapping[int, object]
    optimizer_steps: Sequence[tuple[int, dict]]
    errors: Sequence[tuple[int, dict]]

    @property
    def mode(self) -> str: ...

    @property
    def status(self) -> str: ...

    def peak_saved_bytes(self) -> dict[str, int]: ...

    def peak_per_step(self) -> list[dict]: ...
