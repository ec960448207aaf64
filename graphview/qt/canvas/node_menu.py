"""The canvas's context menu: on a node, detach it (its op, its module's output, its line), check
its gradient against finite differences, checkpoint its module; on a module box, checkpoint it.

The menu says what to do through the canvas's signals (``sigDetachRequested``,
``sigGradcheckRequested``, ``sigCheckpointRequested``): the window re-runs with those options.
"""

from __future__ import annotations

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QMenu, QWidget

from graphview.core.run import Run
from graphview.core.whatif import RECOMPUTE_MODULE
from graphview.qt.canvas.groups import GroupItem
from graphview.qt.canvas.nodes import NodeItem


def add_checkpoint_actions(menu: QMenu, path: str, checkpoint: SignalInstance) -> None:
    """Checkpoint the module of ``path`` (and, for a numbered layer, every layer beside it)."""
    if not path or path.startswith(RECOMPUTE_MODULE):
        return
    menu.addAction(f"Checkpoint this module (re-run): {path}", lambda: checkpoint.emit(path))
    parent, _, last = path.rpartition(".")
    if parent and last.isdigit():
        pattern = f"{parent}.*"
        menu.addAction(f"Checkpoint every {pattern} (re-run)", lambda: checkpoint.emit(pattern))


def item_menu(view: QWidget, item, run: Run | None) -> QMenu | None:
    """The menu of ``item`` under the mouse on ``view`` (the canvas, whose signals the menu
    emits), ``run`` the run it shows; None where it has none."""
    if isinstance(item, GroupItem) and not item.box.setup:  # (a setup card is no module to checkpoint)
        menu = QMenu(view)
        add_checkpoint_actions(menu, item.box.path, view.sigCheckpointRequested)
    elif isinstance(item, NodeItem):
        menu = QMenu(view)
        _add_node_actions(menu, view, item.node, run)
    else:
        return None
    return None if menu.isEmpty() else menu


def _add_node_actions(menu: QMenu, view: QWidget, node, run: Run | None) -> None:
    specs = []
    if node.kind == "op" and run is not None:
        oid = next((op["oid"] for _, op in run.ops if op.get("grad_fn") == node.ref), None)
        if oid is not None:
            specs.append((f"Detach here (op {oid}: {node.title})", f"op:{oid}"))
    if node.module:
        specs.append((f"Detach output of module {node.module}", node.module))
    if node.line is not None:
        specs.append((f"Detach every result of line {node.line}", f"line:{node.line}"))
    for text, spec in specs:
        menu.addAction(text, lambda s=spec: view.sigDetachRequested.emit(s))
    if node.kind in ("param", "input_grad") and run is not None and run.tensor_name(node.ref):
        name = run.tensor_name(node.ref)
        menu.addAction(f"Check the gradient of {name} (finite differences, float64)",
                       lambda n=name: view.sigGradcheckRequested.emit(n))
    if node.module:
        add_checkpoint_actions(menu, node.module, view.sigCheckpointRequested)
