"""The run's intake of what backward does: its calls, the nodes it runs, the changes of ``.grad``.

:class:`BackwardIntake` is the part of :class:`~graphview.core.run.Run` that takes in the events
of backward (``backward_start``, ``bw_node``, ``bw_node_done``, ``accumulate``, ``tensor_grad``,
``grad_result``, ``grad_read``, ``grad_reset``, ``backward_end``): its handlers ``_on_<kind>``
are in the run's table with the others. It records a :class:`BackwardCall` for each call and a
:class:`GradEntry` for each change of a tensor's ``.grad`` (the gradient ledger,
:mod:`graphview.core.queries.gradients`, reads them).
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Mapping

from graphview.core.event_log import EventLog
from graphview.core.event_refs import EventRefs, GradsIn

ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"


class GradEntry:
    """One change of a tensor's ``.grad``: what the gradient ledger lists.

    ``increment`` and ``value`` (the value of ``.grad`` after the change; None: ``.grad`` is None)
    are given, or (:meth:`recorded`) read from the event that recorded them when asked for.
    """

    __slots__ = ("index", "step", "how", "bid", "_increment", "_value", "_log", "_resolve")

    def __init__(self, index: int, step: int | None, how: str, increment: dict | None, value: dict | None,
                 bid: int | None = None) -> None:
        self.index = index
        self.step = step
        self.how = how  # "accumulate" | "retained" | "set_to_none" | "zero" | "assign_none" | "assign" | "in_place"
        self.bid = bid
        self._increment = increment
        self._value = value
        self._log = None
        self._resolve = None

    @classmethod
    def recorded(cls, log: EventLog, index: int, step: int | None, how: str, bid: int | None,
                 resolve: Callable[[dict], tuple[dict | None, dict | None]] | None = None) -> "GradEntry":
        """An entry whose increment and value are the ``increment`` and ``grad`` of event ``index``
        (or what ``resolve`` makes of the event: an ``accumulate`` may leave them to its bw_node)."""
        entry = cls(index, step, how, None, None, bid)
        entry._log = log
        entry._resolve = resolve
        return entry

    @property
    def increment(self) -> dict | None:
        return self._increment if self._log is None else self._read()[0]

    @property
    def value(self) -> dict | None:
        return self._value if self._log is None else self._read()[1]

    def _read(self) -> tuple[dict | None, dict | None]:
        """(increment, value) as the recording event gives them."""
        ev = self._log[self.index]
        return self._resolve(ev) if self._resolve is not None else (ev.get("increment"), ev.get("grad"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GradEntry):
            return NotImplemented
        return ((self.index, self.step, self.how, self.increment, self.value, self.bid)
                == (other.index, other.step, other.how, other.increment, other.value, other.bid))

    def __repr__(self) -> str:
        return (f"GradEntry(index={self.index}, step={self.step}, how={self.how!r}, increment={self.increment!r}, "
                f"value={self.value!r}, bid={self.bid})")


@dataclass(slots=True)
class BackwardCall:
    bid: int
    api: str
    start: int
    line: int | None
    roots: list
    roots_tensors: list
    retain_graph: bool
    create_graph: bool
    seeds: list
    inputs: list
    forced: list
    end: int | None = None
    ok: bool | None = None
    order: list = field(default_factory=list)  # vids in execution order
    # vid -> [summary...] arriving at the node / sent along its next edges (read from the events)
    grads_in: Mapping = field(default_factory=dict)
    grads_out: Mapping = field(default_factory=dict)
    results: dict = field(default_factory=dict)  # tid -> summary (autograd.grad results)
    # seen as the events came, so that a finding need not read every gradient back: vid -> the
    # index of its bw_node_done whose gradients hold NaN or Inf; the first bw_node_done with a
    # gradient summarized from a sample of its values
    non_finite: dict = field(default_factory=dict)
    first_sampled: int | None = None


class BackwardIntake:
    """The handlers of backward's events, over the run's ``backwards``, ``op_nodes``, ``grads``,
    ``first_root_at``, ``none_grad_reads``, ``events`` and the step now (``_step``)."""

    def _on_backward_start(self, index: int, ev: dict) -> None:
        for tid in ev.get("root_tensors") or ():
            self.first_root_at.setdefault(tid, index)
        self.backwards[ev["bid"]] = BackwardCall(
            bid=ev["bid"], api=ev.get("api", "backward"), start=index, line=ev.get("line"),
            roots=ev.get("roots") or [], roots_tensors=ev.get("root_tensors") or [], retain_graph=bool(ev.get("retain_graph")),
            create_graph=bool(ev.get("create_graph")), seeds=ev.get("seeds") or [],
            inputs=ev.get("inputs") or [], forced=ev.get("forced") or [],
        )
        call = self.backwards[ev["bid"]]
        call.grads_out = EventRefs(self.events, "grads_out", default=())
        call.grads_in = GradsIn(self.events, call.grads_out)

    def _on_bw_node(self, index: int, ev: dict) -> None:
        call = self.backwards.get(ev["bid"])
        node = self.op_nodes.get(ev["vid"])
        if call is not None:
            call.order.append(ev["vid"])
            call.grads_in.note(ev["vid"], index)
        if node is not None:
            node.executed.append((ev["bid"], index))

    def _on_bw_node_done(self, index: int, ev: dict) -> None:
        call = self.backwards.get(ev["bid"])
        node = self.op_nodes.get(ev["vid"])
        if call is not None:
            call.grads_out.note(ev["vid"], index)
            for summary in ev.get("grads_out") or ():
                if type(summary) is dict:
                    if non_finite(summary):
                        call.non_finite.setdefault(ev["vid"], index)
                    if call.first_sampled is None and (summary.get("stats") or {}).get("sampled"):
                        call.first_sampled = index
        if (node is not None and call is not None and not call.retain_graph and node.freed is None
                and node.name != ACCUMULATE_GRAD):  # AccumulateGrad holds nothing; later graphs reuse it
            node.freed = index

    def _on_accumulate(self, index: int, ev: dict) -> None:
        # read back when shown: an event may leave out what its bw_node showed (see accumulation_of)
        self.grads.setdefault(ev["tid"], []).append(
            # (over the run's backward calls, not the run: a run holds no reference to itself, so
            # refcounting frees it once it is replaced, even after the collector froze it)
            GradEntry.recorded(self.events, index, self._step, "accumulate", ev.get("bid"),
                               partial(accumulation_of, self.backwards))
        )

    def _on_tensor_grad(self, index: int, ev: dict) -> None:
        self.grads.setdefault(ev["tid"], []).append(
            GradEntry.recorded(self.events, index, self._step, "retained", ev.get("bid"))
        )

    def _on_grad_result(self, index: int, ev: dict) -> None:
        call = self.backwards.get(ev["bid"])
        if call is not None:
            call.results[ev["tid"]] = ev.get("grad")

    def _on_grad_read(self, index: int, ev: dict) -> None:
        if ev.get("none"):
            self.none_grad_reads.setdefault(ev["tid"], index)

    def _on_grad_reset(self, index: int, ev: dict) -> None:
        how = ev.get("how", "set_to_none")
        for tid in ev.get("tids") or ():
            entries = self.grads.setdefault(tid, [])
            value = None
            if how in ("zero", "assign", "in_place"):
                value = ev.get("value") or _zeros_like(entries[-1].value if entries else None)
            entries.append(GradEntry(index, self._step, how, None, value))

    def _on_backward_end(self, index: int, ev: dict) -> None:
        call = self.backwards.get(ev["bid"])
        if call is not None:
            call.end = index
            call.ok = bool(ev.get("ok"))


def non_finite(summary: object) -> bool:
    """Whether a value summary says its tensor holds NaN or Inf (counted in its statistics, or
    among its values, which graphview writes as the strings "nan", "inf", "-inf"; a trace from
    elsewhere may hold them as JSON's NaN and Infinity, or as packed float64 bytes: those count too)."""
    if not isinstance(summary, dict):
        return False
    stats = summary.get("stats") or {}
    if stats.get("nan") or stats.get("inf"):
        return True
    if any(type(stats.get(key)) is float and not math.isfinite(stats[key]) for key in ("min", "max", "mean", "norm")):
        return True
    values = summary.get("values") or ()
    return any(isinstance(v, str) or (type(v) is float and not math.isfinite(v)) for v in values)


def _zeros_like(summary: dict | None) -> dict | None:
    if not summary:
        return None
    shape = summary.get("shape", [])
    numel = 1
    for d in shape:
        numel *= d
    if "values" in summary:
        return {"shape": shape, "values": [0.0] * numel}
    return {"shape": shape, "stats": {"min": 0.0, "max": 0.0, "mean": 0.0, "norm": 0.0, "numel": numel, "nan": 0, "inf": 0}}


def accumulation_of(backwards: dict, ev: dict) -> tuple[dict | None, dict | None]:
    """:meth:`~graphview.core.queries.gradients.GradientLedger.accumulation`, given the run's backward calls (the run's intake keeps
    this, over ``backwards`` and not the run: a run holds no reference to itself)."""
    if "increment" in ev:
        increment = ev["increment"]
    else:
        call = backwards.get(ev.get("bid"))
        arrived = call.grads_in.get(ev.get("vid")) if call is not None else None
        increment = arrived[0] if arrived else None
    return increment, (ev["grad"] if "grad" in ev else increment)
