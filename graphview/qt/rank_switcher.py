"""The rank switcher: a trace of one process of a distributed job names the job's other ranks.

Shown in the status bar while a rank's trace is open (``run.rank0.gvtrace``, ``run.rank1.gvtrace``,
...); picking another rank opens that rank's trace in the window.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget


class RankSwitcher(QWidget):
    """``rank [1 of 2 ▾]``; hidden unless the open trace is one rank's of several."""

    sigOpenRequested = Signal(str)  # the trace of the rank picked

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 0, 6, 0)
        self.label = QLabel("rank")
        self.combo = QComboBox()
        self.combo.setToolTip("this trace is one process of a distributed job: open another rank's trace")
        layout.addWidget(self.label)
        layout.addWidget(self.combo)
        self.combo.activated.connect(self._on_activated)
        self.hide()

    def show_ranks(self, ranks: dict[int, str], current: int | None, world: int | None = None) -> None:
        """``ranks``: {rank: trace path} of the job; ``current``: the rank shown now; ``world``: how
        many processes the job had (default: as many as there are traces)."""
        self.combo.clear()
        if current is None:
            self.hide()
            return
        ranks = dict(ranks)
        world = world or max(len(ranks), (max(ranks) + 1) if ranks else 0, current + 1)
        for rank, path in sorted(ranks.items()):
            self.combo.addItem(f"{rank} of {world}", path)
            if rank == current:
                self.combo.setCurrentIndex(self.combo.count() - 1)
        if current not in ranks:  # the file was renamed: say which rank it is all the same
            self.combo.addItem(f"{current}", None)
            self.combo.setCurrentIndex(self.combo.count() - 1)
        self.combo.setEnabled(self.combo.count() > 1)
        self.show()

    def ranks(self) -> list[str]:
        return [self.combo.itemText(i) for i in range(self.combo.count())]

    def pick(self, rank: int) -> None:
        """Open the trace of ``rank`` (as choosing it in the list does)."""
        for i in range(self.combo.count()):
            if self.combo.itemText(i).split(" ")[0] == str(rank):
                self.combo.setCurrentIndex(i)
                self._on_activated(i)
                return

    def _on_activated(self, index: int) -> None:
        path = self.combo.itemData(index)
        if path:
            self.sigOpenRequested.emit(path)
