"""Light and dark themes: the colours of every view, the application's palette and stylesheet.

A :class:`Theme` holds the colours of the window (a ``QPalette`` is built from them), of the canvas
(:mod:`graphview.qt.canvas.style`), the memory chart, the code pane, the inspector's histograms
and the coloured words of the HTML panels (``<span class='muted'>``: see :func:`css`).

:func:`apply` makes a choice (``"system"``, ``"light"`` or ``"dark"``) the application's: it sets
the palette, the theme's stylesheet from ``resources/themes/`` and the canvas colours, then emits
``changes().changed(theme)`` (:mod:`graphview.qt.theme_changes`, which the canvas listens to
without importing this module); each view listens and takes the new colours. ``"system"`` follows the
desktop: Qt's colour scheme where the platform reports one (Qt 6.5+), else the lightness of the
desktop's window colour. Views read :func:`current` whenever they paint.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette

from graphview.core.bundled import resource
from graphview.qt.canvas import style
from graphview.qt.canvas.style import CanvasColors
from graphview.qt.theme_changes import changes

CHOICES = ("system", "light", "dark")


@dataclass(frozen=True)
class Theme:
    """The colours of one theme (``#rrggbb`` strings)."""

    name: str  # "light" or "dark"
    canvas: CanvasColors
    # the window (its QPalette)
    window: str
    base: str  # text fields, lists, the code pane
    alternate_base: str
    text: str
    button: str
    highlight: str
    highlighted_text: str
    placeholder: str
    disabled: str
    link: str
    tooltip: str
    control_border: str  # the edges of check boxes and fields (graphview.qt.widgets.outlined): 3:1 to the window
    accent: str  # the line along the selected tab (graphview.qt.widgets.outlined): 3:1 to the tabs beside it
    # words in the panels
    muted: str
    warn: str
    error: str
    ok: str
    running: str
    # the memory chart
    chart_background: str
    chart_axis: str
    chart_text: str
    chart_lines: dict[str, str]  # activation, param, input, allocated
    chart_fills: dict[str, str]  # opaque: blending is slow
    chart_cursor: str
    # the code pane
    code_current: str  # the cursor's line
    code_error: str  # the error's line
    gutter: str
    gutter_text: str
    gutter_current: str
    # the inspector's histograms
    histogram_background: str
    histogram_bar: str
    histogram_axis: str
    histogram_text: str


LIGHT = Theme(
    name="light", canvas=style.LIGHT,
    window="#efefef", base="#ffffff", alternate_base="#f5f6f7", text="#111827", button="#efefef",
    highlight="#2f65ca", highlighted_text="#ffffff", placeholder="#6b7280", disabled="#9ca3af", link="#1f5fa8",
    tooltip="#fffbe6", control_border="#7b818b", accent="#2f65ca",
    muted="#5f6673", warn="#a14a07", error="#c62828", ok="#2e7d32", running="#c2410c",
    chart_background="#ffffff", chart_axis="#6b7280", chart_text="#374151",
    chart_lines={"activation": "#4c8bf5", "param": "#34a853", "input": "#fbbc04", "allocated": "#6b7280"},
    chart_fills={"activation": "#b3cdfb", "param": "#a9dcb8", "input": "#fde6a0"},
    chart_cursor="#c62828",
    code_current="#fff3c4", code_error="#fde2e2", gutter="#f3f4f6", gutter_text="#6b7280", gutter_current="#111827",
    histogram_background="#ffffff", histogram_bar="#4c8bf5", histogram_axis="#9ca3af", histogram_text="#4b5563",
)

DARK = Theme(
    name="dark", canvas=style.DARK,
    window="#202329", base="#181a1f", alternate_base="#1e2126", text="#e6e8eb", button="#2a2e35",
    highlight="#3d6fd8", highlighted_text="#ffffff", placeholder="#9aa1ab", disabled="#6b7280", link="#8ab4f8",
    tooltip="#2a2e35", control_border="#7d8590", accent="#6ea0f5",
    muted="#a0a7b1", warn="#f0a54a", error="#f47b72", ok="#7bd083", running="#ff9b54",
    chart_background="#16181d", chart_axis="#8b929c", chart_text="#c9ced6",
    chart_lines={"activation": "#6ea0f5", "param": "#4cc26b", "input": "#f2c04a", "allocated": "#a0a7b1"},
    chart_fills={"activation": "#284270", "param": "#1f4a2d", "input": "#514215"},
    chart_cursor="#ef5350",
    code_current="#3b3518", code_error="#4a2222", gutter="#1d2025", gutter_text="#8b929c", gutter_current="#f0f2f5",
    histogram_background="#181a1f", histogram_bar="#6ea0f5", histogram_axis="#5d6470", histogram_text="#b9bfc8",
)

THEMES = {"light": LIGHT, "dark": DARK}


_state: dict = {"theme": LIGHT, "choice": None, "system": None, "applied": None}


def current() -> Theme:
    """The theme the views paint with (light until :func:`apply` says otherwise: the CLI's exports)."""
    return _state["theme"]


def choice() -> str | None:
    """What :func:`apply` was last asked for (``"system"``, ``"light"``, ``"dark"``), None before."""
    return _state["choice"]


def _app() -> QGuiApplication:
    return QGuiApplication.instance()


def desktop_palette() -> QPalette:
    """The palette the application had before graphview applied one of its own (the desktop's). A
    palette someone else set since (the desktop changed, a test) counts as the desktop's from then."""
    palette = _app().palette()
    if _state["system"] is None or palette != _state["applied"]:
        _state["system"] = QPalette(palette)
    return _state["system"]


def desktop_is_dark() -> bool:
    """Whether the desktop is dark: Qt's colour scheme where the platform knows it (Qt 6.5+), else
    the lightness of the desktop palette's window colour."""
    hints = _app().styleHints()
    scheme = hints.colorScheme() if hasattr(hints, "colorScheme") else None
    if scheme == Qt.ColorScheme.Dark:
        return True
    if scheme == Qt.ColorScheme.Light:
        return False
    return desktop_palette().color(QPalette.Active, QPalette.Window).lightness() < 128


def resolve(name: str) -> Theme:
    """The theme a choice stands for; an unknown name counts as ``"system"``."""
    if name in THEMES:
        return THEMES[name]
    return DARK if desktop_is_dark() else LIGHT


def palette(theme: Theme) -> QPalette:
    """The window palette of ``theme``: every role set, so no widget mixes in the desktop's colours."""
    p = QPalette()
    roles = {QPalette.Window: theme.window, QPalette.WindowText: theme.text, QPalette.Base: theme.base,
             QPalette.AlternateBase: theme.alternate_base, QPalette.Text: theme.text, QPalette.Button: theme.button,
             QPalette.ButtonText: theme.text, QPalette.BrightText: "#ffffff", QPalette.Highlight: theme.highlight,
             QPalette.HighlightedText: theme.highlighted_text, QPalette.ToolTipBase: theme.tooltip,
             QPalette.ToolTipText: theme.text, QPalette.PlaceholderText: theme.placeholder, QPalette.Link: theme.link,
             QPalette.LinkVisited: theme.link}
    for role, value in roles.items():
        p.setColor(role, QColor(value))
    shades = (QPalette.Light, QPalette.Midlight, QPalette.Mid, QPalette.Dark, QPalette.Shadow)
    button = QColor(theme.button)
    for role, factor in zip(shades, (150, 125, 200, 300, 500)):
        p.setColor(role, button.lighter(factor) if role in (QPalette.Light, QPalette.Midlight) else button.darker(factor))
    for role in (QPalette.WindowText, QPalette.Text, QPalette.ButtonText):
        p.setColor(QPalette.Disabled, role, QColor(theme.disabled))
    return p


def stylesheet(theme: Theme) -> str:
    """The theme's stylesheet, ``resources/themes/<name>.qss`` ("" if the installation lacks it)."""
    path = resource("themes", f"{theme.name}.qss")
    if path is None:
        print(f"graphview: resources/themes/{theme.name}.qss is missing; the window is drawn without it",
              file=sys.stderr)
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read()


def apply(name: str) -> Theme:
    """Make the choice ``name`` the application's theme, and tell every view."""
    app = _app()
    name = name if name in CHOICES else "system"
    system = desktop_palette()
    theme = resolve(name)
    # the desktop's own palette where it is what the user asked for; graphview's complete one otherwise
    # (a dark desktop palette leaves roles light that graphview's dark theme sets)
    chosen = system if name == "system" and theme is LIGHT else palette(theme)
    _state.update(theme=theme, choice=name, applied=QPalette(chosen))
    style.use(theme.canvas)
    if app.palette() != chosen:
        app.setPalette(chosen)
    sheet = stylesheet(theme)
    if app.styleSheet() != sheet:
        app.setStyleSheet(sheet)
    changes().changed.emit(theme)
    return theme


def css(theme: Theme | None = None) -> str:
    """The default stylesheet of the HTML panels: the classes their coloured words use."""
    t = theme or current()
    return (f".muted {{ color: {t.muted}; }} .warn {{ color: {t.warn}; }} .error {{ color: {t.error}; }} "
            f".ok {{ color: {t.ok}; }} .running {{ color: {t.running}; }} a {{ color: {t.link}; }}")

