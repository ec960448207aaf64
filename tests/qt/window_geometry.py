"""Helpers the window-layout tests share: let Qt settle, and where a widget lies in another."""

from __future__ import annotations

from PySide6.QtCore import QRect


def settle(qtbot, rounds: int = 8) -> None:
    """Let Qt lay out and paint: ``rounds`` short waits."""
    for _ in range(rounds):
        qtbot.wait(10)


def rect_in(ancestor, widget) -> QRect:
    """``widget``'s rectangle in ``ancestor``'s coordinates."""
    return QRect(widget.mapTo(ancestor, widget.rect().topLeft()), widget.size())
