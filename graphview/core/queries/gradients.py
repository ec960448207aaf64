"""The gradient ledger: every change of every ``.grad``, as the run recorded it."""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graphview.core.run import GradEntry


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
