"""ExportDialogs: File > Export, from asking for a path to saying what was written or why not.

Drawing and writing are :mod:`graphview.qt.export` (the graph's image) and
:mod:`graphview.core.export` (its data); this module is the dialogs around them.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog

from graphview.core.captions import caption
from graphview.core.export import ExportError, export_graph, save
from graphview.core.trace import SUFFIX, TraceError, write_trace
from graphview.qt.export import render_scene, save_png

if TYPE_CHECKING:
    from graphview.qt.main_window import MainWindow


class ExportDialogs(QObject):
    """The window's exports; each takes a path, or asks for one when given none."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window


    # ------------------------------------------------------------------ export
    def _ask_path(self, title: str, pattern: str) -> str | None:
        path, chosen = QFileDialog.getSaveFileName(self.window, title, "", pattern)
        if path and not os.path.splitext(path)[1]:
            # a name typed without a suffix gets the one of the file type chosen in the dialog
            match = re.search(r"\(\*(\.[\w.]+)\)", chosen or pattern)
            if match:
                path += match.group(1)
        return path or None

    def image(self, path: str | None = None) -> None:
        path = path or self._ask_path("Export graph image", "PNG (*.png);;SVG (*.svg);;PDF (*.pdf)")
        if path:
            run, cursor = self.window.run, self.window.cursor
            text = caption(run, cursor) if run is not None and cursor >= 0 else ""
            self._guard(lambda: render_scene(self.window.scene, path, scale=2.0, caption=text), path)

    def data(self, path: str | None = None) -> None:
        path = path or self._ask_path("Export graph data", "JSON (*.json);;DOT (*.dot);;GraphML (*.graphml)")
        if path and self.window.run is not None:
            self._guard(lambda: export_graph(self.window.run, path, at=self.window.cursor), path)

    def chart_png(self, path: str | None = None) -> None:
        path = path or self._ask_path("Export memory chart", "PNG (*.png)")
        if path:
            self._guard(lambda: save_png(self.window.memory.grab(), path), path)

    def chart_csv(self, path: str | None = None) -> None:
        path = path or self._ask_path("Export memory series", "CSV (*.csv)")
        if path:
            self._guard(lambda: save(path, self.window.memory.to_csv()), path)

    def trace(self, path: str | None = None) -> None:
        path = path or self._ask_path("Save run as trace", f"graphview trace (*{SUFFIX})")
        if path and self.window.run is not None:
            self._guard(lambda: write_trace(path, self.window.run.events), path)

    def _guard(self, action, path: str) -> bool:
        try:
            action()
        except (ExportError, TraceError, OSError) as exc:
            self.window.show_error("Export failed", str(exc))
            return False
        self.window.statusBar().showMessage(f"wrote {path}", 8000)
        return True
