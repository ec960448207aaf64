"""Small widgets the window is built of, not tied to a run: FlowLayout, Legend, ElidingStatusBar, fonts."""

from __future__ import annotations

from graphview.qt.widgets.flow_layout import FlowLayout
from graphview.qt.widgets.legend import Legend
from graphview.qt.widgets.status_bar import ElidingStatusBar

__all__ = ["ElidingStatusBar", "FlowLayout", "Legend"]
