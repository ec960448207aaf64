"""Lifetimes: what of a drawing is shown, freed or dead after an event of its run.

A drawn node lives from the event that made it (``born``) until autograd destroys its part of the
graph (:meth:`Lifetimes.dead_index`); an input until torch frees it and the ops it feeds are gone;
a tensor made without grad from another until what it feeds is gone. The canvas asks these at
its cursor (:meth:`Lifetimes.visible`, :meth:`Lifetimes.tensor_state`, :meth:`Lifetimes.op_state`);
placement asks :meth:`Lifetimes.dead_index` to reuse the cells of a freed graph.

Pure Python, no Qt, no torch.
"""

from __future__ import annotations

from bisect import bisect_right

from graphview.core.drawing.nodes import INPUT_KINDS, DrawEdge, DrawNode
from graphview.core.held import held_by_nodes
from graphview.core.run import ACCUMULATE_GRAD, Run


class Lifetimes:
    """When each node of a drawing stops being shown, and how it looks at an event.

    ``nodes``, ``out`` (node id -> edges leaving it), ``derived`` and ``inputs`` are the drawing's
    own tables, shared, not copied: they grow as the drawing does."""

    def __init__(self, run: Run, nodes: dict[str, DrawNode], out: dict[str, list[DrawEdge]],
                 derived: set[str], inputs: list[str]) -> None:
        self.run = run
        self.nodes = nodes
        self.out = out
        self.derived = derived  # no-grad tensors made from others (detach, ops under no_grad)
        self.inputs = inputs  # inputs (leaves not made from a drawn tensor): they end when torch frees them
        self._deaths: dict[str, int] = {}  # derived node id -> when it stopped mattering (once known)
        # derived node id -> how many events the run had when its end was found not known yet: not
        # known still while the run has no more (a loop cut below it cannot make it known). Without
        # it each tensor of a no-grad transformer's residual stream was asked once for every path to
        # it, a number that doubles with each block (a 4-layer GPT-2 generating under no_grad: 161 s
        # to draw 1,200 events)
        self._unknown: dict[str, int] = {}

    def dead_index(self, node: DrawNode) -> int | None:
        """When autograd destroyed this part of the graph (an op, or a tensor through its grad_fn);
        an input, when it was freed (the last iteration's ``images`` once the script binds the
        name to the next batch)."""
        if node.kind in ("op", "accumulate"):
            op = self.run.op_nodes.get(node.ref)
            return op.dead if op is not None else None
        tnode = self.run.tensor_nodes.get(node.id)
        if tnode is not None and tnode.grad_fn is not None:
            op = self.run.op_nodes.get(tnode.grad_fn)
            return op.dead if op is not None else None
        if node.id in self.derived:
            known = self._deaths.get(node.id)
            if known is not None or self._unknown.get(node.id) == len(self.run.events):
                return known
            return self._derived_death(node)
        if node.kind in INPUT_KINDS:
            return self._input_death(node)
        return None

    def _input_death(self, node: DrawNode) -> int | None:
        """When torch freed an input, or later, when the last op it feeds is gone: the recorder's
        saved copy of a batch outlives the script's tensor (``model(torch.randn(...))`` frees the
        tensor at the end of the forward, while the conv holds its copy until backward)."""
        end = self.run.tensor_dead.get(node.ref)
        if end is None:
            return None
        nodes = self.nodes
        for edge in self.out.get(node.id, ()):
            user = nodes.get(edge.target)
            if user is not None and user.kind in ("op", "accumulate"):
                op = self.run.op_nodes.get(user.ref)
                if op is None or op.dead is None:
                    return None
                end = max(end, op.dead)
        return end

    def inputs_changing(self, low: int, high: int) -> list[str]:
        """Inputs that may disappear between events ``low`` and ``high`` (as :meth:`derived_changing`)."""
        return self._ending(self.inputs, low, high)

    def _derived_death(self, node: DrawNode) -> int | None:
        """A tensor made without grad from another (``targets.reshape(-1)``, ``out.detach()``,
        what ``loss.item()`` makes) has no graph that autograd destroys, yet leaving it on the
        canvas forever would add a column per training step. It goes with what it feeds: when
        every op and derived tensor it fed is gone; if it fed nothing, at the end of its step.

        Worked out without recursion: a no-grad chain may be thousands of tensors long (``h = h * 0.999``
        in a loop under no_grad). An in-place op on a no-grad tensor fed by what was made from it
        (``shifted.masked_fill_(shifted == -100, 0)``) closes a loop: a tensor on the way is not asked
        again, an answer that skipped one is not kept (asked from elsewhere, it may differ)."""
        nodes, derived, deaths = self.nodes, self.derived, self._deaths
        not_known, events = self._unknown, len(self.run.events)
        asking = {node.id}
        # a frame: the tensor, its users still to ask, their deaths, whether one is unknown,
        # how many users counted, whether a loop was cut below it
        frames = [[node, iter(self.out.get(node.id, ())), [], False, 0, False]]
        death = None
        while frames:
            frame = frames[-1]
            edge = next(frame[1], None)
            if edge is not None:
                user = nodes.get(edge.target)
                if user is None or not (user.kind in ("op", "accumulate") or user.id in derived):
                    continue
                if user.id in asking:
                    frame[5] = True  # a loop: not asked again
                    continue
                frame[4] += 1
                if user.id in derived:
                    user_death = deaths.get(user.id)
                    if user_death is None and not_known.get(user.id) != events:
                        asking.add(user.id)
                        frames.append([user, iter(self.out.get(user.id, ())), [], False, 0, False])
                        continue
                else:
                    user_death = self.dead_index(user)
                if user_death is None:
                    frame[3] = True
                else:
                    frame[2].append(user_death)
                continue
            frames.pop()
            current, _, found, unknown, counted, cut = frame
            asking.discard(current.id)
            if not counted:
                death = self._step_end(current.born)
            else:
                death = None if unknown else max(found)
            if death is None:
                not_known[current.id] = events
            elif not cut:
                deaths[current.id] = death
            if frames:
                parent = frames[-1]
                parent[5] = parent[5] or cut
                if death is None:
                    parent[3] = True
                else:
                    parent[2].append(death)
        return death

    def derived_changing(self, low: int, high: int) -> list[str]:
        """Derived tensors that may appear or disappear between events ``low`` and ``high``: those
        whose end falls in that span, and those whose end is not known yet."""
        return self._ending(self.derived, low, high)

    def _ending(self, node_ids, low: int, high: int) -> list[str]:
        """Those of ``node_ids`` whose end falls between ``low`` and ``high``, or is not known yet."""
        changing = []
        for node_id in node_ids:
            death = self.dead_index(self.nodes[node_id])
            if death is None or low <= death <= high:
                changing.append(node_id)
        return changing

    def _step_end(self, index: int) -> int | None:
        steps = self.run.steps
        at = bisect_right(steps, index, key=lambda step: step["start"]) - 1
        if at < 0:
            return None
        end = steps[at]["end"]
        return end if end is not None and end >= index else None

    def visible(self, node: DrawNode, index: int) -> bool:
        """The graph as it exists at ``index``: born, and not yet destroyed by autograd."""
        if node.born > index:
            return False
        dead = self.dead_index(node)
        return dead is None or dead > index

    def tensor_state(self, node: DrawNode, index: int) -> str:
        """``freed`` for a result whose node backward freed and whose tensor torch freed too (a
        ReLU's output inside a model's forward, once backward is done: drawn as solid as the loss
        the script still holds, it looked alive); else ``live``."""
        if node.kind == "intermediate":
            dead = self.run.tensor_dead.get(node.ref)
            if dead is not None and dead <= index:
                tnode = self.run.tensor_nodes.get(node.id)
                op = self.run.op_nodes.get(tnode.grad_fn) if tnode is not None else None
                if op is not None and op.freed is not None and op.freed <= index:
                    return "freed"
        return "live"

    def op_state(self, vid: int, index: int) -> str:
        """``live`` | ``running`` (executing at this event) | ``done`` | ``freed`` | ``error`` |
        ``unreachable`` (alive, but on no path from the next backward's roots)."""
        op = self.run.op_nodes.get(vid)
        if op is None:
            return "live"
        ev = self.run.events[index] if 0 <= index < len(self.run.events) else None
        if ev is not None and ev.get("ev") in ("bw_node", "bw_node_done", "accumulate") and ev.get("vid") == vid:
            return "running"
        if any(err.get("vid") == vid and i <= index for i, err in self.run.errors):
            return "error"
        if op.freed is not None and op.freed <= index and op.name != ACCUMULATE_GRAD:
            return "freed"  # AccumulateGrad holds nothing: the next graph reuses it
        if any(i <= index for _, i in op.executed):
            return "done"
        if self.run.unreachable_reason(vid, index) is not None:
            return "unreachable"
        return "live"

    def failed_roots(self, index: int) -> set[int]:
        """Where the errors by event ``index`` that no autograd node ran into happened: the tensors
        a backward call that failed before reaching any node was called on (e.g. backward on a
        tensor that has no grad_fn), and those an op that raised in forward took (its ``inputs``)."""
        tids: set[int] = set()
        for i, err in self.run.errors:
            if i > index or err.get("vid") is not None:
                continue
            call = self.run.backwards.get(err.get("bid"))
            if call is not None:
                tids.update(call.roots_tensors)
            elif err.get("bid") is None:
                tids.update(err.get("inputs") or ())
        return tids

    def saved_bytes(self, vid: int, index: int) -> int:
        """Bytes node ``vid`` holds in saved tensors after event ``index`` (each storage once, as
        the memory chart counts them: ``x * x`` saves x twice, one storage)."""
        return held_by_nodes(self.run, (vid,), index).total

    def is_output(self, tid: int, index: int) -> bool:
        """Whether tensor ``tid`` is the root of a backward call started by event ``index``."""
        first = self.run.first_root_at.get(tid)
        return first is not None and first <= index
