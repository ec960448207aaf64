"""Small widgets the window is built of, not tied to a run: FlowLayout, Legend, fonts."""

from __future__ import annotations

from graphview.qt.widgets.flow_layout import FlowLayout
from graphview.qt.widgets.legend import Legend

__all__ = ["FlowLayout", "Legend"]
