"""What a scene shows at the timeline's cursor: which nodes exist, and how each item looks there.

The cursor is an event index of the run; the scene shows the state after it. A move of up to a
few thousand events, either way (streaming, stepping, scrubbing), only revisits the items the
events in between touch (:meth:`CursorState.touched`); a longer jump, or one with a module box
collapsed, checks them all. What each node looks like comes from the drawing's lifetimes
(:mod:`graphview.core.drawing.lifetimes`) and the run's values and gradients.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene

from graphview.core.run import ACCUMULATE_GRAD
from graphview.qt.canvas.nodes import ITEM_BOUNDS, NodeItem
from graphview.qt.canvas.style import NODE_H, NODE_W
from graphview.qt.formatting import short_value


class CursorState:
    """The nodes of a :class:`~graphview.qt.canvas.scene.GraphScene` shown at its cursor, and
    the look of their items there."""

    def __init__(self, scene: QGraphicsScene) -> None:
        self.scene = scene
        self.groups_at = 0.0  # when the module boxes were last brought to the cursor
        self.gone_at: tuple = (None, None)  # (cursor, run size) -> graph_gone_at()
        self.reset()

    def reset(self) -> None:
        """A new run: nothing shown yet."""
        self.complete = False  # every item has been brought to the cursor once
        self.fresh: set[str] = set()  # items created since the last cursor move
        self.visible: set[str] = set()  # node ids shown at the cursor (module boxes look only at these)
        self._tensors_of_op: dict[int, list[str]] = {}  # grad_fn vid -> tensor items it made (see tensors_of_op)
        self._noted = 0  # placed nodes looked at for it so far

    def set_cursor(self, index: int) -> None:
        """Show the state after event ``index``.

        A move of up to a few thousand events, either way (streaming, stepping, scrubbing),
        only revisits the items the events in between touch; a longer jump, or one with a module
        box collapsed, checks them all.
        """
        scene = self.scene
        previous = scene.cursor
        scene.cursor = index
        if scene.drawing is None:
            return
        incremental = self.complete and previous >= 0 and abs(index - previous) <= 3000 and not scene.boxes.collapsed
        if incremental:
            ids = [i for i in self.touched(min(previous, index), max(previous, index)) if i in scene._taken]
        elif scene.virtual and not scene.live and scene.run is not None:
            # a big finished run: which nodes are shown, at once for all of them; then only the
            # items and the nodes near the view are revisited
            shown = scene._lifetimes.shown_at(index)
            self.visible = shown
            near = shown & scene.ids_near(scene.region) if not scene.region.isEmpty() else ()
            ids = list(set(scene.node_items).union(near))
        else:
            ids = scene._placed
        self.fresh.clear()
        items = self._revisit(ids, index)
        scene.boxes.compact_at_run_end()  # (past a finished run's last graph: only what is left, compact)
        now = time.monotonic()
        if scene.live and now - self.groups_at < 0.5 and not scene.boxes.collapsed:
            hidden_by = {}  # streaming: module boxes catch up twice a second
        else:
            self.groups_at = now
            hidden_by = scene.boxes.update(self.visible, index)
        routes = scene.edge_routes
        if incremental and not hidden_by:
            # nothing collapsed: only the edges of the items revisited can change
            edges = {e for item in items for e in routes.of_node(item.node.id)}
        else:
            edges = routes.items
        for edge in edges:
            routes.update(edge, index, hidden_by)
        self.complete = True
        scene.selection.select_kept_again()
        if scene.virtual:
            scene.sketch.update()

    def _revisit(self, ids, index: int) -> list[NodeItem]:
        """Bring the items of nodes ``ids`` to event ``index``, making those shown near the view
        and (a big drawing) dropping those gone; returns the items kept or made."""
        scene = self.scene
        drawing, region_items = scene.drawing, scene.region_items
        virtual = scene.virtual
        items = []
        for node_id in ids:
            item = scene.node_items.get(node_id)
            if item is not None:
                self.update_item(item, index)
                if virtual and not item.isVisible() and not item.isSelected():
                    region_items.drop_item(node_id)  # gone at this cursor: no item kept for it
                else:
                    items.append(item)
                continue
            if drawing.visible(drawing.nodes[node_id], index):
                self.visible.add(node_id)
                if not virtual or region_items.in_region(node_id):
                    items.append(region_items.make_item(node_id, True))
                    self.update_item(items[-1], index)
            else:
                self.visible.discard(node_id)
        return items

    def update_item(self, item: NodeItem, index: int) -> None:
        drawing = self.scene.drawing
        run = drawing.run
        node = item.node
        if node.kind not in ("op", "accumulate"):
            # a name can come after the item was made (the script binds it once the op returned,
            # and a live run's events come in batches): hidden or not, the item takes it
            name = run.tensor_name(node.ref)
            if name and not node.title.startswith(name):
                node.title = name + (node.title[node.title.index(" ("):] if " (v" in node.title else "")
                item.update()
        visible = drawing.visible(node, index)
        self.scene._show(item, visible)
        if not visible:
            self.visible.discard(node.id)
            return
        self.visible.add(node.id)
        if node.kind in ("op", "accumulate"):
            state = drawing.op_state(node.ref, index)
            sent = run.non_finite_out(node.ref, index) if node.kind == "op" else None
            note = None if sent is None else ("NaN/Inf starts here" if sent == "first" else "sends NaN/Inf")
            item.set_state(state, node.kind, drawing.saved_bytes(node.ref, index), note)
            return
        kind = "output" if node.kind == "intermediate" and drawing.is_output(node.ref, index) else node.kind
        entry = run.grad_at(node.ref, index)
        item.set_value(run.value_at(node.ref, index))
        grad = short_value(entry.value) if entry is not None and entry.value is not None else None
        if grad is None and run.none_grad_reads.get(node.ref, index + 1) <= index:
            grad = "None"  # the script read .grad and got None (a non-leaf, a leaf backward never reached)
        state = "error" if run.errors and node.ref in drawing.failed_roots(index) else drawing.tensor_state(node, index)
        item.set_state(state, kind, 0, grad)

    def tensors_of_op(self) -> dict[int, list[str]]:
        """Autograd node's vid -> the tensors among the scene's placed nodes that it made, in the
        order they were placed: brought up to date when asked (a step asks; opening a big trace
        places 10^5 nodes and does not)."""
        scene, of_op = self.scene, self._tensors_of_op
        placed = scene._placed
        if self._noted < len(placed):
            tensor_nodes = scene.drawing.run.tensor_nodes
            for node_id in placed[self._noted:]:
                tnode = tensor_nodes.get(node_id)
                if tnode is not None and tnode.grad_fn is not None:
                    made = of_op.get(tnode.grad_fn)
                    if made is None:
                        of_op[tnode.grad_fn] = [node_id]
                    else:
                        made.append(node_id)
            self._noted = len(placed)
        return of_op

    def touched(self, previous: int, index: int) -> set[str]:
        """Ids of the items whose look can differ between cursor positions ``previous`` < ``index``."""
        run = self.scene.drawing.run
        events = run.events
        touched: set[str] = set(self.fresh)

        of_op = self.tensors_of_op()

        def op(vid):
            if vid is not None:
                touched.add(f"op{vid}")
                touched.update(of_op.get(vid, ()))

        def tensor(tid):
            if tid is not None:
                touched.update(n.id for n in run._tensor_nodes_of.get(tid, ()))

        ends = False
        for i in range(max(previous, 0), min(index, len(events) - 1) + 1):
            ev = events[i]
            kind = ev.get("ev")
            if kind in ("node_dead", "step_end", "tensor_dead"):
                ends = True  # a derived no-grad tensor goes with what it feeds, or its step; an input too, once freed
            if kind in ("bw_node", "bw_node_done", "node", "node_dead", "error"):
                op(ev.get("vid"))
            if kind == "error" and ev.get("bid") in run.backwards:
                for tid in run.backwards[ev["bid"]].roots_tensors:
                    tensor(tid)
            elif kind == "error":  # an op that raised in forward: the tensors it took
                for tid in ev.get("inputs") or ():
                    tensor(tid)
            elif kind == "accumulate":
                op(ev.get("vid"))
                tensor(ev.get("tid"))
            elif kind in ("tensor", "name", "value", "tensor_grad", "grad_read", "tensor_dead"):
                tensor(ev.get("tid"))
            elif kind == "grad_reset":
                for tid in ev.get("tids") or ():
                    tensor(tid)
            elif kind in ("saved", "own"):
                op(ev.get("owner"))
            elif kind == "release":
                saved = run.saved.get(ev["sid"])
                op(saved.owner if saved else None)
            elif kind == "backward_start":
                for tid in ev.get("root_tensors") or ():
                    tensor(tid)
            elif kind == "op":
                for tid, _ in list(ev.get("outputs") or ()) + list(ev.get("inputs") or ()):
                    tensor(tid)
        if ends:
            touched.update(self.scene.drawing.derived_changing(previous, index))
            touched.update(self.scene.drawing.inputs_changing(previous, index))
        return touched

    def shown_at_cursor(self, node_id: str) -> bool:
        """Whether a node exists at the cursor, drawn or inside a shut module box."""
        return node_id in self.visible

    def shown_anything(self) -> bool:
        """Whether any node is shown at the cursor (as an item, in the sketch, or in a shut box)."""
        return bool(self.visible)

    def graph_gone_at(self) -> int | None:
        """When autograd destroyed the last graph, if none is alive at the cursor (between steps,
        after the run: only leaves and their .grad are left); else None. Not asked of a big run."""
        scene = self.scene
        run, index = scene.run, scene.cursor
        if run is None or scene.virtual or index < 0:
            return None
        key = (index, len(run.op_nodes), len(run.events))
        if self.gone_at[0] == key:
            return self.gone_at[1]
        latest = None
        for op in run.op_nodes.values():
            if op.born > index or op.name == ACCUMULATE_GRAD:  # (a leaf's accumulator outlives graphs)
                continue
            if op.dead is None or op.dead > index:
                latest = None  # a graph is alive
                break
            latest = op.dead if latest is None else max(latest, op.dead)
        self.gone_at = (key, latest)
        return latest

    def newest_shown(self) -> str | None:
        """The node shown at the cursor that was born last (where a run is)."""
        scene = self.scene
        hidden = scene.boxes._hidden_by
        if not hidden and scene.virtual and not scene.live:  # a big finished run: from the arrays, at once
            return scene._lifetimes.newest_at(scene.cursor)
        shown = [n for n in self.visible if n not in hidden]
        return max(shown, key=lambda n: scene.drawing.nodes[n].born) if shown else None

    def shown_rect(self) -> QRectF:
        """What is shown at the cursor, nodes and shut boxes, in scene units (null: nothing)."""
        scene = self.scene
        rect = QRectF()
        if not scene.virtual:
            for item in scene.node_items.values():
                if item.isVisible():
                    rect = rect.united(item.sceneBoundingRect())
        elif scene.boxes.layout is None and not scene.live and scene.run is not None:
            extent = scene._lifetimes.extent_at(scene.cursor)  # every node at its drawing place
            if extent is not None:
                x0, y0, x1, y1 = extent
                probe = ITEM_BOUNDS
                rect = QRectF(x0 + probe.left(), y0 + probe.top(), x1 - x0 + probe.width(), y1 - y0 + probe.height())
        else:
            xs, ys = [], []
            hidden = scene.boxes._hidden_by
            for node_id in self.visible:
                if node_id in hidden:
                    continue
                where = scene.place_of(node_id)
                if where is not None:
                    xs.append(where[0])
                    ys.append(where[1])
            if xs:
                probe = ITEM_BOUNDS
                rect = QRectF(min(xs) + probe.left(), min(ys) + probe.top(), max(xs) - min(xs) + probe.width(),
                              max(ys) - min(ys) + probe.height())
        for group in scene.groups.values():
            if group.isVisible() and group.collapsed:
                rect = rect.united(group.sceneBoundingRect())
        return rect

    def drawn_rect(self) -> QRectF:
        """What is painted at the cursor, in scene units: each shown node's box and the badges it
        has (not the room its item keeps for badges), and the shut boxes; a big scene, whose nodes
        have no item each, as :meth:`shown_rect` (null: nothing)."""
        scene = self.scene
        if scene.virtual:
            return self.shown_rect()
        rect = QRectF()
        for item in scene.node_items.values():
            if item.isVisible():
                rect = rect.united(item.mapRectToScene(item.drawn_rect()))
        for group in scene.groups.values():
            if group.isVisible() and group.collapsed:
                rect = rect.united(group.sceneBoundingRect())
        return rect

    def nodes_of_event(self, index: int) -> list[str]:
        """The node ids event ``index`` is about, the likeliest first: the grad_fn node a backward
        step runs, or the nodes an op made (its first output tensor, its grad_fn, its other
        outputs); where a backward call starts, the tensor it was called on (the loss), else that
        tensor's grad_fn; where it ends, the last node it ran; where an op raised in forward, the
        tensors it took."""
        run = self.scene.run
        if run is None or not 0 <= index < len(run.events):
            return []
        ev = run.events[index]
        candidates: list[str] = []
        kind = ev.get("ev")
        if kind == "backward_start":
            for tid in ev.get("root_tensors") or ():
                candidates.extend(n.id for n in run._tensor_nodes_of.get(tid, ()))
            candidates.extend(f"op{vid}" for vid in ev.get("roots") or () if vid is not None)
            return candidates
        if kind == "backward_end":
            call = run.backwards.get(ev.get("bid"))
            return [f"op{call.order[-1]}"] if call is not None and call.order else []
        if kind == "error" and ev.get("vid") is None:  # an op that raised in forward: the tensors it took
            return [n.id for tid in ev.get("inputs") or () for n in run._tensor_nodes_of.get(tid, ())]
        if ev.get("vid") is not None:
            candidates.append(f"op{ev['vid']}")
        outputs = [n.id for tid, _ in ev.get("outputs") or () for n in run._tensor_nodes_of.get(tid, ())]
        # the first output, then the op's node (following keeps the two in view together), then the rest
        candidates.extend(outputs[:1])
        if ev.get("grad_fn") is not None:
            candidates.append(f"op{ev['grad_fn']}")
        candidates.extend(outputs[1:])
        if ev.get("tid") is not None:
            candidates.extend(n.id for n in run._tensor_nodes_of.get(ev["tid"], ()))
        return candidates

    def node_at_event(self, index: int) -> str | None:
        """The node event ``index`` is about (:meth:`nodes_of_event`, the likeliest first) that
        exists at the cursor, drawn or inside a shut box; None when the event is about none."""
        return next((node_id for node_id in self.nodes_of_event(index) if node_id in self.visible), None)

    def place_at_event(self, index: int) -> QRectF | None:
        """Where the shown node event ``index`` is about is drawn (its box, or the shut module box
        holding it), in scene units, found without making an item (a view zoomed out beyond
        reading makes none): None when that node is not shown at ``index``."""
        places = self.places_at_event(index, 1)
        return places[0] if places else None

    def places_at_event(self, index: int, most: int) -> list[QRectF]:
        """Where the shown nodes event ``index`` is about are drawn, the likeliest first (see
        :meth:`nodes_of_event`: an op's output tensor, then the grad_fn node it made), at most
        ``most`` of them; a shut module box holding several, once. Empty when the likeliest is
        inside a box that is not shown."""
        scene = self.scene
        hidden_by = scene.boxes._hidden_by
        places: list[QRectF] = []
        for node_id in self.nodes_of_event(index):
            group = hidden_by.get(node_id)
            if group is not None:
                if not group.isVisible():
                    break
                rect = group.sceneBoundingRect()
            elif node_id in self.visible and node_id in scene._taken:
                item = scene.node_items.get(node_id)
                if item is not None:
                    rect = item.mapRectToScene(QRectF(-NODE_W / 2, -NODE_H / 2, NODE_W, NODE_H))
                else:
                    where = scene.place_of(node_id)
                    if where is None:
                        continue
                    rect = QRectF(where[0] - NODE_W / 2, where[1] - NODE_H / 2, NODE_W, NODE_H)
            else:
                continue
            if rect not in places:
                places.append(rect)
                if len(places) >= most:
                    break
        return places

    def item_at_event(self, index: int) -> QGraphicsItem | None:
        """The shown node event ``index`` is about: the grad_fn node a backward step runs, or the
        node an op made (its output tensor, else its grad_fn); the shut box holding it, if one does."""
        scene = self.scene
        hidden_by = scene.boxes._hidden_by
        for node_id in self.nodes_of_event(index):
            item = scene.node_items.get(node_id)
            if item is None and node_id in self.visible and node_id not in hidden_by:
                item = scene.item_for(node_id)  # out of the view's region: made now
            if item is not None and item.isVisible():
                return item
            if node_id in hidden_by:
                return hidden_by[node_id]
        return None
