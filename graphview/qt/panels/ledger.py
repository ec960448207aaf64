"""The gradient ledger: every change of every ``.grad``, up to the cursor.

The changes still to come (and the count of older ones) are in the theme's muted colour and in
italics: in its disabled colour they stood 2.5:1 from the light theme's white (3.6:1 on the dark
theme), grey words a user had to squint at to read what backward is about to do."""

from __future__ import annotations

from bisect import bisect_right

from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem

from graphview.core.run import Run
from graphview.qt import theme as themes
from graphview.qt.formatting import capped
from graphview.qt.widgets.wrapping import wrap_lines

#: changes listed per tensor: the latest ones up to the cursor and the next few after it (a long
#: run's older changes are counted in one row, not listed: each row reads its values from the run)
SHOWN_BEFORE = 40
SHOWN_AFTER = 8


def aside(item: QTreeWidgetItem, *columns: int) -> None:
    """``item`` told apart from the changes reached (a change to come, older changes counted):
    muted and in italics, readable on either theme."""
    for column in columns:
        item.setForeground(column, QColor(themes.current().muted))
        font = QFont(item.font(column))
        font.setItalic(True)
        item.setFont(column, font)


class GradLedger(QTreeWidget):
    """Per leaf, every change of its ``.grad``: +(-8) → -8, +(-8) → -16, zero_grad → None."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setHeaderLabels(["tensor / change", ".grad after"])
        # a change and its value wrap within the tab's width (a 310 px column at 1366x768), never sideways
        wrap_lines(self, {1: (0.42, 90, 420)})
        self.setRootIsDecorated(True)
        self._run: Run | None = None
        self._pending: tuple | None = None  # (run, index) to show once this tab is in front
        self._index = -1
        themes.changes().changed.connect(self.apply_theme)

    def apply_theme(self, theme=None) -> None:
        """The theme changed: the changes still to come greyed in its colours."""
        self._shown_key = None
        if self._run is not None and self._index >= 0:
            self.show_run(self._run, self._index)

    def set_run(self, run: Run) -> None:
        """A new run: the last run's changes go (this run's come with the cursor)."""
        self._run = run
        self._pending = None
        self._shown_key = None
        self.clear()

    def set_cursor(self, index: int) -> None:
        self.show_run(self._run, index)

    def show_run(self, run: Run, index: int) -> None:
        if not self.isVisible():  # another tab is in front: rebuild when this one is shown
            self._pending = (run, index)
            return
        self._pending = None
        self._index = index
        reached = {tid: bisect_right(entries, index, key=lambda e: e.index) for tid, entries in run.grads.items()}
        key = (id(run), sum(reached.values()), sum(len(entries) for entries in run.grads.values()))
        if key == getattr(self, "_shown_key", None):
            return  # nothing to redraw
        self._shown_key = key
        self.clear()
        for tid, entries in run.grads.items():
            name = run.tensor_name(tid) or f"tensor {tid}"
            done = reached[tid]
            top = QTreeWidgetItem([name, capped(entries[done - 1].value) if done else "None"])
            self.addTopLevelItem(top)
            first = max(0, done - SHOWN_BEFORE)
            if first:
                earlier = QTreeWidgetItem([f"… {first} earlier changes", ""])
                aside(earlier, 0)
                top.addChild(earlier)
            for e in entries[first:done + SHOWN_AFTER]:
                step = f"step {e.step}: " if e.step is not None else (f"backward {e.bid}: " if e.bid else "")
                if e.how in ("accumulate", "retained"):
                    what = (f"{step}.grad += {capped(e.increment, 4)}" if e.increment is not None
                            else f"{step}.grad kept (retain_grad)")
                elif e.how == "in_place":  # (clip_grad_norm_'s _foreach_mul_, GradScaler's unscale)
                    what = f"{step}changed in place by {run.events[e.index].get('source') or 'an op'}"
                else:
                    what = f"{step}{e.how.replace('_', ' ')}"
                child = QTreeWidgetItem([what, capped(e.value)])
                if e.index > index:
                    aside(child, 0, 1)
                top.addChild(child)
            top.setExpanded(True)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._pending is not None:
            self.show_run(*self._pending)
