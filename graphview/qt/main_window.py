"""The graphview window: layout and wiring of the canvas, the panels, the timeline and the menus.

The window knows runs only through :class:`graphview.core.run.Run`; starting and stopping
runner processes is the app's business (``graphview.app.gui``), reached through signals.

What every view shows lives in the window's :class:`~graphview.qt.session.Session`; each view
is attached to it once (:meth:`MainWindow._attach_views`, :meth:`MainWindow.add_timeline_tab`). The commands are the table in
:mod:`graphview.qt.actions`; the run's lifecycle is :class:`~graphview.qt.run_controller.RunController`.
A new timeline panel is a module in ``qt/panels/`` and one entry in :meth:`MainWindow._build_docks`.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QSettings, Qt, Signal
from PySide6.QtWidgets import (QApplication, QLabel, QLineEdit, QMainWindow, QMessageBox, QStackedWidget,
                               QVBoxLayout, QWidget)

from graphview.core import timeline
from graphview.core.options import RunOptions
from graphview.core.run import Run
from graphview.core.trace import SUFFIX
from graphview.qt.actions import forget_fit_note, update_enabled
from graphview.qt.canvas import GraphScene, GraphView, NodeItem
from graphview.qt.export_dialogs import ExportDialogs
from graphview.qt.share_exports import ShareExports
from graphview.qt.file_dialogs import Folders, ask_open
from graphview.qt.help_dialogs import AboutDialog, ShortcutSheet
from graphview.qt.panels import CodeView, Console, DiagnosticsPanel, GradLedger, Inspector, MemoryChart, TogglesPanel
from graphview.qt.panels.memory_tab import MemoryTab
from graphview.qt.panels.whatif_summary import WhatIfSummary
from graphview.qt.pending_step import PendingStep
from graphview.qt.node_search import NodeSearch
from graphview.qt.plain import message_box, plain_label
from graphview.qt.player import Player
from graphview.qt.rank_switcher import RankSwitcher
from graphview.qt.recent_files import recent_paths
from graphview.qt.run_controller import RunController
from graphview.qt.run_progress import RunProgress
from graphview.qt.session import Session, SessionView
from graphview.qt.start_page import StartPage
from graphview.qt.timeline_bar import TimelineBar
from graphview.qt.timeline_scrub import TimelineScrub
from graphview.qt.widgets import ElidingStatusBar, Legend
from graphview.qt.widgets.form_keys import FormKeys
from graphview.qt.widgets.outlined import outline_everywhere
from graphview.qt.window_docks import WindowDocks
from graphview.qt.window_layout import DockArrangement, fit_to_screen
from graphview.qt.window_menus import build_menus


class MainWindow(QMainWindow):
    """One window; one current run plus earlier runs kept for comparison."""

    sigOpenRequested = Signal(str)
    sigRunRequested = Signal(object)  # RunOptions
    sigStopRequested = Signal()
    sigGradcheckRequested = Signal(str)

    def __init__(self, samples: list[str] | None = None) -> None:
        super().__init__()
        outline_everywhere()  # every control's edge and the selected tabs, on either theme
        # Qt destroys a window's children in the order they became its children: this one goes
        # first, and takes the memory chart's plot apart while the chart is whole (see take_apart)
        self._first_to_go = QObject(self)
        self.setWindowTitle("graphview")
        self.setAcceptDrops(True)
        self.script_path: str | None = None
        self.options = RunOptions()
        self.settings = QSettings("graphview", "graphview")
        self.folders = Folders(self.settings)
        self.session = Session(self)
        self.scene = GraphScene(self)
        self.view = GraphView(self.scene)
        self.runs = RunController(self)
        # a step asked for before its moment was recorded
        self.pending_step = PendingStep(self.session, self.statusBar, self.keep_in_view,
                                        lambda: self.runs.placement.cancel(), self)
        self.player = Player(self.session, self.scene, self.keep_in_view, self)
        self.node_search = NodeSearch(self.session, self.scene, self.view, self.statusBar)

        self.code = CodeView()
        self.inspector = Inspector()
        self.console = Console()
        self.ledger = GradLedger()
        self.diagnostics = DiagnosticsPanel()
        self.memory = MemoryChart()
        self._first_to_go.destroyed.connect(self.memory.take_apart)
        self.whatif = WhatIfSummary()  # beside the chart: what a re-run's options changed
        self.toggles = TogglesPanel()
        self.timeline_bar = TimelineBar()
        self.status_label = plain_label()  # the run's status: text, never HTML (graphview.qt.plain)
        self.rank_switcher = RankSwitcher()
        self.progress = RunProgress()
        self.exports = ExportDialogs(self.session, self.scene, self.memory, self.settings, self.folders, self,
                                     self.show_error)
        self.shares = ShareExports(self.session, self.folders, self, self.show_error)  # animation, web page
        self._build_workspace(samples or [])
        self._build_docks()
        self._build_menus_and_toolbars()
        self._attach_views()
        self._connect()
        self._form_keys = FormKeys(self)
        self._form_keys.watch(QApplication.instance())
        fit_to_screen(self)

    # ------------------------------------------------------------------ layout
    def _build_workspace(self, samples: list[str]) -> None:
        """The start page, and the workspace: search, canvas and legend (the panels are docks)."""
        self.code_box = QWidget()
        code_layout = QVBoxLayout(self.code_box)
        code_layout.setContentsMargins(0, 0, 0, 0)
        code_layout.setSpacing(0)
        self.code_note = QLabel()  # how graphview runs a step script, which differs from `python script.py`
        self.code_note.setWordWrap(True)
        self.code_note.setTextFormat(Qt.RichText)  # graphview's own words; the one figure in it is escaped
        self.code_note.setObjectName("codeNote")  # its colours are the theme's (resources/themes/*.qss)
        self.code_note.hide()
        code_layout.addWidget(self.code_note)
        code_layout.addWidget(self.code, 1)
        self.workspace = QWidget()
        center_layout = QVBoxLayout(self.workspace)
        center_layout.setContentsMargins(0, 0, 0, 0)
        self.search = QLineEdit()  # in the stepping toolbar: the canvas keeps the room
        self.search.setPlaceholderText("Search nodes by name or op (Enter)…")
        self.search.setMinimumWidth(180)
        self.search.setMaximumWidth(320)
        center_layout.addWidget(self.view, 1)
        self.legend = Legend()  # folds what does not fit its share of the column behind "+N more"
        center_layout.addWidget(self.legend)
        self.start_page = StartPage(samples, recent_paths(self.settings))
        self.stack = QStackedWidget()
        self.stack.addWidget(self.start_page)
        self.stack.addWidget(self.workspace)
        self.setCentralWidget(self.stack)

    def _build_docks(self) -> None:
        """The panels as docks (:class:`~graphview.qt.window_docks.WindowDocks`), shown with the
        first run and arranged for the window's size (:mod:`graphview.qt.window_layout`): the code
        pane, the inspector, the run options and the timeline views in tabs."""
        self.docks = WindowDocks(self, self.session)
        self.bottom_tabs = self.docks.tabs
        self.memory_tab = MemoryTab(self.memory, self.whatif)  # the chart and the what-if summary
        self.bottom_tabs.addTab(self.memory_tab, "Memory")
        self.session.attach(self.memory)
        # the findings second: at 1366x768 the tab bar shows about two and a half titles, and what
        # a pitfall's run found is the first thing to read after the graph
        for panel, title in ((self.diagnostics, "Diagnostics"), (self.console, "Console"),
                             (self.ledger, "Grad ledger")):
            self.add_timeline_tab(panel, title)
        self.code_dock = self.docks.dock("Code", "code", self.code_box, Qt.LeftDockWidgetArea)
        self.inspector_dock = self.docks.dock("Inspector", "inspector", self.inspector, Qt.RightDockWidgetArea)
        self.toggles_dock = self.docks.dock("Run options", "toggles", self.toggles, Qt.RightDockWidgetArea)
        self.bottom_dock = self.docks.timeline_dock("Timeline views", "bottom", Qt.BottomDockWidgetArea)
        self.dock_arrangement = DockArrangement(self, self.code_dock, self.inspector_dock, self.toggles_dock,
                                                self.bottom_dock)
        self.memory_tab.sigShort.connect(self.dock_arrangement.grow_timeline)  # (not after the user's own sizes)

    def add_timeline_tab(self, panel: QWidget, title: str) -> None:
        """A panel in the timeline views' tabs that follows the session (a SessionView): the one
        line of wiring a new timeline panel needs is its entry in :meth:`_build_docks`."""
        self.docks.add_timeline_tab(panel, title)

    def _build_menus_and_toolbars(self) -> None:
        bars = build_menus(self, self.settings, self.sigOpenRequested, self.player.speed, self.search,
                           self.timeline_bar, (self.code_dock, self.inspector_dock, self.toggles_dock, self.bottom_dock))
        self.actions, self.menus, self.recent, self.themes = bars.actions, bars.menus, bars.recent, bars.themes
        self.actions["follow"].setChecked(self.settings.value(self.FOLLOW_KEY, True, type=bool))
        update_enabled(self, self.actions)

    def show_workspace(self) -> None:
        """Leave the start page for the workspace (the first run)."""
        if self.stack.currentIndex() != 1:
            self.stack.setCurrentIndex(1)
            self.dock_arrangement.apply()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.dock_arrangement.follow_size()

    # ------------------------------------------------------------------ wiring
    def _attach_views(self) -> None:
        """The views around the tabs (those attach in :meth:`add_timeline_tab`); the scene before
        the view, whose minimap pictures what the scene shows."""
        views: tuple[SessionView, ...] = (self.timeline_bar, self.scene, self.view, self.code, self.inspector)
        for view in views:
            self.session.attach(view)
        # with nothing selected, the Inspector shows the node the cursor is on (the scene, attached
        # before it, knows which at the new cursor)
        self.inspector.follow_with(self.scene.at_cursor.node_at_event)

    def _connect(self) -> None:
        self.session.run_changed.connect(lambda run: update_enabled(self, self.actions))
        self.session.selection_changed.connect(self._on_selection_changed)
        self.start_page.sigOpen.connect(self.sigOpenRequested)
        self.search.returnPressed.connect(self.find)
        self.search.textChanged.connect(lambda _text: self.node_search.forget())  # its count was of another search
        self.timeline_scrub = TimelineScrub(self)  # the slider moves the cursor; the view follows
        self.scene.sigNodeSelected.connect(self.session.select)
        self.scene.boxes.sigShutToFit.connect(self.runs.placement.on_shut_to_fit)
        self.code.sigLineClicked.connect(self._on_line_clicked)
        self.inspector.sigLineLink.connect(self._show_line)
        self.console.sigLineLink.connect(self._show_line)
        # a click on the chart moves the cursor as a step does: the view follows it there
        self.memory.sigJump.connect(lambda index: self.move(lambda run, cursor: index))
        self.diagnostics.sigFinding.connect(self._on_finding)
        self.toggles.sigRunRequested.connect(self.sigRunRequested)
        self.view.sigDetachRequested.connect(self.toggles.request_detach)
        self.view.sigCheckpointRequested.connect(self.toggles.request_checkpoint)
        self.diagnostics.sigTryCheckpoint.connect(self.toggles.request_checkpoint)
        self.view.sigGradcheckRequested.connect(self._request_gradcheck)
        self.view.sigShownChanged.connect(lambda: forget_fit_note(self))
        self.setStatusBar(ElidingStatusBar())  # a long message ends in "…" before the run's summary
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.status_label)  # no stretch: messages need the room
        self.statusBar().addPermanentWidget(self.rank_switcher)
        self.rank_switcher.sigOpenRequested.connect(self.sigOpenRequested)
        self.sigRunRequested.connect(self.runs.note_rerun)  # first: before the app begins the re-run

    # ------------------------------------------------------------------ the session, as the window's own state
    @property
    def run(self) -> Run | None:
        return self.session.run

    @property
    def cursor(self) -> int:
        return self.session.cursor

    @property
    def selected_node(self) -> str | None:
        return self.session.selection or None

    @property
    def follow_live(self) -> bool:
        return self.session.follow_live

    @property
    def comparison(self) -> str:
        return self.runs.comparison

    @property
    def earlier_runs(self) -> list[tuple[str, Run]]:
        return self.runs.earlier_runs

    @property
    def play_timer(self):
        return self.player.timer

    @property
    def slider(self):
        return self.timeline_bar.slider

    @property
    def position_label(self) -> QLabel:
        return self.timeline_bar.position_label

    # ------------------------------------------------------------------ files
    def remember(self, path: str) -> None:
        """``path`` was opened: first in File > Open recent."""
        self.recent.remember(path)

    def open_dialog(self) -> None:
        path = ask_open(self, self.folders, "Open a script or a trace",
                        f"Scripts and traces (*.py *{SUFFIX});;All files (*)")
        if path:
            self.sigOpenRequested.emit(path)

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        urls = event.mimeData().urls()
        if urls:
            self.sigOpenRequested.emit(urls[0].toLocalFile())

    def _interactive(self) -> bool:
        return QApplication.platformName() not in ("offscreen", "minimal")

    def show_error(self, title: str, message: str) -> None:
        """``message`` in the status bar and, on a screen, in a message box: as text, never HTML (it
        quotes paths, a trace's reason for a refusal, a script's error)."""
        self.statusBar().showMessage(message, 15000)
        if self._interactive():
            message_box(self, QMessageBox.Warning, title, message).exec()

    def show_warning(self, title: str, message: str) -> None:
        self.statusBar().showMessage(message.replace("\n\n", " "), 60000)
        if self._interactive():
            message_box(self, QMessageBox.Information, title, message).exec()

    def show_shortcuts(self) -> ShortcutSheet:
        """Help > Keyboard shortcuts: every key of the window, from the table of actions."""
        return self._show_help(ShortcutSheet(self))

    def show_about(self) -> AboutDialog:
        """Help > About graphview: the versions of graphview, torch, Qt, PySide6 and Python."""
        return self._show_help(AboutDialog(self, self.run))

    def _show_help(self, dialog):
        dialog.setAttribute(Qt.WA_DeleteOnClose)
        dialog.show()  # not modal: the keys can be tried with the sheet open
        return dialog

    # ------------------------------------------------------------------ runs
    def begin_run(self, script_path: str | None, options: RunOptions, run: Run | None = None) -> None:
        """Show a (new) run; the previous one stays as an overlay on the memory chart."""
        self.runs.begin(script_path, options, run)

    def show_ranks(self, ranks: dict[int, str], current: int | None, world: int | None = None) -> None:
        """The open trace is rank ``current`` of a distributed job whose traces are ``ranks``."""
        self.rank_switcher.show_ranks(ranks, current, world)

    def append_events(self, events: list[dict]) -> None:
        """Live: the runner sent more events."""
        self.runs.append_events(events)

    def overview_index(self) -> int:
        return self.runs.overview_index()

    def restart(self) -> None:
        if self.script_path:
            self.sigRunRequested.emit(self.options)

    # ------------------------------------------------------------------ the cursor
    def move(self, step) -> None:
        """Move the cursor by a unit of :mod:`graphview.core.timeline` (``step(run, cursor)``).
        While the run is still being recorded, a unit whose moment is not recorded yet (the next
        backward, the end of the step: a :class:`~graphview.core.timeline.Unit`) is waited for
        (:class:`~graphview.qt.pending_step.PendingStep`) instead of stopping at the newest event."""
        if self.run is None or not self.run.events:
            return
        self.pending_step.cancel()  # a new move replaces a step still waited for
        self.session.follow_live = False
        origin = max(0, self.cursor)
        if isinstance(step, timeline.Unit) and self.runs.going and step.find(self.run, origin) is None:
            self.pending_step.start(step, origin)
            return
        self.set_cursor(step(self.run, origin))
        self.keep_in_view()

    def keep_in_view(self, always: bool = False) -> None:
        """Like a debugger following execution: scroll so the node the cursor's event made or ran
        is on screen, at a zoom where it reads (only when it is not; a view the user placed
        otherwise stays). Stepping does this unless View > Follow the current node is off;
        ``always``: the window placing a run it opens."""
        if always or self.view.follows_cursor:
            self.view.follow_cursor()

    #: the settings key of View > Follow the current node
    FOLLOW_KEY = "view/follow_cursor"

    def set_follow(self, on: bool) -> None:
        """View > Follow the current node: on, stepping keeps the cursor's node in view;
        remembered for the next start."""
        self.view.set_follows_cursor(on)
        self.settings.setValue(self.FOLLOW_KEY, on)

    def set_cursor(self, index: int, animate: bool = False) -> None:
        if animate:  # with the gradients' pulses
            self.player.step_to(index)
        else:
            self.session.set_cursor(index)

    def _error_line(self, index: int | None = None) -> int | None:
        return self.session.error_line(index)

    def _show_line(self, line: int) -> None:
        self.code.highlight(line, self._error_line())

    def _on_finding(self, finding) -> None:
        if finding is None:
            return
        self.session.follow_live = False
        self.set_cursor(finding.index)
        if finding.node and self.scene.item_for(finding.node) is not None:
            self.scene.select_node(finding.node)
            self.view.center_on_node(finding.node)
        else:  # no node of its own drawn: the view follows the cursor there, as a step does
            self.keep_in_view()
        if finding.line:
            self._show_line(finding.line)

    # ------------------------------------------------------------------ gradient check
    def _request_gradcheck(self, name: str) -> None:
        if self.script_path:
            self.statusBar().showMessage(f"checking the gradient of {name} against finite differences…")
            self.sigGradcheckRequested.emit(name)
        else:
            self.show_error("Gradient check", "a gradient check re-runs the script: open the script, not a trace")

    def show_gradcheck(self, result: dict | None, end: dict) -> None:
        """The result of a gradient check: a line in the status bar and a table in the inspector."""
        if result is None:
            self.show_error("Gradient check", f"the gradient check failed: {end.get('message') or end.get('status')}")
            return
        worst = result["max_rel_error"]
        verdict = "agree" if worst <= 1e-4 else "DISAGREE"
        self.statusBar().showMessage(f"gradient of {result['tensor']}: autograd and finite differences {verdict} "
                                     f"(largest relative error {worst:.3g})", 60000)
        self.inspector.show_gradcheck(result)

    # ------------------------------------------------------------------ selection and search
    def _on_selection_changed(self, node_id: str) -> None:
        if node_id and self.tabifiedDockWidgets(self.inspector_dock):
            self.inspector_dock.raise_()  # folded into tabs: a click on a node brings its details forward
        node = self.scene.drawing.nodes.get(node_id) if node_id and self.run is not None and self.scene.drawing else None
        if node is not None and node.line is not None:
            self._show_line(node.line)

    def _on_line_clicked(self, line: int) -> None:
        self.node_search.select_line(line)

    def find(self) -> None:
        """Search (the toolbar's field, Enter): :meth:`NodeSearch.find`."""
        self.node_search.find(self.search.text())

    # ------------------------------------------------------------------ export (File > Export)
    def export_image(self, path: str | None = None) -> None:
        self.exports.image(path)

    def export_data(self, path: str | None = None) -> None:
        self.exports.data(path)

    def export_chart_png(self, path: str | None = None) -> None:
        self.exports.chart_png(path)

    def export_chart_csv(self, path: str | None = None) -> None:
        self.exports.chart_csv(path)

    def export_trace(self, path: str | None = None) -> None:
        self.exports.trace(path)

    def export_animation(self, path: str | None = None) -> None:
        self.shares.animation(path)

    def export_web_page(self, path: str | None = None) -> None:
        self.shares.web_page(path)

    def node_item(self, node_id: str) -> NodeItem | None:
        return self.scene.item_for(node_id)

    def closeEvent(self, event) -> None:
        self.player.stop()
        self.sigStopRequested.emit()
        super().closeEvent(event)
