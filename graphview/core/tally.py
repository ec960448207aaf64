"""A run's summary, counted as its events stream past, in memory that does not grow with the events.

``graphview record`` writes every event to the trace as it comes and keeps only this
:class:`RunTally`: the counts ``graphview info`` prints, the peaks of saved bytes (overall and per
step, by the same storage rule as :class:`~graphview.core.run.Run`), how the script ended, its
errors, and whether any leaf that requires grad got a gradient (the one fact the graph-cut check
needs before it must look at the graph). A 100k-op run is millions of events; the full
:class:`~graphview.core.run.Run` of it is gigabytes, this is kilobytes plus a few ids per tensor.
"""

from __future__ import annotations

from graphview.core.events import FAILED_STATUSES
from graphview.core.saved_bytes import SavedBytes

_TRAINABLE_KINDS = ("param", "input")


class RunTally:
    """Counts what :meth:`graphview.core.run.Run.info` reports, one event at a time."""

    def __init__(self) -> None:
        self.events = 0
        self.start: dict | None = None
        self.end: dict | None = None
        self.errors: list[tuple[int, dict]] = []
        self.steps: list[dict] = []  # {"step", "peak"}: the step's number and its peak per device
        self.ops = 0
        self.backward_calls = 0
        self.optimizer_steps = 0
        self._nodes: set[int] = set()
        self._tensors: set[int] = set()
        self._saved: dict[int, tuple[str, str]] = {}  # live sids only: sid -> (device, storage)
        self.saved_tensors = 0
        self._bytes = SavedBytes()
        self._peaks: dict[str, int] = {}
        self._step_peak: dict[str, int] | None = None
        self._trainable: set[int] = set()  # leaves that require grad, as their latest tensor event says
        self._got_gradient: set[int] = set()  # tids a backward accumulated into or autograd.grad returned

    def add(self, event: dict) -> None:
        index = self.events
        self.events += 1
        kind = event.get("ev")
        if kind == "tensor":
            tid = event["tid"]
            self._tensors.add(tid)
            if event.get("is_leaf") and event.get("requires_grad") and event.get("kind") in _TRAINABLE_KINDS:
                self._trainable.add(tid)
            else:
                self._trainable.discard(tid)
        elif kind == "node":
            self._nodes.add(event["vid"])
        elif kind == "op":
            self.ops += 1
        elif kind == "saved":
            if event["sid"] not in self._saved:
                self.saved_tensors += 1
            self._saved[event["sid"]] = (event["device"], event["storage"])
            if self._bytes.save(event["device"], event["storage"], event["kind"], event["bytes"]):
                self._note_peak(event["device"])
        elif kind == "release":
            where = self._saved.pop(event["sid"], None)
            if where is not None and self._bytes.release(*where):
                self._note_peak(where[0])
        elif kind in ("accumulate", "grad_result"):
            self._got_gradient.add(event["tid"])
        elif kind == "backward_start":
            self.backward_calls += 1
        elif kind == "optimizer_step":
            self.optimizer_steps += 1
        elif kind == "step_start":
            self._close_step()
            self._step_peak = dict(self._current())
            self.steps.append({"step": event["step"], "peak": self._step_peak})
        elif kind == "step_end":
            self._close_step()
        elif kind == "error":
            self.errors.append((index, event))
        elif kind == "run_start":
            self.start = event
        elif kind == "run_end":
            self.end = event
            self._close_step()

    def _current(self) -> dict[str, int]:
        return {device: self._bytes.total(device) for device in self._peaks}

    def _note_peak(self, device: str) -> None:
        total = self._bytes.total(device)
        self._peaks[device] = max(self._peaks.get(device, 0), total)
        if self._step_peak is not None:
            self._step_peak[device] = max(self._step_peak.get(device, 0), total)

    def _close_step(self) -> None:
        self._step_peak = None

    @property
    def status(self) -> str:
        return "incomplete" if self.end is None else self.end.get("status", "ok")

    @property
    def failed(self) -> bool:
        return self.status in FAILED_STATUSES

    @property
    def any_leaf_got_a_gradient(self) -> bool:
        """As :func:`graphview.core.cuts.any_leaf_got_a_gradient` says of the whole run."""
        return not self._got_gradient.isdisjoint(self._trainable)

    def info(self) -> dict:
        """The same summary as :meth:`graphview.core.run.Run.info`."""
        start = self.start or {}
        return {
            "script": start.get("script"),
            "mode": start.get("mode", "plain"),
            "torch": start.get("torch"),
            "options": start.get("options", {}),
            "status": self.status,
            "exit_code": (self.end or {}).get("exit_code"),
            "events": self.events,
            "steps": len(self.steps),
            "ops": self.ops,
            "nodes": len(self._nodes),
            "tensors": len(self._tensors),
            "saved_tensors": self.saved_tensors,
            "backward_calls": self.backward_calls,
            "optimizer_steps": self.optimizer_steps,
            "peak_saved_bytes": dict(self._peaks),
            "peak_per_step": [{"step": s["step"], "peak": dict(s["peak"])} for s in self.steps],
            "errors": [{"index": index, "type": ev.get("type"), "message": ev.get("message"), "line": ev.get("line")}
                       for index, ev in self.errors],
        }
