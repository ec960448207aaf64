"""The canvas's sizes and colours: node boxes, fills and borders per node kind."""

from __future__ import annotations

from PySide6.QtGui import QColor

NODE_W, NODE_H = 172.0, 48.0
FILL = {
    "param": QColor("#b7e4b9"),
    "input_grad": QColor("#ffe08a"),
    "input": QColor("#e3e6ea"),
    "intermediate": QColor("#ffffff"),
    "output": QColor("#f7b4ae"),
    "op": QColor("#c9dcf5"),
    "accumulate": QColor("#dccff2"),
    "detached": QColor("#eeeeee"),
}
BORDER = {
    "param": QColor("#2e7d32"), "input_grad": QColor("#b8860b"), "input": QColor("#8a8f96"),
    "intermediate": QColor("#6b7280"), "output": QColor("#c62828"), "op": QColor("#1f5fa8"),
    "accumulate": QColor("#6a4bb0"), "detached": QColor("#9e9e9e"),
}
RUNNING = QColor("#ff8c00")
FREED_FILL = QColor("#f1f1f1")
FREED_TEXT = QColor("#a0a0a0")
TENSOR_KINDS = ("param", "input_grad", "input", "intermediate", "output", "detached")
