"""Fonts shared by the panels."""

from __future__ import annotations

from PySide6.QtGui import QFont

MONO = QFont("DejaVu Sans Mono", 10)
