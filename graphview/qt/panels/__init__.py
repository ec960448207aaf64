"""The panels around the canvas, one module each.

Every panel that follows the timeline implements the :class:`graphview.qt.session.SessionView`
protocol (``set_run``, ``set_cursor``) and is attached to the window's session with one line.
"""

from __future__ import annotations

from graphview.qt.panels.code import CodeView
from graphview.qt.panels.console import Console
from graphview.qt.panels.diagnostics import DiagnosticsPanel
from graphview.qt.panels.inspector import Inspector, histogram_image
from graphview.qt.panels.ledger import GradLedger
from graphview.qt.panels.memory import MemoryChart
from graphview.qt.panels.toggles import TogglesPanel

__all__ = ["CodeView", "Console", "DiagnosticsPanel", "GradLedger", "Inspector", "MemoryChart", "TogglesPanel",
           "histogram_image"]
