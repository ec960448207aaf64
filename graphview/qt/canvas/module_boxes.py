"""ModuleBoxes: the canvas's module boxes, which of them are shut, and the layout that follows.

The boxes come from :func:`graphview.core.hierarchy.module_boxes` (every node the drawing placed,
so they do not change as the cursor moves). Shutting or opening a box lays the graph out again
(:class:`graphview.core.hierarchy.Layout`): nodes glide to their new places, and the view keeps
the box the user clicked where it was on screen. A big graph opens with its hierarchy shut down
to the deepest level that reads at fit (:meth:`ModuleBoxes.open_to_fit`).

This QObject (a child of the scene) is what the scene, the view and the exports call; the work is
in three plain parts: :class:`~graphview.qt.canvas.box_state.BoxState` (the boxes, the shut ones,
the layout, fit-to-depth, the thread that finds a big drawing's boxes),
:class:`~graphview.qt.canvas.box_items.BoxItems` (each box's item at the cursor, its geometry and
its label) and :class:`~graphview.qt.canvas.glide.Glide` (the glide). Every Qt signal and timer is
connected to this object, never to a part, so that none fires once the scene is gone.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject, QPointF, Signal

from graphview.core.hierarchy import Layout, ModuleBox
from graphview.qt.canvas.box_items import BoxItems
from graphview.qt.canvas.box_state import BoxState
from graphview.qt.canvas.glide import Glide
from graphview.qt.canvas.groups import GroupItem

#: above this many moving nodes the new layout is shown at once
GLIDE_LIMIT = 3000


class ModuleBoxes(QObject):
    """The module boxes of one :class:`~graphview.qt.canvas.scene.GraphScene`."""

    #: a box is about to open or shut: where its anchor (see ``BoxState.anchor``) is (scene coordinates)
    sigRelaying = Signal(QPointF)
    #: a box was opened or shut: its key, its anchor before and after (scene coordinates)
    sigRelaid = Signal(str, QPointF, QPointF)
    #: the boxes of a big drawing came (from a thread) and were shut to fit the screen
    sigShutToFit = Signal()

    def __init__(self, scene) -> None:
        super().__init__(scene)  # (its timers and thread's results are dropped with the scene)
        self.scene = scene
        self.state = BoxState(scene, self, settle=self.settle, relaid=self._relaid,
                              boxes_changed=self._boxes_changed, shut_to_fit_done=self._shut_to_fit_done)
        self.items = BoxItems(scene, self.state, on_toggle=self.toggle)
        self.glide = Glide(scene, self, hidden_by=lambda: self.items.hidden_by, on_finished=self.settle)
        self._last_born = (None, -1, -1)  # (the drawing, its nodes, the latest birth among them)
        self._end_keep: tuple = (None, None)  # ((drawing, its nodes, graph gone at), the nodes kept)

    # ------------------------------------------------------------------ what the parts hold
    @property
    def boxes(self) -> list[ModuleBox]:
        return self.state.boxes

    @property
    def keyed(self) -> dict[str, ModuleBox]:
        return self.state.keyed

    @property
    def collapsed(self) -> set[str]:
        return self.state.collapsed

    @property
    def layout(self) -> Layout | None:
        return self.state.layout

    @property
    def took(self) -> float:
        """How long finding the boxes in turns of the event loop took, last time (seconds)."""
        return self.state.took

    @property
    def pending(self) -> bool:
        """Boxes are being found (a growing big drawing's in turns of the event loop, a finished
        one's shut to fit on a thread)."""
        return self.state.finding

    @property
    def groups(self) -> dict[str, GroupItem]:
        return self.items.groups

    def named_between(self, top: float, bottom: float) -> list[GroupItem]:
        """The open boxes shown whose names sit between ``top`` and ``bottom`` (scene y)."""
        return self.items.named_between(top, bottom)

    @property
    def _hidden_by(self) -> dict[str, GroupItem]:
        """Node id -> the shut box that hides it, at the cursor."""
        return self.items.hidden_by

    @property
    def gliding(self) -> bool:
        return self.glide.gliding

    # ------------------------------------------------------------------ a run
    def set_compared(self, compared: dict[str, tuple[int, int]]) -> None:
        """Each box shows the activations held for it at backward in both runs (empty: no comparison)."""
        self.items.set_compared(compared)

    def reset(self) -> None:
        """A new run: no boxes yet, none shut (the scene removed the old items)."""
        self.settle()
        self.state.reset()
        self.items.reset()

    def refresh(self, in_turns: bool = True) -> None:
        """Find the boxes again when the drawing placed more nodes (see ``BoxState.refresh``)."""
        self.state.refresh(in_turns)

    def apply_layout(self, layout: Layout | None = None) -> dict[str, QPointF]:
        """Put every node where the current layout has it; returns the old positions of those that moved."""
        return self.state.apply_layout(layout)

    def bounds(self) -> tuple[float, float, float, float] | None:
        """Left, top, right, bottom of the laid-out units' centres (None: the drawing's own)."""
        return self.state.bounds()

    def update(self, visible: set[str], index: int) -> dict[str, GroupItem]:
        """Show each box around its nodes shown at ``index``; returns node id -> the shut box that hides it."""
        return self.items.update(visible, index)

    # ------------------------------------------------------------------ opening and shutting
    def toggle(self, key: str) -> None:
        """Shut an open box or open a shut one, and lay the graph out again, gliding; a thin stack
        of repeated blocks shows its first block apart (the next one to open)."""
        layout = self.state.layout
        if layout is not None and key in layout.runs:
            self.settle()
            self.state.focus_on(layout.runs[key])
            self._relaid(None, None, animate=True)
            return
        self.set_collapsed(key, key not in self.state.collapsed)

    def set_collapsed(self, key: str, collapsed: bool, animate: bool = True) -> None:
        state = self.state
        if collapsed == (key in state.collapsed):
            return
        self.settle()
        before = state.anchor(key)
        if before is not None:
            self.sigRelaying.emit(before)
        if collapsed:
            state.collapsed.add(key)
        else:
            state.collapsed.discard(key)
        self._relaid(key, before, animate)

    def level(self) -> int:
        """How deep the hierarchy is open: the level of the outermost shut boxes."""
        return self.state.level()

    def change_level(self, delta: int | None) -> None:
        """Open (``delta`` 1) or shut (-1) the hierarchy one level; None opens every box."""
        self.state.change_level(delta)

    def show_down_to(self, level: int) -> None:
        """Boxes open down to ``level``, deeper ones shut, at once."""
        self.state.show_down_to(level)

    def shut_to_fit(self, rows: int | Callable[[int, int], bool]) -> tuple[int | None, int]:
        """Headless, at once: shut the boxes at the deepest level at which the graph fits ``rows``
        (see ``BoxState.shut_to_fit``); that level and the rows with every box open."""
        return self.state.shut_to_fit(rows)

    def set_all(self, collapsed: set[str]) -> None:
        """Shut exactly the boxes in ``collapsed`` (View > Collapse all / Expand all, the start)."""
        self.state.set_all(collapsed)

    def reveal(self, node_ids) -> bool:
        """Open every shut box that hides one of ``node_ids`` (a search hit, a clicked line, a
        finding), and the shut boxes inside it on the way. Returns True when any opened."""
        return self.state.reveal(node_ids)

    def open_to_fit(self, fits) -> bool:
        """Once per finished run: shut the hierarchy down to the deepest level whose layout
        ``fits(rows, columns)`` on screen. Returns True when it shut any box."""
        return self.state.open_to_fit(fits)

    def settle(self) -> None:
        """End a glide now: every node at its place, every edge routed to it."""
        if self.glide.gliding:
            self.glide.settle()
            # (the boxes drawn while the nodes glided, at a cursor set meanwhile, went round them mid-way)
            self.items.update(self.scene.at_cursor.visible, self.scene.cursor)

    # ------------------------------------------------------------------ a run's end
    def compact_at_run_end(self) -> None:
        """Past a finished run's last graph (nothing alive but leaves, their .grad and what the
        script kept; nothing made after), lay out only the nodes shown, the rows and columns the
        freed graph took dropped (a run's end showed the MLP sample's six leaves 12 rows apart at
        1366x768, model.0's out of view); anywhere else, the drawing's places. Never while a step
        is stepped through: nodes glide once, when the cursor comes to the run's end or leaves it."""
        keep = self._kept_at_run_end()
        if keep == self.state.keep:
            return
        self.glide.settle()  # (the boxes are drawn again next, round the nodes' new places)
        self.state.keep = keep
        self._relaid(None, None, animate=True)

    def _kept_at_run_end(self) -> frozenset[str] | None:
        """The nodes laid out at a finished run's end: every node shown anywhere from the last
        graph's death (or the last birth, if later) to the run's end, worked out once for the run.
        What the script frees after (an input, a .grad reset) is hidden in its place: asked at the
        cursor, each such event gave a new layout and the nodes glided again."""
        scene = self.scene
        run, drawing, index = scene.run, scene.drawing, scene.cursor
        if run is None or drawing is None or run.end is None or scene.live or scene.virtual or index < 0:
            return None
        if self._last_born[:2] != (drawing, len(drawing.nodes)):
            latest = max((n.born for n in drawing.nodes.values()), default=-1)
            self._last_born = (drawing, len(drawing.nodes), latest)
        born = self._last_born[2]
        gone = scene.graph_gone_at() if index >= born else None  # (the same at every such cursor)
        if gone is None:
            return None
        key = (drawing, len(drawing.nodes), gone)
        if self._end_keep[0] != key:
            # nothing is born after ``start`` and a node is shown from its birth to its end: those
            # shown anywhere in [start, the run's end] are those shown at ``start``
            start = max(born, gone)
            self._end_keep = (key, frozenset(n.id for n in drawing.nodes.values() if drawing.visible(n, start)))
        return self._end_keep[1]

    # ------------------------------------------------------------------ called by the parts
    def _relaid(self, key: str | None, before: QPointF | None, animate: bool, layout: Layout | None = None) -> None:
        old = self.state.apply_layout(layout)
        scene = self.scene
        scene._complete = False  # members of the box change visibility: revisit every item
        scene.set_cursor(scene.cursor)
        after = self.state.anchor(key) if key else None
        if before is not None and after is not None:
            self.sigRelaid.emit(key, before, after)
        if animate and 0 < len(old) <= GLIDE_LIMIT:
            self.glide.start(old)

    def _boxes_changed(self, keyed: dict[str, ModuleBox]) -> None:
        self.items.retarget(keyed)

    def _shut_to_fit_done(self) -> None:
        self.sigShutToFit.emit()
