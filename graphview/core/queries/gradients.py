"""The gradient ledger: every change of every ``.grad``, as the run recorded it."""

from __future__ import annotations

from bisect import bisect_right

from graphview.core.backward_intake import GradEntry, accumulation_of


class GradientLedger:
    """The changes of ``.grad`` by tensor (the run's ``grads``: tid -> its entries, in order)."""

    def grad_at(self, tid: int, index: int | None = None) -> GradEntry | None:
        """The latest change of ``.grad`` of tensor ``tid`` at or before ``index``."""
        entries = self.grads.get(tid)
        if not entries:
            return None
        if index is None:
            return entries[-1]
        at = bisect_right(entries, index, key=lambda entry: entry.index)
        return entries[at - 1] if at else None

    def grad_values(self, tid: int) -> list:
        """Every value ``.grad`` of ``tid`` took, in order (``None`` after a reset to None)."""
        return [entry.value for entry in self.grads.get(tid, ())]

    def accumulation(self, ev: dict) -> tuple[dict | None, dict | None]:
        """(increment, new ``.grad``) of an ``accumulate`` event. A missing ``increment`` is the
        gradient the node's ``bw_node`` showed arriving; a missing ``grad`` is the increment."""
        return accumulation_of(self.backwards, ev)
