"""Render the whole graph (not just the viewport) to PNG, SVG or PDF, with its caption and legend.

No dialogs here. The layout of a picture is :class:`graphview.qt.export_page.ExportPage`.
"""

# NOTE [fonts in exports]
# The canvas sets its fonts in points. A painter turns points into device pixels with the DPI of
# the device it paints on, before the world transform that maps scene units onto the device.
# The nodes' boxes and the elision of their labels are measured at the screen's DPI
# (``QFontMetricsF(font)``), so every device an export paints on gets that same DPI: a QImage
# its dots per metre, a QSvgGenerator and a QPdfWriter their resolution. A QPdfWriter left at
# its default 1200 dpi drew each 9 pt label 12.5 times too large (1200 / 96): a few huge black
# glyphs, clipped.
# Labels are names from code (``float32``, ``ffn.weight``): exports draw them without
# ligatures, so the text a PDF holds is the label's own characters ("fl", not "\ufb02").

from __future__ import annotations

import os
from contextlib import contextmanager

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QRectF, QSize, QSizeF
from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPageLayout, QPageSize, QPainter, QPdfWriter
from PySide6.QtSvg import QSvgGenerator

from graphview.core import timeline
from graphview.core.captions import caption as caption_of
from graphview.core.drawing import LAYER_HEIGHT
from graphview.core.export import ALL_OPEN, PAGE_ROWS, ExportError, check_writable, save
from graphview.core.run import Run
from graphview.core.text import xml_text
from graphview.qt.canvas import GraphScene, GroupItem, NodeItem
from graphview.qt.export_page import ExportPage

IMAGE_FORMATS = (".png", ".svg", ".pdf")
MAX_PIXELS = 16384
TITLE = "graphview autograd graph"


def font_dpi() -> float:
    """The DPI fonts given in points are measured with (the screen's logical DPI; 96 without a screen)."""
    screen = QGuiApplication.primaryScreen()
    return screen.logicalDotsPerInchY() if screen is not None else 96.0


def content_rect(scene: GraphScene) -> QRectF:
    """The part of the scene an export shows: every visible node and module box (a shut box is
    a card in place of its nodes), with a margin."""
    rect = QRectF()
    for item in scene.items():
        if item.isVisible() and isinstance(item, (NodeItem, GroupItem)):
            rect = rect.united(item.sceneBoundingRect())
    if rect.isNull():
        rect = QRectF(0, 0, 200, 100)
    return rect.adjusted(-30, -30, 30, 30)


def png_scale(source: QRectF, scale: float) -> float:
    """``scale``, lowered where needed so that neither side of the PNG exceeds ``MAX_PIXELS``."""
    return min(scale, MAX_PIXELS / max(source.width(), source.height()))


@contextmanager
def _without_ligatures():
    """Painters resolve the canvas's fonts against the application's font: for the duration of
    an export, that font asks for no shaping (ligatures) where the script does not need it."""
    font = QGuiApplication.font()
    plain = QFont(font)
    plain.setStyleStrategy(QFont.StyleStrategy(font.styleStrategy() | QFont.PreferNoShaping))
    QGuiApplication.setFont(plain)
    try:
        yield
    finally:
        QGuiApplication.setFont(font)


def _begin(painter: QPainter, path: str) -> None:
    if not painter.isActive():
        raise ExportError(f"cannot write {path}")


def _png(page: ExportPage, scene: GraphScene, buffer: QBuffer, path: str, scale: float) -> float:
    factor = png_scale(page.rect(), scale)
    image = QImage(QSize(max(1, int(page.width * factor)), max(1, int(page.height * factor))), QImage.Format_ARGB32)
    dots_per_metre = round(font_dpi() / 0.0254)
    image.setDotsPerMeterX(dots_per_metre)
    image.setDotsPerMeterY(dots_per_metre)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setRenderHints(QPainter.Antialiasing | QPainter.TextAntialiasing)
    painter.scale(factor, factor)
    page.paint(painter, scene)
    painter.end()
    if not image.save(buffer, "PNG"):
        raise ExportError(f"cannot write {path}: the image could not be encoded")
    return factor


def _svg(page: ExportPage, scene: GraphScene, buffer: QBuffer, path: str, scale: float) -> None:
    generator = QSvgGenerator()
    generator.setOutputDevice(buffer)
    generator.setResolution(round(font_dpi()))
    generator.setSize(QSize(int(page.width), int(page.height)))
    generator.setViewBox(page.rect())
    generator.setTitle(TITLE)  # vector: ``scale`` does not apply
    painter = QPainter(generator)
    _begin(painter, path)
    page.paint(painter, scene)
    painter.end()


def _pdf(page: ExportPage, scene: GraphScene, buffer: QBuffer, path: str, scale: float) -> None:
    """One page the size of the picture, a scene unit to a point (vector: ``scale`` does not apply)."""
    dpi = round(font_dpi())
    writer = QPdfWriter(buffer)
    writer.setTitle(TITLE)
    writer.setCreator("graphview")
    writer.setResolution(dpi)
    writer.setPageSize(QPageSize(QSizeF(page.width, page.height), QPageSize.Point))
    writer.setPageMargins(QMarginsF(0, 0, 0, 0), QPageLayout.Point)
    painter = QPainter(writer)
    _begin(painter, path)
    painter.scale(dpi / 72, dpi / 72)
    page.paint(painter, scene)
    painter.end()
    del painter, writer  # the PDF is complete once its writer is gone


#: each format's painter: (page, scene, buffer, path, scale) -> the scale a PNG was drawn at, or None
_WRITERS = {".png": _png, ".svg": _svg, ".pdf": _pdf}


def render_scene(scene: GraphScene, path: str, scale: float = 1.0, caption: str = "", legend: bool = True
                 ) -> float | None:
    """Write every visible element of ``scene`` to ``path`` (format from the suffix), with
    ``caption`` above it (none when empty) and the legend below it (when ``legend``).

    Returns the scale a PNG was drawn at (``scale``, or less where the image would have been
    larger than ``MAX_PIXELS`` on a side); None for SVG and PDF."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in IMAGE_FORMATS:
        raise ExportError(f"cannot tell the image format from {path!r}: use .png, .svg or .pdf")
    if not scale > 0:
        raise ExportError(f"the scale must be greater than 0, not {scale}")
    check_writable(path)
    scene.boxes.settle()  # a box opening or shutting glides: the picture shows every node at its place
    region = scene.region
    if region is not None:
        scene.set_region(None)  # a big scene makes items near its view only: the picture has them all
    try:
        return _render(scene, path, suffix, scale, caption, legend)
    finally:
        if region is not None:
            scene.set_region(region)


def _render(scene: GraphScene, path: str, suffix: str, scale: float, caption: str, legend: bool) -> float | None:
    selected = scene.selectedItems()
    scene.clearSelection()
    page = ExportPage(content_rect(scene), caption, legend)
    # drawn into memory, then written by graphview: a full disk is reported with the OS's reason,
    # and the file appears complete or not at all
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.WriteOnly)
    try:
        with _without_ligatures():
            used = _WRITERS[suffix](page, scene, buffer, path, scale)
    finally:
        for item in selected:
            item.setSelected(True)
    buffer.close()
    if data.isEmpty():
        raise ExportError(f"cannot write {path}: nothing was drawn")
    content = bytes(data)
    if suffix == ".svg":
        content = svg_text(content).encode("utf-8")
    save(path, content)
    return used


def svg_text(data: bytes) -> str:
    """The SVG a :class:`QSvgGenerator` wrote, as well-formed XML. The generator escapes ``<`` and
    ``&`` in the text it draws but writes control characters as they are: a node labelled with a
    name that holds ``\x1b`` or ``\x00`` (a trace can hold any string) made the whole file
    unreadable. Those characters are written visibly (``\x1b``, :func:`graphview.core.text.xml_text`)."""
    return xml_text(data.decode("utf-8", "replace"))




def render_run(run: Run, path: str, at: int | None = None, scale: float = 1.0, caption: bool = True,
               legend: bool = True, depth: int | str | None = None, notes: list[str] | None = None) -> float | None:
    """Headless: draw ``run`` as of event ``at`` and write it to ``path``.

    By default the state just before the last backward: the last graph complete, with its saved
    tensors (at the very end of a run autograd has freed most of what it built). ``depth``: module
    boxes open down to that level, deeper ones shut; :data:`ALL_OPEN`: every box open; None: open
    down to the deepest level whose graph takes at most :data:`PAGE_ROWS` rows. ``notes`` gets what
    a user should know of the picture (which boxes were shut to fit). Returns what
    :func:`render_scene` returns."""
    scene = GraphScene()
    scene.set_run(run)
    index = timeline.overview(run) if at is None else at
    if not 0 <= index < len(run.events):
        raise ExportError(f"--at {at} is outside the run (it has events 0 to {len(run.events) - 1})")
    scene.set_cursor(index)
    if depth is None:
        level, rows = scene.boxes.shut_to_fit(PAGE_ROWS)
        if level is not None and notes is not None:
            tall = rows * LAYER_HEIGHT
            shut = scene.boxes.layout.size()[0] if scene.boxes.layout is not None else rows
            fits = (f"so the graph takes at most {PAGE_ROWS} rows" if shut <= PAGE_ROWS else
                    f"the fewest rows it can take ({shut}: even with every module shut it takes more than {PAGE_ROWS})")
            notes.append(f"drawn as --depth {level}: modules at level {level} and deeper are shut, one box each, "
                         f"{fits} (every box open: {rows} rows, {tall:,.0f} pt, {tall / 72 * 0.0254:.1f} m as a PDF "
                         "page); --depth all opens every box")
    elif depth != ALL_OPEN:
        scene.boxes.show_down_to(depth)
    return render_scene(scene, path, scale, caption_of(run, index) if caption else "", legend)


def save_png(pixmap, path: str) -> None:
    """Write a widget's picture (``QWidget.grab()``) as a PNG, safely."""
    check_writable(path)
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.WriteOnly)
    if not pixmap.save(buffer, "PNG"):
        raise ExportError(f"cannot write {path}: the image could not be encoded")
    buffer.close()
    save(path, bytes(data))
