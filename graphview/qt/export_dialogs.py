"""ExportDialogs: File > Export, from asking for a path to saying what was written or why not.

Drawing and writing are :mod:`graphview.qt.export` (the graph's image) and
:mod:`graphview.core.export` (its data); where dialogs start and what they suggest is
:mod:`graphview.qt.file_dialogs`; this module is the dialogs around them.
"""

from __future__ import annotations

import os
from typing import Callable

from PySide6.QtCore import QObject, QSettings
from PySide6.QtWidgets import QMainWindow

from graphview.core.captions import caption, file_stem
from graphview.core.export import ExportError, export_graph, save
from graphview.core.trace import SUFFIX, TraceError, write_trace
from graphview.qt.canvas import GraphScene
from graphview.qt.export import render_scene, save_png
from graphview.qt.file_dialogs import SAVE, Folders, ask_save
from graphview.qt.image_export_dialog import FORMATS, ImageExportDialog
from graphview.qt.panels import MemoryChart
from graphview.qt.session import Session

PNG_SCALE = 2.0


class ExportDialogs(QObject):
    """The window's exports; each takes a path, or asks for one when given none.

    What is exported: the ``session``'s run at its cursor, drawn by ``scene``, and the memory
    chart (``memory``: ``grab()`` its picture, ``to_csv()`` its series). The picture's options
    (format, legend, caption) are remembered in ``settings``, under ``export/``; the folder under
    ``folders/save`` (:class:`~graphview.qt.file_dialogs.Folders`). The dialogs open over
    ``window``, whose status bar says what was written; ``show_error(title, message)`` says why not.
    """

    def __init__(self, session: Session, scene: GraphScene, memory: MemoryChart, settings: QSettings, folders: Folders,
                 window: QMainWindow, show_error: Callable[[str, str], None]) -> None:
        super().__init__(window)
        self.session = session
        self.scene = scene
        self.memory = memory
        self.settings = settings
        self.folders = folders
        self.window = window
        self.show_error = show_error
        self.image_dialog: ImageExportDialog | None = None  # the one open, if any

    # ------------------------------------------------------------------ names
    def suggested_name(self, suffix: str, at_cursor: bool = True, tail: str = "") -> str:
        """``transformer_block-step1-event120.svg`` (``at_cursor``) or ``transformer_block.gvtrace``."""
        session = self.session
        index = session.cursor if at_cursor and session.cursor >= 0 else None
        return file_stem(session.run, index) + tail + suffix

    def _option(self, key: str, default: bool) -> bool:
        value = self.settings.value(f"export/{key}", default)
        return value if isinstance(value, bool) else str(value).lower() == "true"

    # ------------------------------------------------------------------ the picture
    def image(self, path: str | None = None) -> None:
        """Write the graph's picture to ``path`` with the options last chosen; without a path, ask
        in an :class:`ImageExportDialog` (opened, not run: the window stays live behind it)."""
        if path:
            self._write_image(path, self._option("legend", True), self._option("caption", True),
                              "light" if self._option("light", False) else None)
            return
        suffix = self.settings.value("export/format", ".png")
        suffix = suffix if suffix in FORMATS else ".png"
        start = self.folders.start(SAVE, self.suggested_name(suffix))
        dialog = ImageExportDialog(self.window, start, self._caption(), self._option("legend", True),
                                   self._option("caption", True), self._option("light", False))
        dialog.finished.connect(lambda _: self._on_image_finished(dialog))
        dialog.accepted.connect(lambda: self._on_image_accepted(dialog))  # after finished
        self.image_dialog = dialog
        dialog.open()

    def _on_image_finished(self, dialog: ImageExportDialog) -> None:
        self.image_dialog = None
        dialog.deleteLater()

    def _on_image_accepted(self, dialog: ImageExportDialog) -> None:
        settings = self.settings
        path = dialog.path()
        settings.setValue("export/legend", dialog.with_legend())
        settings.setValue("export/caption", dialog.with_caption())
        settings.setValue("export/format", os.path.splitext(path)[1].lower())
        settings.setValue("export/light", dialog.theme() == "light")
        self._write_image(path, dialog.with_legend(), dialog.with_caption(), dialog.theme())

    def _caption(self) -> str:
        run, cursor = self.session.run, self.session.cursor
        return caption(run, cursor) if run is not None and cursor >= 0 else ""

    def _write_image(self, path: str, legend: bool, with_caption: bool, theme: str | None = None) -> None:
        """The graph as the window shows it, in one theme (the window's, or ``"light"``); a PDF
        on A4 pages, a page per part when it does not fit one."""
        text = self._caption() if with_caption else ""
        self._guard(lambda: render_scene(self.scene, path, PNG_SCALE, caption=text, legend=legend, theme=theme), path)

    # ------------------------------------------------------------------ the rest
    def _ask(self, title: str, name: str, pattern: str) -> str | None:
        return ask_save(self.window, self.folders, title, name, pattern)

    def data(self, path: str | None = None) -> None:
        path = path or self._ask("Export graph data", self.suggested_name(".json"),
                                 "JSON (*.json);;DOT (*.dot);;GraphML (*.graphml)")
        if path and self.session.run is not None:
            self._guard(lambda: export_graph(self.session.run, path, at=self.session.cursor), path)

    def chart_png(self, path: str | None = None) -> None:
        path = path or self._ask("Export memory chart", self.suggested_name(".png", False, "-memory"), "PNG (*.png)")
        if path:
            self._guard(lambda: save_png(self.memory.grab(), path), path)

    def chart_csv(self, path: str | None = None) -> None:
        path = path or self._ask("Export memory series", self.suggested_name(".csv", False, "-memory"), "CSV (*.csv)")
        if path:
            self._guard(lambda: save(path, self.memory.to_csv()), path)

    def trace(self, path: str | None = None) -> None:
        path = path or self._ask("Save run as trace", self.suggested_name(SUFFIX, False), f"graphview trace (*{SUFFIX})")
        if path and self.session.run is not None:
            self._guard(lambda: write_trace(path, self.session.run.events), path)

    def _guard(self, action, path: str) -> bool:
        """Run ``action``; say what was written, or why not. The folder of a file written is
        where the next save dialog starts."""
        try:
            action()
        except (ExportError, TraceError, OSError) as exc:
            self.show_error("Export failed", str(exc))
            return False
        self.folders.remember(SAVE, path)
        self.window.statusBar().showMessage(f"wrote {path}", 8000)
        return True
