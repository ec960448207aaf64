"""What a run's tensors held: each tensor's value summary and version at an event."""

from __future__ import annotations

from bisect import bisect_right
from graphview.core.queries.tables import DrawnTensor


class ValueQueries:
    """Values and versions from the run's histories (``values``: tid -> [(index, value summary)];
    ``_versions``: tid -> [(index, version)], each as it changed) and its drawn tensors
    (``_tensor_nodes_of``: tid -> the nodes that drew its states)."""

    def value_at(self, tid: int, index: int | None = None) -> dict | None:
        """The tensor's value summary as recorded at or before event ``index``."""
        history = self.values.get(tid)
        if not history:
            return None
        if index is None:
            return history[-1][1]
        at = bisect_right(history, index, key=lambda item: item[0])
        return history[at - 1][1] if at else None

    def version_at(self, node: DrawnTensor, index: int) -> int:
        """The version (``t._version``) the drawn tensor ``node`` had at event ``index``: a parameter
        keeps its node while the optimizer changes it in place, step after step."""
        later = any(node.born < n.born <= index for n in self._tensor_nodes_of.get(node.tid, ()))
        history = self._versions.get(node.tid)
        if later or not history:
            return node.version  # (a later state of it has its own node)
        at = bisect_right(history, index, key=lambda item: item[0])
        return history[at - 1][1] if at else history[0][1]  # (before it was seen: as first seen)

