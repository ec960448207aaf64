"""Fields of recorded events, read from the run's event log when asked for.

A run's gradients (what each backward node received and sent, what each ``.grad`` became) are
value summaries, a few hundred bytes each, and a big run has hundreds of thousands of them. The
run keeps only where each one was recorded (an event index) and reads the summary back from its
:class:`~graphview.core.event_log.EventLog` when a view shows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Iterator

from graphview.core.event_log import EventLog


class EventRefs(Mapping):
    """``key -> event[field]`` for the event recorded for each key (``default`` if it has none)."""

    __slots__ = ("_log", "_field", "_default", "_at")

    def __init__(self, log: EventLog, field: str, default: object = None) -> None:
        self._log = log
        self._field = field
        self._default = default
        self._at: dict = {}

    def note(self, key: object, index: int) -> None:
        """The value for ``key`` is the field of event ``index``."""
        self._at[key] = index

    def __getitem__(self, key: object):
        value = self._log[self._at[key]].get(self._field)
        if value is None and self._default is not None:
            return list(self._default)
        return value

    def index_of(self, key: object) -> int | None:
        """The index of the event recorded for ``key``, or None."""
        return self._at.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._at

    def __iter__(self) -> Iterator:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)


class GradsIn(EventRefs):
    """``vid -> grads_in`` of a backward call's ``bw_node`` events. A node fed by one edge is
    recorded as ``from_edge [consumer, i]``: its gradient is the consumer's ``grads_out[i]``."""

    __slots__ = ("_grads_out",)

    def __init__(self, log: EventLog, grads_out: EventRefs) -> None:
        super().__init__(log, "grads_in")
        self._grads_out = grads_out

    def __getitem__(self, key: object):
        ev = self._log[self._at[key]]
        grads_in = ev.get("grads_in")
        if grads_in is None and ev.get("from_edge"):
            consumer, position = ev["from_edge"]
            sent = self._grads_out.get(consumer) or []
            grads_in = [sent[position]] if position < len(sent) else [None]
        return grads_in
