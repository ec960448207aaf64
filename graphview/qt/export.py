"""Render the whole graph (not just the viewport) to PNG, SVG or PDF. No dialogs here."""

from __future__ import annotations

import os

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QRectF, QSize, QSizeF, Qt
from PySide6.QtGui import QColor, QImage, QPageLayout, QPageSize, QPainter, QPdfWriter
from PySide6.QtSvg import QSvgGenerator

from graphview.core import timeline
from graphview.core.export import ExportError, check_writable, save
from graphview.core.run import Run
from graphview.qt.canvas import GraphScene, NodeItem

IMAGE_FORMATS = (".png", ".svg", ".pdf")
MAX_PIXELS = 16384


def _content_rect(scene: GraphScene) -> QRectF:
    rect = QRectF()
    for item in scene.items():
        if item.isVisible() and isinstance(item, NodeItem):
            rect = rect.united(item.sceneBoundingRect())
    if rect.isNull():
        rect = QRectF(0, 0, 200, 100)
    return rect.adjusted(-30, -30, 30, 30)


def png_scale(source: QRectF, scale: float) -> float:
    """``scale``, lowered where needed so that neither side of the PNG exceeds ``MAX_PIXELS``."""
    return min(scale, MAX_PIXELS / max(source.width(), source.height()))


def _begin(painter: QPainter, path: str) -> None:
    if not painter.isActive():
        raise ExportError(f"cannot write {path}")


def render_scene(scene: GraphScene, path: str, scale: float = 1.0) -> float | None:
    """Write every visible element of ``scene`` to ``path`` (format from the suffix).

    Returns the scale a PNG was drawn at (``scale``, or less where the image would have been
    larger than ``MAX_PIXELS`` on a side); None for SVG and PDF."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in IMAGE_FORMATS:
        raise ExportError(f"cannot tell the image format from {path!r}: use .png, .svg or .pdf")
    if not scale > 0:
        raise ExportError(f"the scale must be greater than 0, not {scale}")
    check_writable(path)
    used: float | None = None
    source = _content_rect(scene)
    selected = scene.selectedItems()
    scene.clearSelection()
    # drawn into memory, then written by graphview: a full disk is reported with the OS's reason,
    # and the file appears complete or not at all
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.WriteOnly)
    try:
        if suffix == ".png":
            factor = used = png_scale(source, scale)
            image = QImage(QSize(max(1, int(source.width() * factor)), max(1, int(source.height() * factor))),
                           QImage.Format_ARGB32)
            image.fill(QColor("white"))
            painter = QPainter(image)
            painter.setRenderHints(QPainter.Antialiasing | QPainter.TextAntialiasing)
            scene.render(painter, QRectF(image.rect()), source, Qt.KeepAspectRatio)
            painter.end()
            if not image.save(buffer, "PNG"):
                raise ExportError(f"cannot write {path}: the image could not be encoded")
        elif suffix == ".svg":
            generator = QSvgGenerator()
            generator.setOutputDevice(buffer)
            generator.setSize(QSize(int(source.width()), int(source.height())))
            generator.setViewBox(QRectF(0, 0, source.width(), source.height()))
            generator.setTitle("graphview autograd graph")
            painter = QPainter(generator)
            _begin(painter, path)
            scene.render(painter, QRectF(0, 0, source.width(), source.height()), source)
            painter.end()
        else:
            writer = QPdfWriter(buffer)
            writer.setTitle("graphview autograd graph")
            writer.setPageSize(QPageSize(QSizeF(source.width(), source.height()), QPageSize.Point))
            writer.setPageMargins(QMarginsF(0, 0, 0, 0), QPageLayout.Point)
            painter = QPainter(writer)
            _begin(painter, path)
            scene.render(painter, QRectF(0, 0, painter.device().width(), painter.device().height()), source)
            painter.end()
            del painter, writer  # the PDF is complete once its writer is gone
    finally:
        for item in selected:
            item.setSelected(True)
    buffer.close()
    if data.isEmpty():
        raise ExportError(f"cannot write {path}: nothing was drawn")
    save(path, bytes(data))
    return used


def render_run(run: Run, path: str, at: int | None = None, scale: float = 1.0) -> float | None:
    """Headless: draw ``run`` as of event ``at`` and write it to ``path``.

    By default the state just before the last backward: the last graph complete, with its saved
    tensors (at the very end of a run autograd has freed most of what it built). Returns what
    :func:`render_scene` returns."""
    scene = GraphScene()
    scene.set_run(run)
    index = timeline.overview(run) if at is None else at
    if not 0 <= index < len(run.events):
        raise ExportError(f"--at {at} is outside the run (it has events 0 to {len(run.events) - 1})")
    scene.set_cursor(index)
    return render_scene(scene, path, scale)


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
