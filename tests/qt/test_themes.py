"""Light and dark themes, offscreen: pixels grabbed from the widgets are dark under Dark, text on
them has WCAG contrast of at least 4.5:1, View > Theme switches live and is remembered, and a dark
desktop palette at start selects Dark."""

from __future__ import annotations

from collections import Counter

import pytest
from PySide6.QtCore import QPoint, QRect, QRectF, QSettings
from PySide6.QtGui import QColor, QImage, QPainter, QPalette
from PySide6.QtWidgets import QApplication

from graphview.core.options import RunOptions
from graphview.qt import theme as themes
from graphview.qt.canvas import style
from graphview.qt.main_window import MainWindow
from graphview.qt.panels.inspector import histogram_image
from graphview.qt.widgets import Legend
from graphview.qt.widgets.legend import legend_entries, paint_swatch
from tests.conftest import lesson, model


def luminance(color: QColor) -> float:
    """WCAG 2 relative luminance."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    return 0.2126 * linear(color.redF()) + 0.7152 * linear(color.greenF()) + 0.0722 * linear(color.blueF())


def contrast(a: QColor, b: QColor) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def lab(color: QColor) -> tuple[float, float, float]:
    """CIELAB (D65) of an sRGB colour."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = linear(color.redF()), linear(color.greenF()), linear(color.blueF())
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116
    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def difference(a: QColor, b: QColor) -> float:
    """How far apart two colours look (CIE76 delta E): hue counts, not only lightness (an orange
    ring on light grey stands out at a luminance contrast of 2:1)."""
    return sum((p - q) ** 2 for p, q in zip(lab(a), lab(b))) ** 0.5


#: the least a legend swatch's outline differs from its background (delta E) to read at 14 px:
#: the grey ring of "input (no grad)" on the light window reads, at 34.7 as drawn; a freed node's
#: dashed grey on the dark window (26.8) and a detached tensor's on the light one (29.3) were hard to see
SWATCH_DIFFERENCE = 33


def pixels(image: QImage, rect: QRect | None = None) -> list[QColor]:
    rect = (rect or image.rect()).intersected(image.rect())
    return [QColor(image.pixel(x, y)) for y in range(rect.top(), rect.bottom() + 1)
            for x in range(rect.left(), rect.right() + 1)]


def text_on_background(image: QImage, rect: QRect | None = None) -> tuple[QColor, QColor, float]:
    """The background (the commonest colour) of a grabbed piece of text, its ink (the pixel that
    stands out most from it: the core of a glyph) and their contrast."""
    colors = pixels(image, rect)
    background = QColor.fromRgb(Counter(c.rgb() for c in colors).most_common(1)[0][0])
    ink = max(colors, key=lambda c: contrast(c, background))
    return background, ink, contrast(ink, background)


def grab(widget) -> QImage:
    QApplication.processEvents()
    return widget.grab().toImage()


def is_dark(color: QColor) -> bool:
    return luminance(color) < 0.05


def is_light(color: QColor) -> bool:
    return luminance(color) > 0.8


@pytest.fixture
def restore_desktop():
    """Each test starts with no theme chosen; whatever it does to the palette and the theme, the
    next test starts on the desktop's light palette again (windows share the settings file)."""
    app = QApplication.instance()
    original = QPalette(app.palette())
    QSettings("graphview", "graphview").remove("theme")
    yield app
    QSettings("graphview", "graphview").remove("theme")
    app.setPalette(original)
    themes.apply("system")


@pytest.fixture
def shown(restore_desktop, window, record):
    """The window on a finished run of the chain-rule lesson, the cursor at its backward."""
    run = record(lesson("chain_rule"))
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(next(i for i, e in enumerate(run.events) if e["ev"] == "backward_start"))
    window.view.fit()
    return window


def canvas_background(window) -> QColor:
    image = grab(window.view.viewport())
    return QColor(image.pixel(4, 4))  # a corner: no node is fitted there


def chart_background(window) -> QColor:
    """A point high in the plot, above every curve (the y range leaves 12 % headroom) and left of the cursor."""
    chart = window.memory
    box = chart.plotItem.vb.sceneBoundingRect()
    point = chart.mapFromScene(box.topLeft()) + QPoint(int(box.width() * 0.05), int(box.height() * 0.04))
    return QColor(grab(chart).pixel(point))


def node_label(window, title: str) -> QRect:
    """Where a node's title is drawn in the canvas's viewport."""
    item = next(i for i in window.scene.node_items.values() if i.node.title == title and i.isVisible())
    center = window.view.mapFromScene(item.mapToScene(0, -8))
    return QRect(center.x() - 30, center.y() - 7, 60, 14)


def test_under_dark_the_views_are_dark_and_their_text_readable(shown):
    window = shown
    window.themes.actions["dark"].trigger()
    assert themes.current().name == "dark"

    assert is_dark(canvas_background(window))
    # node text on node fills, read from the canvas as drawn
    for title in ("x", "MulBackward0", "y"):
        background, ink, ratio = text_on_background(grab(window.view.viewport()), node_label(window, title))
        assert ratio >= 4.5, (title, background.name(), ink.name())
        assert is_dark(background), title

    assert is_dark(chart_background(window))
    axis = window.memory.getAxis("left")
    labels = axis.mapRectToScene(axis.boundingRect()).toRect()
    area = QRect(window.memory.mapFromScene(labels.topLeft()), labels.size()).adjusted(2, 2, -12, -2)
    background, ink, ratio = text_on_background(grab(window.memory), area)
    assert is_dark(background) and ratio >= 4.5, (background.name(), ink.name())

    code = window.code
    line = code.toPlainText().splitlines().index(next(t for t in code.toPlainText().splitlines() if t.startswith("a ="))) + 1
    code.highlight(line)
    block = code.document().findBlockByNumber(line - 1)
    box = code.blockBoundingGeometry(block).translated(code.contentOffset()).toRect()
    image = grab(code.viewport())
    width = code.fontMetrics().horizontalAdvance(block.text()) + 8
    background, ink, ratio = text_on_background(image, QRect(box.left(), box.top(), width, box.height()))
    assert ratio >= 4.5, (background.name(), ink.name())  # the current line's mark keeps the code readable
    assert is_dark(background)
    assert QColor(image.pixel(box.right() - 4, box.center().y())) == background  # the mark spans the line
    below = code.blockBoundingGeometry(block.next()).translated(code.contentOffset()).toRect()
    assert is_dark(QColor(image.pixel(below.right() - 4, below.center().y())))  # and the page is dark
    assert background != QColor(image.pixel(below.right() - 4, below.center().y()))  # the mark is seen


def test_under_dark_the_legend_search_placeholder_and_status_bar_are_readable(shown):
    window = shown
    window.themes.actions["dark"].trigger()
    legend = window.findChild(Legend)
    for label in legend.words[:3]:
        background, ink, ratio = text_on_background(grab(label))
        assert is_dark(background) and ratio >= 4.5, (label.text(), background.name(), ink.name())
    window.search.clear()
    background, ink, ratio = text_on_background(grab(window.search), QRect(4, 4, 200, window.search.height() - 8))
    assert ratio >= 4.5, (background.name(), ink.name())  # "Search nodes by name or op (Enter)…"
    window.statusBar().showMessage("recorded 43 events")
    background, ink, ratio = text_on_background(grab(window.statusBar()))
    assert is_dark(background) and ratio >= 4.5, (background.name(), ink.name())


def most_different(image: QImage, background: QColor) -> float:
    """How far the pixel of ``image`` that stands out most from ``background`` is from it."""
    return max(difference(c, background) for c in pixels(image))


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_legend_swatch_stands_out_on_the_window_and_on_an_exported_page(window, restore_desktop, theme):
    window.themes.actions[theme].trigger()
    legend = window.findChild(Legend)
    background = QColor.fromRgb(Counter(c.rgb() for c in pixels(grab(legend))).most_common(1)[0][0])
    assert background.name() == themes.current().window
    faint = {swatch.entry.text: round(most_different(grab(swatch), background), 1) for swatch in legend.swatches}
    assert {text: d for text, d in faint.items() if d < SWATCH_DIFFERENCE} == {}
    page = themes.current().canvas  # an exported picture draws the same swatches on the canvas's background
    for entry in legend_entries(page):
        image = QImage(entry.swatch_size(), QImage.Format_RGB32)
        image.fill(page.q("background"))
        painter = QPainter(image)
        paint_swatch(painter, QRectF(image.rect()), entry)
        painter.end()
        assert most_different(image, page.q("background")) >= SWATCH_DIFFERENCE, entry.text


def test_under_dark_the_inspector_histogram_is_dark_with_readable_figures(shown):
    shown.themes.actions["dark"].trigger()
    image = histogram_image([1, 4, 9, 4, 1], -2.0, 2.0, width=200)
    assert is_dark(QColor(image.pixel(2, 2)))
    bar = QColor(image.pixel(100, 50))  # the tallest bar, in the middle
    assert contrast(bar, QColor(image.pixel(2, 2))) >= 3  # a graphic on its background
    background, ink, ratio = text_on_background(image, QRect(0, image.height() - 15, 60, 14))  # "-2" below
    assert is_dark(background) and ratio >= 4.5


def test_switching_the_theme_live_repaints_the_canvas_and_the_chart(shown, tmp_path):
    window = shown
    window.themes.actions["light"].trigger()
    light_canvas, light_chart = canvas_background(window), chart_background(window)
    assert is_light(light_canvas) and is_light(light_chart)
    window.themes.actions["dark"].trigger()
    assert window.themes.actions["dark"].isChecked()
    dark_canvas, dark_chart = canvas_background(window), chart_background(window)
    assert is_dark(dark_canvas) and is_dark(dark_chart)
    assert dark_canvas.name() == themes.DARK.canvas.background and dark_chart.name() == themes.DARK.chart_background
    # the edges took the theme's pen, the nodes their fills
    assert {e.pen().color().name() for e in window.scene.edge_items} <= {
        themes.DARK.canvas.edge, themes.DARK.canvas.edge_accumulate, themes.DARK.canvas.edge_freed}
    # remembered: the next window starts dark
    assert QSettings("graphview", "graphview").value("theme") == "dark"
    second = MainWindow(samples=[])
    try:
        assert second.themes.choice == "dark" and themes.current().name == "dark"
    finally:
        second.deleteLater()
    window.themes.actions["light"].trigger()
    assert canvas_background(window) == light_canvas and chart_background(window) == light_chart


def desktop_palette(dark: bool) -> QPalette:
    """A desktop's palette as a dark desktop hands it to Qt: window and text set; the placeholder
    left dark, as the one that vanished on a dark field."""
    palette = QPalette()
    window, text, base = ("#2d2d2d", "#f0f0f0", "#1e1e1e") if dark else ("#efefef", "#101010", "#ffffff")
    palette.setColor(QPalette.Window, QColor(window))
    palette.setColor(QPalette.WindowText, QColor(text))
    palette.setColor(QPalette.Base, QColor(base))
    palette.setColor(QPalette.Text, QColor(text))
    palette.setColor(QPalette.PlaceholderText, QColor("#3a3a3a"))
    return palette


def test_a_dark_desktop_palette_at_start_selects_dark(qtbot, restore_desktop):
    restore_desktop.setPalette(desktop_palette(dark=True))
    window = MainWindow(samples=[])
    qtbot.addWidget(window)
    window.resize(1200, 800)
    window.show()
    window.show_workspace()
    assert window.themes.choice == "system"  # nothing chosen yet: the desktop decides
    assert themes.current().name == "dark"
    assert is_dark(canvas_background(window))
    # graphview's dark palette replaced the desktop's half-dark one: the placeholder is readable
    window.search.clear()
    background, ink, ratio = text_on_background(grab(window.search), QRect(4, 4, 200, window.search.height() - 8))
    assert is_dark(background) and ratio >= 4.5, (background.name(), ink.name())


def test_a_light_desktop_palette_at_start_selects_light(qtbot, restore_desktop):
    restore_desktop.setPalette(desktop_palette(dark=False))
    window = MainWindow(samples=[])
    qtbot.addWidget(window)
    window.show()
    window.show_workspace()
    assert themes.current().name == "light"
    assert is_light(canvas_background(window))
    assert QApplication.instance().palette().color(QPalette.Window).name() == "#efefef"  # the desktop's own



def _standing_out(pixmap, background: QColor) -> int:
    """The pixels of the overview's picture of the graph with a contrast of 3:1 or more to the
    canvas's background (WCAG's least for graphics that must be seen)."""
    image = pixmap.toImage()
    return sum(contrast(QColor.fromRgba(image.pixel(x, y)), background) >= 3
               for y in range(image.height()) for x in range(image.width())
               if QColor.fromRgba(image.pixel(x, y)).alpha() == 255)


def test_the_overview_shows_the_graph_as_clearly_under_dark_as_under_light(restore_desktop, window, record):
    # under Dark the nodes, a few pixels wide there, showed their fills alone, a shade off the
    # background: not one pixel of the transformer's overview stood out 3:1 (light: a few dozen)
    run = record(model("transformer_block"), steps=1)
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(next(i for i, e in enumerate(run.events) if e["ev"] == "backward_start"))
    window.view.fit()
    overview = window.view.overview
    seen = {}
    for name in ("light", "dark"):
        themes.apply(name)
        overview.redraw()
        seen[name] = _standing_out(overview.pixmap, themes.current().canvas.q("background"))
    assert seen["light"] >= 150, seen  # (the graph's nodes, not a stray pixel or two)
    assert seen["dark"] >= 0.8 * seen["light"], seen
    assert themes.current().canvas is themes.DARK.canvas  # (the picture's colours were the theme's again after it)
    assert style.colors() is themes.DARK.canvas
