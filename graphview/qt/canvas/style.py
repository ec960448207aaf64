"""The canvas's sizes and colours: node boxes, fills and borders per node kind, edges, module boxes.

Colours come from the active theme (:mod:`graphview.qt.theme` picks light or dark): items read
:func:`colors` when they paint, so a theme switch needs only a repaint. ``LIGHT`` and ``DARK``
are the two sets. The older names ``FILL``, ``BORDER``, ``FREED_FILL``, ``FREED_TEXT`` and
``RUNNING`` still work and follow the active theme (they are updated in place by :func:`use`).
"""

from __future__ import annotations

import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from PySide6.QtGui import QColor

NODE_W, NODE_H = 172.0, 48.0
#: the point sizes of the canvas's text: names, and the smallest any text on the canvas takes
#: (subtitles, badges, box labels, a long name shrunk before it is elided). The view's readable
#: zoom is worked out from the smallest: at it, every text on the canvas is 9 px high or more
NAME_PT = 9.0
SMALLEST_TEXT_PT = 8.0
TENSOR_KINDS = ("param", "input_grad", "input", "intermediate", "output", "detached")


def _colors(table: dict[str, str]) -> dict[str, QColor]:
    return {kind: QColor(value) for kind, value in table.items()}


@dataclass(frozen=True)
class CanvasColors:
    """Every colour the canvas paints with, for one theme (``#rrggbb`` or ``#aarrggbb`` strings)."""

    name: str
    background: str
    fill: dict[str, str]
    border: dict[str, str]
    title: str  # a node's name
    subtitle: str  # its shape, op or value
    running_fill: str
    running_border: str
    running_glow: str
    error_fill: str  # the legend's swatch of a failed node
    error_border: str
    error_glow: str
    selection: str
    selection_fill: str
    freed_fill: str
    freed_border: str
    freed_text: str
    # the legend's swatch of a freed node: its dashed outline, darker than a freed node's border
    # (which reads around a 172x48 box on the canvas, and not around a 14 px square on the window)
    freed_swatch_border: str
    unreachable_fill: str  # the legend's swatch of a node kept alive off the loss's path
    unreachable_border: str
    saved_fill: str
    saved_border: str
    saved_text: str
    grad_fill: str
    grad_border: str
    grad_text: str
    edge: str
    edge_freed: str
    edge_accumulate: str
    edge_label: str
    group_border: str
    group_label: str
    collapsed_fill: str
    collapsed_border: str
    collapsed_text: str
    pulse_fill: str
    pulse_border: str
    pulse_label_fill: str
    pulse_label_border: str
    pulse_label_text: str
    overview_fill: str
    overview_border: str
    overview_mark: str
    overview_mark_fill: str
    message: str  # the note on an empty canvas (a run that failed before any op)
    _q: dict = field(default_factory=dict, compare=False, repr=False)

    def q(self, name: str) -> QColor:
        """The colour ``name`` (a field) as a QColor, made once."""
        color = self._q.get(name)
        if color is None:
            color = self._q[name] = QColor(getattr(self, name))
        return color

    def fill_of(self, kind: str) -> QColor:
        key = "fill:" + kind
        if key not in self._q:
            self._q[key] = QColor(self.fill.get(kind, self.fill["intermediate"]))
        return self._q[key]

    def border_of(self, kind: str) -> QColor:
        key = "border:" + kind
        if key not in self._q:
            self._q[key] = QColor(self.border.get(kind, self.border["intermediate"]))
        return self._q[key]


LIGHT = CanvasColors(
    name="light", background="#fbfbfc",
    fill={"param": "#b7e4b9", "input_grad": "#ffe08a", "input": "#e3e6ea", "intermediate": "#ffffff",
          "output": "#f7b4ae", "op": "#c9dcf5", "accumulate": "#dccff2", "detached": "#eeeeee"},
    border={"param": "#2e7d32", "input_grad": "#b8860b", "input": "#8a8f96", "intermediate": "#6b7280",
            "output": "#c62828", "op": "#1f5fa8", "accumulate": "#6a4bb0", "detached": "#888888"},
    title="#1b1b1b", subtitle="#454b54",
    running_fill="#ffd59e", running_border="#ff8c00", running_glow="#5aff8c00",
    error_fill="#f7d4d4", error_border="#c62828", error_glow="#46c62828",
    selection="#0b57d0", selection_fill="#3c0b57d0",
    freed_fill="#f1f1f1", freed_border="#bdbdbd", freed_text="#a0a0a0", freed_swatch_border="#8c8c8c",
    unreachable_fill="#66dbeafe", unreachable_border="#86a9e8",
    saved_fill="#fff1c4", saved_border="#b8860b", saved_text="#8d6708",
    grad_fill="#e8f5e9", grad_border="#2e7d32", grad_text="#236026",
    edge="#7d8590", edge_freed="#d0d0d0", edge_accumulate="#6a4bb0", edge_label="#6b7280",
    group_border="#96a0af", group_label="#5b6b82",
    collapsed_fill="#e6ecf5", collapsed_border="#5b6b82", collapsed_text="#1f2937",
    pulse_fill="#ff8c00", pulse_border="#c2410c",
    pulse_label_fill="#fff7ed", pulse_label_border="#fdba74", pulse_label_text="#9a3412",
    overview_fill="#e6ffffff", overview_border="#9ca3af", overview_mark="#c62828", overview_mark_fill="#1ec62828",
    message="#7f1d1d",
)

DARK = CanvasColors(
    name="dark", background="#16181d",
    fill={"param": "#1e3a24", "input_grad": "#3d3213", "input": "#2b2f36", "intermediate": "#23262c",
          "output": "#4a2020", "op": "#1b2f4b", "accumulate": "#30284a", "detached": "#27292d"},
    border={"param": "#5cb866", "input_grad": "#d4a72c", "input": "#8b929c", "intermediate": "#8b93a1",
            "output": "#e5675e", "op": "#5f95e0", "accumulate": "#9d84dc", "detached": "#7d8590"},
    title="#eceef1", subtitle="#b9bfc8",
    running_fill="#5c3b0c", running_border="#ff9a1f", running_glow="#5aff9a1f",
    error_fill="#4a2020", error_border="#ef5350", error_glow="#50ef5350",
    selection="#6ea8ff", selection_fill="#386ea8ff",
    freed_fill="#1c1e22", freed_border="#596069", freed_text="#7b818a", freed_swatch_border="#7b818a",
    unreachable_fill="#661e3a5f", unreachable_border="#4f73a6",
    saved_fill="#3d3213", saved_border="#d4a72c", saved_text="#f3d27a",
    grad_fill="#1e3a24", grad_border="#5cb866", grad_text="#a5e0ab",
    edge="#7f8792", edge_freed="#3d4148", edge_accumulate="#9d84dc", edge_label="#a0a7b1",
    group_border="#5d6778", group_label="#9aa7ba",
    collapsed_fill="#232a36", collapsed_border="#7d8da6", collapsed_text="#e3e8ef",
    pulse_fill="#ff8c00", pulse_border="#ffa040",
    pulse_label_fill="#3a2410", pulse_label_border="#9a5a1a", pulse_label_text="#ffd2a6",
    overview_fill="#f016181d", overview_border="#4b5260", overview_mark="#ef5350", overview_mark_fill="#28ef5350",
    message="#fca5a5",
)

_active = [LIGHT]

# the older names, kept for code that imports them: updated in place by use()
FILL = _colors(LIGHT.fill)
BORDER = _colors(LIGHT.border)
RUNNING = QColor(LIGHT.running_border)
FREED_FILL = QColor(LIGHT.freed_fill)
FREED_TEXT = QColor(LIGHT.freed_text)


def colors() -> CanvasColors:
    """The canvas colours of the active theme."""
    return _active[0]


def use(palette: CanvasColors) -> None:
    """Make ``palette`` the canvas's colours (the theme does this; items repaint to show it)."""
    _active[0] = palette
    FILL.update(_colors(palette.fill))
    BORDER.update(_colors(palette.border))
    RUNNING.setRgba(palette.q("running_border").rgba())
    FREED_FILL.setRgba(palette.q("freed_fill").rgba())
    FREED_TEXT.setRgba(palette.q("freed_text").rgba())


@contextmanager
def painted_in(palette: CanvasColors):
    """The canvas's colours ``palette`` for the block (items read them as they paint), then the
    ones it had again."""
    shown = colors()
    use(palette)
    try:
        yield
    finally:
        use(shown)


def overview_colors(palette: CanvasColors) -> CanvasColors:
    """``palette`` as the overview paints the graph with it: each box filled with its border's
    colour, as the picture of a big graph's cells is. A node a few pixels wide shows its fill
    alone, which in the dark theme is a shade off the background (the overview's graph was barely
    visible there: no pixel 40 levels of brightness off it, where the light theme had a few)."""
    found = _OVERVIEW.get(palette.name)
    if found is None or found[0] is not palette:
        shown = replace(palette, fill=dict(palette.border), freed_fill=palette.freed_border,
                        running_fill=palette.running_border, collapsed_fill=palette.collapsed_border,
                        unreachable_fill=palette.unreachable_border, error_fill=palette.error_border, _q={})
        found = _OVERVIEW[palette.name] = (palette, shown)
    return found[1]


_OVERVIEW: dict[str, tuple[CanvasColors, CanvasColors]] = {}


def stacking(layer: int, key: str) -> float:
    """The z value of an item of ``layer`` (edges 1, nodes 2) drawing the thing named ``key``:
    items of a layer that overlap (two edges into one node) are stacked by their names, not by
    the order they came into the scene, which follows the order of a set of names: the same
    picture every time, whatever Python's string hashing."""
    return layer + zlib.crc32(key.encode()) / (1 << 34)  # (below layer + 0.25: the next layers stay above)
