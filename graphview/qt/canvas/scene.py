"""GraphScene: the items of one run's drawing, shown at the timeline's cursor."""

from __future__ import annotations

import time

from PySide6.QtCore import QPointF, QRectF, Signal
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene

from graphview.core.drawing import Drawing
from graphview.core.run import Run
from graphview.qt.canvas.edges import EdgeItem, LabeledEdgeItem
from graphview.qt.canvas.groups import GroupItem
from graphview.qt.canvas.module_boxes import ModuleBoxes
from graphview.qt.canvas.nodes import NodeItem
from graphview.qt.canvas.pulse import PulseItem
from graphview.qt.canvas.style import NODE_H, NODE_W, colors
from graphview.qt.formatting import short_value


class GraphScene(QGraphicsScene):
    """Holds the items of one run's drawing and shows them at a cursor."""

    sigNodeSelected = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.run: Run | None = None
        self.drawing: Drawing | None = None
        self.node_items: dict[str, NodeItem] = {}
        self.edge_items: list[EdgeItem] = []
        self._edges_into: dict[str, list[EdgeItem]] = {}
        self._waiting: list[str] = []
        self.boxes = ModuleBoxes(self)  # module boxes, which are shut, and the layout that follows
        self.live = False  # a runner is streaming into this scene
        self._groups_at = 0.0
        self._complete = False  # every item has been brought to the cursor once
        self._fresh: set[str] = set()  # items created since the last cursor move
        self._visible: set[str] = set()  # node ids shown at the cursor (module boxes look only at these)
        self._edges_from: dict[str, list] = {}
        self._tensors_of_op: dict[int, list[str]] = {}  # grad_fn vid -> tensor items it made
        self.cursor = -1
        self.setBackgroundBrush(colors().q("background"))
        self.selectionChanged.connect(self._on_selection)
        from graphview.qt.theme import changes  # here: the theme module imports the canvas's colours

        changes().changed.connect(self.apply_theme)

    def apply_theme(self, theme=None) -> None:
        """The theme changed: the background and the edges' pens take its colours; the rest repaints."""
        self.setBackgroundBrush(colors().q("background"))
        for edge in self.edge_items:
            edge.apply_theme()
        self.update()

    @property
    def groups(self) -> dict[str, GroupItem]:
        """Module box key (its path, ``path#2`` for a second call) -> its item."""
        return self.boxes.groups

    @property
    def collapsed(self) -> set[str]:
        """Keys of the shut module boxes."""
        return self.boxes.collapsed

    def set_run(self, run: Run) -> None:
        self.boxes.reset()
        self.clear()
        self.node_items.clear()
        self.edge_items.clear()
        self._edges_into.clear()
        self._waiting = []
        self._complete = False
        self._fresh = set()
        self._visible = set()
        self._edges_from = {}
        self._tensors_of_op = {}
        self.run = run
        self.drawing = Drawing(run)
        self.cursor = -1
        self.grow()

    def grow(self, budget: int | None = None) -> bool:
        """Add items for what the run gained since the last call (positions never change).

        With ``budget``, create at most that many items now (the GUI thread stays responsive
        while a big graph streams in); returns True when items are still waiting.
        """
        if self.drawing is None:
            return False
        self._waiting.extend(self.drawing.update(final=self.run is not None and self.run.end is not None))
        if not self.live or time.monotonic() - self._groups_at >= 0.5 or self.boxes.collapsed:
            self.boxes.refresh()  # streaming: boxes catch up twice a second
        layout = self.boxes.layout
        made = taken = 0
        unplaced = []
        waiting = self._waiting
        while taken < len(waiting) and (budget is None or made < budget):
            node_id = waiting[taken]
            taken += 1
            node = self.drawing.nodes[node_id]
            if not node.placed:  # a leaf still waiting for its first user: no position yet
                unplaced.append(node_id)
                continue
            item = NodeItem(node)
            where = layout.position(node_id) if layout is not None else None
            if where is not None:
                item.setPos(*where)
            self._show(item, node.born <= self.cursor)
            self.node_items[node_id] = item
            self._fresh.add(node_id)
            tnode = self.drawing.run.tensor_nodes.get(node_id)
            if tnode is not None and tnode.grad_fn is not None:
                self._tensors_of_op.setdefault(tnode.grad_fn, []).append(node_id)
            made += 1
        self._waiting = unplaced + waiting[taken:]
        for edge in self.drawing.edges[len(self.edge_items):]:
            if edge.source not in self.node_items or edge.target not in self.node_items:
                break  # edges come in order; the rest wait for their nodes
            source, target = self.node_items.get(edge.source), self.node_items.get(edge.target)
            half = NODE_W / 2 + 12
            clear = (layout.path_clear(edge.source, edge.target, half) if layout is not None
                     else self.drawing.path_clear(source.node, target.node, half))
            item = (LabeledEdgeItem if edge.label else EdgeItem)(edge, source, target, clear=clear)
            self._show(item, edge.born <= self.cursor and source.isVisible() and target.isVisible())
            self.edge_items.append(item)
            self._edges_into.setdefault(edge.target, []).append(item)
            self._edges_from.setdefault(edge.source, []).append(item)
        self.fit_scene_rect()
        return any(self.drawing.nodes[n].placed for n in self._waiting)

    def fit_scene_rect(self) -> None:
        """The scene's rect: every placed node (or laid-out unit, with boxes shut) and a margin."""
        x0, y0, x1, y1 = self.boxes.bounds() or self.drawing.bounds()
        self.setSceneRect(QRectF(x0 - NODE_W, y0 - NODE_H * 2, x1 - x0 + NODE_W * 2, y1 - y0 + NODE_H * 4))

    def set_cursor(self, index: int) -> None:
        """Show the state after event ``index``.

        A move of up to a few thousand events, either way (streaming, stepping, scrubbing),
        only revisits the items the events in between touch; a longer jump, or one with a module
        box collapsed, checks them all.
        """
        previous = self.cursor
        self.cursor = index
        drawing = self.drawing
        if drawing is None:
            return
        incremental = self._complete and previous >= 0 and abs(index - previous) <= 3000 and not self.boxes.collapsed
        if incremental:
            touched = self._touched(min(previous, index), max(previous, index))
            items = [self.node_items[i] for i in touched if i in self.node_items]
        else:
            items = list(self.node_items.values())
        self._fresh.clear()
        for item in items:
            self._update_item(item, index)
        now = time.monotonic()
        if self.live and now - self._groups_at < 0.5 and not self.boxes.collapsed:
            hidden_by = {}  # streaming: module boxes catch up twice a second
        else:
            self._groups_at = now
            hidden_by = self.boxes.update(self._visible, index)
        if incremental and not hidden_by:
            # nothing collapsed: only the edges of the items revisited can change
            edges = {e for item in items for e in self._edges_into.get(item.node.id, []) + self._edges_from.get(item.node.id, [])}
        else:
            edges = self.edge_items
        for edge in edges:
            self._update_edge(edge, index, hidden_by)
        self._complete = True

    def _show(self, item: QGraphicsItem, visible: bool) -> None:
        """Show or hide an item for the cursor. A hidden one also leaves the scene: every step of
        a long training run leaves a destroyed graph behind, and thousands of hidden items in
        the scene's index would slow down every repaint of the whole view."""
        item.setVisible(visible)
        if visible:
            if item.scene() is None:
                self.addItem(item)
        elif item.scene() is not None:
            self.removeItem(item)

    def _update_item(self, item: NodeItem, index: int) -> None:
        drawing = self.drawing
        run = drawing.run
        node = item.node
        visible = drawing.visible(node, index)
        self._show(item, visible)
        if not visible:
            self._visible.discard(node.id)
            return
        self._visible.add(node.id)
        if node.kind in ("op", "accumulate"):
            state = drawing.op_state(node.ref, index)
            item.set_state(state, node.kind, drawing.saved_bytes(node.ref, index), None)
            return
        kind = "output" if node.kind == "intermediate" and drawing.is_output(node.ref, index) else node.kind
        name = run.tensor_name(node.ref)
        if name and not node.title.startswith(name):
            node.title = name + (node.title[node.title.index(" ("):] if " (v" in node.title else "")
            item.update()
        entry = run.grad_at(node.ref, index)
        item.set_value(run.value_at(node.ref, index))
        grad = short_value(entry.value) if entry is not None and entry.value is not None else None
        state = "error" if run.errors and node.ref in drawing.failed_roots(index) else "live"
        item.set_state(state, kind, 0, grad)

    def _update_edge(self, edge: "EdgeItem", index: int, hidden_by: dict) -> None:
        source_group = hidden_by.get(edge.source.node.id)
        target_group = hidden_by.get(edge.target.node.id)
        visible = (edge.edge.born <= index and (edge.source.isVisible() or source_group is not None)
                   and (edge.target.isVisible() or target_group is not None)
                   and not (source_group is not None and source_group is target_group))
        self._show(edge, visible)
        if not visible:
            return
        self.route_edge(edge, hidden_by)
        edge.set_freed(not {"freed", "unreachable"}.isdisjoint((edge.target.state, edge.source.state)))

    def route_edge(self, edge: "EdgeItem", hidden_by: dict, moving: bool = False) -> None:
        """Route an edge between its nodes, or to the edge of the shut box that hides one
        (``moving``: its nodes are gliding, route it again from where they are now)."""
        source_group = hidden_by.get(edge.source.node.id)
        target_group = hidden_by.get(edge.target.node.id)
        if source_group is not None or target_group is not None:
            start = source_group.anchor_out() if source_group else edge.source.pos() + QPointF(0, NODE_H / 2)
            end = target_group.anchor_in() if target_group else edge.target.pos() - QPointF(0, NODE_H / 2 + 2)
            edge.route(start, end)
            edge.rerouted = True
        elif moving:
            edge.rerouted = False
            edge.route_between_nodes()
        else:
            edge.default_route()

    def item_at_event(self, index: int) -> QGraphicsItem | None:
        """The shown node event ``index`` is about: the grad_fn node a backward step runs, or the
        node an op made (its output tensor, else its grad_fn); the shut box holding it, if one does."""
        run = self.run
        if run is None or not 0 <= index < len(run.events):
            return None
        ev = run.events[index]
        candidates: list[str] = []
        if ev.get("vid") is not None:
            candidates.append(f"op{ev['vid']}")
        for tid, _ in ev.get("outputs") or ():
            candidates.extend(n.id for n in run._tensor_nodes_of.get(tid, ()))
        if ev.get("grad_fn") is not None:
            candidates.append(f"op{ev['grad_fn']}")
        if ev.get("tid") is not None:
            candidates.extend(n.id for n in run._tensor_nodes_of.get(ev["tid"], ()))
        hidden_by = self.boxes._hidden_by
        for node_id in candidates:
            item = self.node_items.get(node_id)
            if item is not None and item.isVisible():
                return item
            if node_id in hidden_by:
                return hidden_by[node_id]
        return None

    def _touched(self, previous: int, index: int) -> set[str]:
        """Ids of the items whose look can differ between cursor positions ``previous`` < ``index``."""
        run = self.drawing.run
        events = run.events
        touched: set[str] = set(self._fresh)

        def op(vid):
            if vid is not None:
                touched.add(f"op{vid}")
                touched.update(self._tensors_of_op.get(vid, ()))

        def tensor(tid):
            if tid is not None:
                touched.update(n.id for n in run._tensor_nodes_of.get(tid, ()))

        ends = False
        for i in range(max(previous, 0), min(index, len(events) - 1) + 1):
            ev = events[i]
            kind = ev.get("ev")
            if kind in ("node_dead", "step_end"):
                ends = True  # a derived no-grad tensor goes with what it feeds, or its step
            if kind in ("bw_node", "bw_node_done", "node", "node_dead", "error"):
                op(ev.get("vid"))
            if kind == "error" and ev.get("bid") in run.backwards:
                for tid in run.backwards[ev["bid"]].roots_tensors:
                    tensor(tid)
            elif kind == "accumulate":
                op(ev.get("vid"))
                tensor(ev.get("tid"))
            elif kind in ("tensor", "name", "value", "tensor_grad"):
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
            touched.update(self.drawing.derived_changing(previous, index))
        return touched

    def module_of(self, item: NodeItem) -> str | None:
        return item.node.module

    def shown_at_cursor(self, node_id: str) -> bool:
        """Whether a node exists at the cursor, drawn or inside a shut module box."""
        return node_id in self._visible

    def reveal(self, node_ids) -> bool:
        """Open the shut module boxes hiding any of ``node_ids``; True when any opened."""
        return self.boxes.reveal(node_ids)

    def set_collapsed(self, key: str, collapsed: bool, animate: bool = True) -> None:
        """Shut or open the module box ``key`` (its path, ``path#2`` for a second call)."""
        self.boxes.set_collapsed(key, collapsed, animate)

    def edges_into(self, node_id: str) -> list[EdgeItem]:
        return self._edges_into.get(node_id, [])

    def pulse(self, node_id: str, grads: list, duration_ms: int) -> None:
        """Animate the gradients a node sends backwards along its incoming edges."""
        for edge in self.edges_into(node_id):
            if edge.isVisible() and edge.edge.kind in ("flow", "accumulate"):
                text = ""
                if grads:
                    text = grads[0] if isinstance(grads[0], str) else ""
                self.addItem(PulseItem(edge, text, duration_ms))

    def select_node(self, node_id: str) -> None:
        item = self.node_items.get(node_id)
        if item is None:
            return
        self.reveal([node_id])
        self.clearSelection()
        item.setSelected(True)

    def _on_selection(self) -> None:
        selected = [i for i in self.selectedItems() if isinstance(i, NodeItem)]
        if selected:
            self.sigNodeSelected.emit(selected[0].node.id)
        else:
            self.sigNodeSelected.emit("")  # a click on empty canvas: nothing is selected
