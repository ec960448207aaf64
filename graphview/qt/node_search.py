"""Finding nodes on the canvas: the search field's text (in a node's name, its op, its module, or
a tied weight's other names), and a line clicked in the code pane. What is found is selected, the
shut module boxes hiding it are opened, and the view moves to it."""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

from PySide6.QtWidgets import QStatusBar

from graphview.core.drawing import DrawNode
from graphview.qt.canvas import GraphScene, GraphView
from graphview.qt.session import Session


def matching_nodes(text: str, ids: Iterable[str], nodes: Mapping[str, DrawNode],
                   aliases: Mapping[int, Iterable[str]]) -> list[str]:
    """The nodes of ``ids`` whose title, subtitle or module holds ``text`` (lower case), or, a
    tensor, one of its other names in ``aliases`` (a tied weight's), in the order of ``ids``."""
    def holds(n: str) -> bool:
        node = nodes[n]
        return (text in node.title.lower() or text in node.subtitle.lower() or text in (node.module or "").lower()
                or not n.startswith("op") and any(text in a.lower() for a in aliases.get(node.ref, ())))

    return [n for n in ids if holds(n)]


class NodeSearch:
    """Search and line clicks on ``scene`` as ``view`` shows it, for the run of ``session``;
    ``status_bar()`` says the number of hits, until the cursor moves or the search changes
    (:meth:`forget`)."""

    def __init__(self, session: Session, scene: GraphScene, view: GraphView,
                 status_bar: Callable[[], QStatusBar]) -> None:
        self._session = session
        self._scene = scene
        self._view = view
        self._status_bar = status_bar
        self._said: tuple[str, int] | None = None  # the count in the status bar, and the cursor it counted at
        session.cursor_changed.connect(self._on_cursor)

    def find(self, text: str) -> None:
        """Select the nodes shown at the cursor that match ``text`` and centre on the first."""
        text = text.strip().lower()
        if not text:
            return
        scene, run = self._scene, self._session.run
        nodes = scene.drawing.nodes if scene.drawing is not None else {}
        aliases = run.aliases if run is not None else {}  # (a tied weight's other names)
        shown = [n for n in scene.placed_ids() if scene.shown_at_cursor(n)]
        matches = self._select(matching_nodes(text, shown, nodes, aliases))
        if matches:
            self._view.center_on_node(matches[0].node.id)
            count = "1 node matches" if len(matches) == 1 else f"{len(matches)} nodes match"
            self._say(f"{count} '{text}'")
        else:
            self._say(f"no node matches '{text}'")

    def _say(self, message: str) -> None:
        self._status_bar().showMessage(message, 5000)
        self._said = (message, self._session.cursor)

    def forget(self) -> None:
        """The count of the last search leaves the status bar (if it is still there): it counted
        the nodes shown at a cursor the view has left, or a search the field no longer holds (it
        stayed its 5 s while the user stepped on)."""
        said, self._said = self._said, None
        if said is not None and self._status_bar().currentMessage() == said[0]:
            self._status_bar().clearMessage()

    def _on_cursor(self, index: int) -> None:
        if self._said is not None and index != self._said[1]:  # (a live run grows under a cursor that stays)
            self.forget()

    def select_line(self, line: int) -> None:
        """A line of the code pane was clicked: select the nodes it made, shown at the cursor."""
        scene = self._scene
        ids = [n for n in scene.placed_ids() if scene.drawing.nodes[n].line == line and scene.shown_at_cursor(n)]
        items = self._select(ids)
        if items:
            self._view.centerOn(items[0])

    def _select(self, ids: list[str]) -> list:
        """Open the shut module boxes that hide ``ids``, and select their items (the selection
        before goes)."""
        scene = self._scene
        scene.reveal(ids)
        items = [item for item in map(scene.item_for, ids) if item is not None]
        scene.clearSelection()
        for item in items:
            item.setSelected(True)
        return items
