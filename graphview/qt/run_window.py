"""RunWindow: what :class:`~graphview.qt.run_controller.RunController` uses of the window.

The run's lifecycle touches most of the window: the session and the canvas, the panels it fills
when the run ends, the status bar and the tabs it brings forward. This protocol names them, so the
controller depends on these parts and not on :class:`~graphview.qt.main_window.MainWindow`, which
provides them (and imports the controller).
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QLineEdit, QStatusBar, QTabWidget, QWidget

from graphview.core.options import RunOptions
from graphview.core.run import Run
from graphview.qt.canvas import GraphScene, GraphView
from graphview.qt.panels import CodeView, Console, DiagnosticsPanel, MemoryChart, TogglesPanel
from graphview.qt.panels.whatif_summary import WhatIfSummary
from graphview.qt.pending_step import PendingStep
from graphview.qt.player import Player
from graphview.qt.run_progress import RunProgress
from graphview.qt.session import Session
from graphview.qt.timeline_bar import TimelineBar


class RunWindow(Protocol):
    """The parts of the window a run's lifecycle reads and fills."""

    # the run, its options, and the state every view shows
    session: Session
    options: RunOptions
    script_path: str | None
    actions: dict[str, QAction]
    # the canvas and the timeline
    scene: GraphScene
    view: GraphView
    timeline_bar: TimelineBar
    player: Player
    pending_step: PendingStep
    # the panels and the window's chrome
    code: CodeView
    code_note: QLabel
    console: Console
    diagnostics: DiagnosticsPanel
    memory: MemoryChart
    memory_tab: QWidget
    whatif: WhatIfSummary
    toggles: TogglesPanel
    search: QLineEdit
    progress: RunProgress
    status_label: QLabel
    bottom_tabs: QTabWidget

    @property
    def run(self) -> Run | None: ...

    @property
    def cursor(self) -> int: ...

    def set_cursor(self, index: int) -> None: ...
    def keep_in_view(self, always: bool = False) -> None: ...
    def show_workspace(self) -> None: ...
    def statusBar(self) -> QStatusBar: ...
    def setWindowTitle(self, title: str) -> None: ...

