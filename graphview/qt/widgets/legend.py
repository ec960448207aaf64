"""Legend: the canvas's node kinds and states, a swatch and its words each."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QWidget

from graphview.core.drawing import NODE_KINDS
from graphview.qt.canvas.style import BORDER, FILL
from graphview.qt.widgets.flow_layout import FlowLayout


class Legend(QWidget):
    """What the canvas's fills, borders and badges mean, in a line that wraps with the window's width."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        layout = FlowLayout(self, spacing=12)
        layout.setContentsMargins(6, 2, 6, 2)
        cells = []
        for kind, text in NODE_KINDS.items():
            swatch = QLabel()
            swatch.setFixedSize(14, 14)
            radius = 7 if kind not in ("op", "accumulate") else 2
            swatch.setStyleSheet(f"background:{FILL[kind].name()}; border:1.5px solid {BORDER[kind].name()};"
                                 f"border-radius:{radius}px")
            cells.append((swatch, text))
        running = QLabel()
        running.setFixedSize(14, 14)
        running.setStyleSheet("background:#ffd59e; border:2px solid #ff8c00; border-radius:2px")
        cells.append((running, "running now (backward)"))
        failed = QLabel()
        failed.setFixedSize(14, 14)
        failed.setStyleSheet("background:#f7d4d4; border:2px solid #c62828; border-radius:2px")
        cells.append((failed, "where the error happened"))
        freed = QLabel()
        freed.setFixedSize(14, 14)
        freed.setStyleSheet("background:#f1f1f1; border:1.5px dashed #bdbdbd; border-radius:2px")
        cells.append((freed, "freed by backward"))
        unreachable = QLabel()
        unreachable.setFixedSize(14, 14)
        unreachable.setStyleSheet("background:rgba(219,234,254,0.4); border:1.5px solid rgba(37,99,235,0.4);"
                                  "border-radius:2px")
        unreachable.setToolTip("alive, but on no path from the loss: backward will not run it")
        cells.append((unreachable, "kept alive, not on the loss's path"))
        badge = QLabel("saved")
        badge.setStyleSheet("background:#fff1c4; border:1px solid #b8860b; border-radius:6px; padding:0 3px;"
                            "font-size:9px")
        cells.append((badge, "bytes held for backward"))
        for swatch, text in cells:  # a swatch and its words stay together when the legend wraps
            cell = QWidget()
            pair = QHBoxLayout(cell)
            pair.setContentsMargins(0, 0, 0, 0)
            pair.setSpacing(4)
            pair.addWidget(swatch)
            label = QLabel(text)
            label.setStyleSheet("color:#374151")
            pair.addWidget(label)
            layout.addWidget(cell)
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Preferred)
