"""Legend: the canvas's node kinds and states, a swatch and its words each."""

from __future__ import annotations

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QWidget

from graphview.core.drawing import NODE_KINDS
from graphview.qt import theme as themes
from graphview.qt.canvas.style import CanvasColors
from graphview.qt.widgets.flow_layout import FlowLayout

# the states after the kinds: (key, words); their swatches are drawn by _swatch_style
STATES = (("running", "running now (backward)"), ("error", "where the error happened"),
          ("freed", "freed by backward"), ("unreachable", "kept alive, not on the loss's path"),
          ("saved", "bytes held for backward"))


def _css(color: str) -> str:
    """A colour for a stylesheet (``#aarrggbb`` as ``rgba()``, which stylesheets read)."""
    c = QColor(color)
    return f"rgba({c.red()},{c.green()},{c.blue()},{c.alphaF():.2f})" if c.alpha() < 255 else c.name()


def _swatch_style(key: str, c: CanvasColors) -> str:
    if key in NODE_KINDS:
        radius = 7 if key not in ("op", "accumulate") else 2
        return (f"background:{_css(c.fill[key])}; border:1.5px solid {_css(c.border[key])};"
                f"border-radius:{radius}px")
    return {
        "running": f"background:{_css(c.running_fill)}; border:2px solid {_css(c.running_border)}; border-radius:2px",
        "error": f"background:{_css(c.error_fill)}; border:2px solid {_css(c.error_border)}; border-radius:2px",
        "freed": f"background:{_css(c.freed_fill)}; border:1.5px dashed {_css(c.freed_border)}; border-radius:2px",
        "unreachable": f"background:{_css(c.unreachable_fill)}; border:1.5px solid {_css(c.unreachable_border)};"
                       "border-radius:2px",
        "saved": f"background:{_css(c.saved_fill)}; border:1px solid {_css(c.saved_border)}; color:{_css(c.saved_text)};"
                 "border-radius:6px; padding:0 3px; font-size:9px",
    }[key]


class Legend(QWidget):
    """What the canvas's fills, borders and badges mean, in a line that wraps with the window's width."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("legend")  # the theme's stylesheet colours its words (#legend QLabel)
        layout = FlowLayout(self, spacing=12)
        layout.setContentsMargins(6, 2, 6, 2)
        self.swatches: dict[str, QLabel] = {}
        self.words: list[QLabel] = []
        for key, text in (*NODE_KINDS.items(), *STATES):
            swatch = QLabel("saved" if key == "saved" else "")
            if key != "saved":
                swatch.setFixedSize(14, 14)
            if key == "unreachable":
                swatch.setToolTip("alive, but on no path from the loss: backward will not run it")
            swatch.setObjectName("swatch")
            self.swatches[key] = swatch
            cell = QWidget()  # a swatch and its words stay together when the legend wraps
            pair = QHBoxLayout(cell)
            pair.setContentsMargins(0, 0, 0, 0)
            pair.setSpacing(4)
            pair.addWidget(swatch)
            label = QLabel(text)
            self.words.append(label)
            pair.addWidget(label)
            layout.addWidget(cell)
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Preferred)
        self.apply_theme()
        themes.changes().changed.connect(self.apply_theme)

    def apply_theme(self, theme: themes.Theme | None = None) -> None:
        """The swatches in the canvas's colours of the theme now applied."""
        colors = (theme or themes.current()).canvas
        for key, swatch in self.swatches.items():
            swatch.setStyleSheet(_swatch_style(key, colors))
