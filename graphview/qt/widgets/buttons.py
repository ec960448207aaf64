"""A dialog's buttons as words alone.

Qt's Fusion style puts the desktop's icon theme on a ``QDialogButtonBox``'s standard buttons (an
✕ on Close, a disk on Save). Those icons are drawn for a light desktop: black, and unreadable on
graphview's dark theme. graphview's buttons say what they do in words, and show no icon."""

from __future__ import annotations

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QDialogButtonBox


def words_only(buttons: QDialogButtonBox) -> QDialogButtonBox:
    """``buttons`` with no icon on any of its buttons (returned, to build it in one expression)."""
    for button in buttons.buttons():
        button.setIcon(QIcon())
    return buttons
