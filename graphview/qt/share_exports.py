"""File > Export > Animation and Web page: a run to show someone, from the window.

The animation covers the moment at the cursor's span (:func:`graphview.qt.animation.span_at`: the
backward call the cursor is in, else its step, else from the cursor to the end of the next
backward), drawn with a progress dialog whose Cancel writes nothing; the web page holds the whole run.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QApplication, QMainWindow, QProgressDialog

from graphview.qt.web_page import write_web_page
from graphview.core.captions import file_stem
from graphview.core.export import ExportError
from graphview.core.files import OutputError
from graphview.qt.animation import AnimationOptions, ExportCancelled, render_animation, span_at
from graphview.qt.file_dialogs import SAVE, Folders, ask_save
from graphview.qt.session import Session

ANIMATION_PATTERN = "GIF (*.gif);;Animated PNG (*.apng);;MP4 video (*.mp4);;WebM video (*.webm)"


class ShareExports(QObject):
    """The ``session``'s run as an animation or a web page, asked for over ``window`` (whose status
    bar says what was written); ``show_error(title, message)`` says why not."""

    def __init__(self, session: Session, folders: Folders, window: QMainWindow,
                 show_error: Callable[[str, str], None]) -> None:
        super().__init__(window)
        self.session = session
        self.folders = folders
        self.window = window
        self.show_error = show_error

    def animation(self, path: str | None = None) -> None:
        run = self.session.run
        if run is None or not run.events:
            return
        start, end = span_at(run, max(0, self.session.cursor))
        path = path or ask_save(self.window, self.folders, "Export animation",
                                f"{file_stem(run)}-events{start}-{end}.gif", ANIMATION_PATTERN)
        if not path:
            return
        progress = QProgressDialog("Drawing the animation's frames…", "Cancel", 0, 1, self.window)
        progress.setWindowTitle("Export animation")
        progress.setWindowModality(Qt.WindowModal)
        progress.setMinimumDuration(400)

        def tick(done: int, total: int) -> bool:
            progress.setMaximum(total)
            progress.setValue(done)
            QApplication.processEvents()
            return not progress.wasCanceled()

        try:
            frames, first, last = render_animation(run, path, AnimationOptions(start=start, end=end), tick)
        except ExportCancelled:
            self.window.statusBar().showMessage("animation cancelled: nothing written", 8000)
            return
        except (ExportError, OutputError, OSError) as exc:
            self.show_error("Export failed", str(exc))
            return
        finally:
            progress.close()
        self.folders.remember(SAVE, path)
        self.window.statusBar().showMessage(f"wrote {path}: {frames} frames, events {first} to {last}", 8000)

    def web_page(self, path: str | None = None) -> None:
        run = self.session.run
        if run is None or not run.events:
            return
        path = path or ask_save(self.window, self.folders, "Export web page", f"{file_stem(run)}.html",
                                "Web page (*.html)")
        if not path:
            return
        try:
            moments = write_web_page(run, path)
        except (ExportError, OutputError, OSError) as exc:
            self.show_error("Export failed", str(exc))
            return
        self.folders.remember(SAVE, path)
        self.window.statusBar().showMessage(f"wrote {path}: a page that steps through {moments} moments", 8000)
