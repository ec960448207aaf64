"""Reachability: which autograd nodes a backward call can run, and why a live node will not run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from graphview.core.backward_intake import BackwardCall


class Reachability:
    """Walks of the run's ``next`` edges (``op_nodes``) from its backward calls' roots (``backwards``),
    cached per call in the run's ``_reachable_cache``."""

    def reachable(self, roots: Iterable[int | None]) -> set[int]:
        """Vids of the nodes a backward from ``roots`` can run: a walk of the recorded ``next`` edges."""
        found: set[int] = set()
        stack = [vid for vid in roots if vid is not None]
        while stack:
            vid = stack.pop()
            if vid in found:
                continue
            found.add(vid)
            node = self.op_nodes.get(vid)
            if node is not None:
                stack.extend(child for child, _ in node.next if child is not None and child not in found)
        return found

    def backward_around(self, index: int) -> BackwardCall | None:
        """The backward call running at event ``index``, else the next one to start (None: no more)."""
        for call in self.backwards.values():  # in the order they started
            if call.end is None or call.end >= index:
                return call
        return None

    def reachable_by_call(self, call: BackwardCall) -> set[int]:
        key = (call.bid, len(self.op_nodes))
        cached = self._reachable_cache.get(call.bid)
        if cached is None or cached[0] != key:
            cached = (key, self.reachable(call.roots))
            self._reachable_cache[call.bid] = cached
        return cached[1]

    def unreachable_reason(self, vid: int, index: int) -> str | None:
        """Why live node ``vid`` will not run in the backward at or after event ``index``, or None.

        torch can keep a node alive that no walk from the loss reaches: the node a view had
        before an in-place op (the op's CopySlices holds it inside), another graph that a
        variable still references. Backward never runs such a node.
        """
        node = self.op_nodes.get(vid)
        if node is None or node.born > index or (node.dead is not None and node.dead <= index):
            return None
        if node.freed is not None and node.freed <= index:
            return None
        call = self.backward_around(index)
        if call is None or node.born >= call.start or vid in self.reachable_by_call(call):
            return None
        where = f" (line {call.line})" if call.line else ""
        for tnode in self._tensor_nodes_with_grad_fn.get(vid, ()):
            later = [n for n in self._tensor_nodes_of.get(tnode.tid, ()) if n.born > tnode.born and n.born <= index]
            if later:
                made = next((ev for _, ev in self.ops if any(t == tnode.tid for t, _ in ev.get("outputs") or ())), None)
                name = self.tensor_name(tnode.tid)
                what = f"the view {name}" if name else "the view" + (
                    f" made by {made['op']} at line {made.get('line')}" if made else "")
                return (f"held by CopySlices: this was the node of {what} until the in-place op at line "
                        f"{later[0].info.get('line')} replaced it. torch keeps it inside that op's node, but no "
                        f"path from the roots of the next backward{where} reaches it: backward never runs it")
        return (f"not on any path from the roots of the next backward{where}: backward will not run it; "
                "it stays alive because something still references its graph")
