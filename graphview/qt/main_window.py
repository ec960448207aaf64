"""The graphview window: canvas, code, inspector, timeline, memory chart, console, ledger, toggles.

The window knows runs only through :class:`graphview.core.run.Run`; starting and stopping
runner processes is the app's business (``graphview.app.gui``), reached through signals.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, QSettings, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QAbstractButton, QAbstractItemView, QAbstractSlider, QAbstractSpinBox, QApplication,
                               QComboBox, QDockWidget, QFileDialog, QGridLayout, QHBoxLayout, QLabel, QLayout,
                               QLineEdit, QListWidget, QListWidgetItem, QMainWindow, QMessageBox, QPushButton,
                               QSizePolicy, QSlider, QSplitter, QStackedWidget, QTabWidget, QToolBar, QVBoxLayout,
                               QWidget)

from graphview.core import timeline
from graphview.core.export import ExportError, export_graph, save
from graphview.core.options import RunOptions
from graphview.core.run import Run
from graphview.core.trace import SUFFIX, TraceError, write_trace
from graphview.qt.canvas import BORDER, FILL, GraphScene, GraphView, NodeItem, human_bytes, short_value
from graphview.qt.export import render_scene, save_png
from graphview.core.diagnostics import diagnose
from graphview.qt.panels import CodeView, Console, DiagnosticsPanel, GradLedger, Inspector, MemoryChart, TogglesPanel

OVERLAY_COLORS = ["#7c3aed", "#db2777", "#0891b2", "#65a30d", "#ea580c", "#475569"]


class FlowLayout(QLayout):
    """Lays its items out left to right and wraps them onto more rows when the width runs out
    (Qt's flow layout example), so the legend never forces the window wider than the screen."""

    def __init__(self, parent=None, spacing: int = 4, row_spacing: int = 1) -> None:
        super().__init__(parent)
        self._items: list = []
        self._spacing, self._row_spacing = spacing, row_spacing

    def addItem(self, item) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int):
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int):
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self):
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._arrange(QRect(0, 0, width, 0), apply=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, apply=True)

    def sizeHint(self) -> QSize:
        return self.minimumSize()

    def minimumSize(self) -> QSize:
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def _arrange(self, rect: QRect, apply: bool) -> int:
        margins = self.contentsMargins()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        x, y, row_height = area.x(), area.y(), 0
        for item in self._items:
            hint = item.sizeHint()
            if x + hint.width() > area.right() + 1 and row_height > 0:
                x, y = area.x(), y + row_height + self._row_spacing
                row_height = 0
            if apply:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self._spacing
            row_height = max(row_height, hint.height())
        return y + row_height - rect.y() + margins.bottom()


class Legend(QWidget):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        layout = FlowLayout(self, spacing=12)
        layout.setContentsMargins(6, 2, 6, 2)
        from graphview.core.drawing import NODE_KINDS

        cells = []
        for kind, text in NODE_KINDS.items():
            swatch = QLabel()
            swatch.setFixedSize(14, 14)
            radius = 7 if kind not in ("op", "accumulate") else 2
            swatch.setStyleSheet(f"background:{FILL[kind].name()}; border:1.5px solid {BORDER[kind].name()};"
                                 f"border-radius:{radius}px")
            cells.append((swatch, text))
        running = QLabel()
        running.setFixedSize(14, 14)
        running.setStyleSheet("background:#ffd59e; border:2px solid #ff8c00; border-radius:2px")
        cells.append((running, "running now (backward)"))
        failed = QLabel()
        failed.setFixedSize(14, 14)
        failed.setStyleSheet("background:#f7d4d4; border:2px solid #c62828; border-radius:2px")
        cells.append((failed, "where the error happened"))
        freed = QLabel()
        freed.setFixedSize(14, 14)
        freed.setStyleSheet("background:#f1f1f1; border:1.5px dashed #bdbdbd; border-radius:2px")
        cells.append((freed, "freed by backward"))
        badge = QLabel("saved")
        badge.setStyleSheet("background:#fff1c4; border:1px solid #b8860b; border-radius:6px; padding:0 3px;"
                            "font-size:9px")
        cells.append((badge, "bytes held for backward"))
        for swatch, text in cells:  # a swatch and its words stay together when the legend wraps
            cell = QWidget()
            pair = QHBoxLayout(cell)
            pair.setContentsMargins(0, 0, 0, 0)
            pair.setSpacing(4)
            pair.addWidget(swatch)
            label = QLabel(text)
            label.setStyleSheet("color:#374151")
            pair.addWidget(label)
            layout.addWidget(cell)
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Preferred)


def _first_line_of_docstring(path: str) -> str:
    """What a sample shows, from the first line of its docstring (read, not imported)."""
    import ast

    try:
        with open(path, encoding="utf-8") as f:
            doc = ast.get_docstring(ast.parse(f.read()))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ""
    if not doc:
        return ""
    first = doc.strip().splitlines()[0]
    return first.split(". ")[0].rstrip(".")  # the first sentence


def _sample_label(path: str) -> str:
    parts = os.path.normpath(path).split(os.sep)
    return "/".join(parts[parts.index("sample_models") + 1:]) if "sample_models" in parts else os.path.basename(path)


class StartPage(QWidget):
    """Shown when graphview starts without a file: open, recent files, bundled samples."""

    sigOpen = Signal(str)

    def __init__(self, samples: list[str], recent: list[str], parent=None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        title = QLabel("<h1>graphview</h1><p>Open a PyTorch script and watch autograd build, run and free "
                       "its graph, one step at a time.</p>")
        title.setWordWrap(True)
        layout.addWidget(title)
        buttons = QHBoxLayout()
        open_script = QPushButton("Open script…")
        open_trace = QPushButton("Open trace…")
        open_script.clicked.connect(lambda: self._pick("Python scripts (*.py)"))
        open_trace.clicked.connect(lambda: self._pick(f"graphview traces (*{SUFFIX})"))
        buttons.addWidget(open_script)
        buttons.addWidget(open_trace)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        lists = QHBoxLayout()
        for heading, paths in (("Recent files", recent), ("Samples", samples)):
            column = QVBoxLayout()
            column.addWidget(QLabel(f"<b>{heading}</b>"))
            widget = QListWidget()
            for path in paths:
                text = path
                if heading == "Samples":
                    about = _first_line_of_docstring(path)
                    text = f"{_sample_label(path)}  —  {about}" if about else _sample_label(path)
                item = QListWidgetItem(text)
                item.setToolTip(path)
                item.setData(Qt.UserRole, path)
                widget.addItem(item)
            if not paths:
                empty = QListWidgetItem("none yet: files you open are listed here")
                empty.setFlags(Qt.NoItemFlags)
                widget.addItem(empty)
            widget.itemActivated.connect(lambda item: item.data(Qt.UserRole) and self.sigOpen.emit(item.data(Qt.UserRole)))
            widget.itemClicked.connect(lambda item: item.data(Qt.UserRole) and self.sigOpen.emit(item.data(Qt.UserRole)))
            column.addWidget(widget)
            lists.addLayout(column, 1 if heading == "Recent files" else 2)
        layout.addLayout(lists, 1)

    def _pick(self, pattern: str) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open", "", pattern + ";;All files (*)")
        if path:
            self.sigOpen.emit(path)


def _nodes_per_step(run: Run) -> list[int]:
    """How many autograd nodes each step made (the whole run, for a plain script)."""
    if not run.steps:
        return [len(run.op_nodes)]
    starts = [step["start"] for step in run.steps]
    counts = [0] * len(starts)
    for op in run.op_nodes.values():  # one pass: each node to the step it was born in
        at = bisect_right(starts, op.born) - 1
        end = run.steps[at]["end"] if at >= 0 else None
        if at >= 0 and (end is None or op.born <= end):
            counts[at] += 1
    return counts


class _FormKeys(QObject):
    """The timeline's bare-key shortcuts (Space, arrows, Home, End) stand back while a form control
    has the focus: Space ticks the checkbox, Down opens the combo box, Right moves the slider."""

    KEYS = {Qt.Key_Space, Qt.Key_Left, Qt.Key_Right, Qt.Key_Up, Qt.Key_Down, Qt.Key_Home, Qt.Key_End,
            Qt.Key_PageUp, Qt.Key_PageDown}
    CONTROLS = (QAbstractButton, QComboBox, QAbstractSpinBox, QAbstractSlider, QLineEdit, QAbstractItemView)

    def eventFilter(self, obj, event) -> bool:
        if (event.type() == QEvent.ShortcutOverride and isinstance(obj, self.CONTROLS)
                and event.key() in self.KEYS and not (event.modifiers() & ~Qt.KeypadModifier)):
            event.accept()  # the focused control takes the key; no shortcut fires
            return True
        return False


class MainWindow(QMainWindow):
    """One window; one current run plus earlier runs kept for comparison."""

    sigOpenRequested = Signal(str)
    sigRunRequested = Signal(object)  # RunOptions
    sigStopRequested = Signal()
    sigGradcheckRequested = Signal(str)

    def __init__(self, samples: list[str] | None = None) -> None:
        super().__init__()
        self.setWindowTitle("graphview")
        self.resize(1500, 950)
        self.setAcceptDrops(True)
        self.run: Run | None = None
        self.script_path: str | None = None
        self.options = RunOptions()
        self.cursor = -1
        self._chart_turn = 0
        self.slices_pending = 0  # slices of a live refresh scheduled and not yet run
        self.follow_live = True
        self.earlier_runs: list[tuple[str, Run]] = []
        self.comparison = ""
        self.selected_node: str | None = None
        self.settings = QSettings("graphview", "graphview")

        self.scene = GraphScene(self)
        self.view = GraphView(self.scene)
        self.code = CodeView()
        self.inspector = Inspector()
        self.console = Console()
        self.ledger = GradLedger()
        self.diagnostics = DiagnosticsPanel()
        self.memory = MemoryChart()
        self.toggles = TogglesPanel()
        self.status_label = QLabel("")

        splitter = QSplitter(Qt.Horizontal)
        code_box = QWidget()
        code_layout = QVBoxLayout(code_box)
        code_layout.setContentsMargins(0, 0, 0, 0)
        code_layout.setSpacing(0)
        self.code_note = QLabel()  # how graphview runs a step script, which differs from `python script.py`
        self.code_note.setWordWrap(True)
        self.code_note.setStyleSheet("background:#eef2ff; color:#3730a3; padding:4px 6px; border-bottom:1px solid #c7d2fe")
        self.code_note.hide()
        code_layout.addWidget(self.code_note)
        code_layout.addWidget(self.code, 1)
        splitter.addWidget(code_box)
        center = QWidget()
        center_layout = QVBoxLayout(center)
        center_layout.setContentsMargins(0, 0, 0, 0)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search nodes by name or op (Enter)…")
        self.search.returnPressed.connect(self.find)
        center_layout.addWidget(self.search)
        center_layout.addWidget(self.view, 1)
        center_layout.addWidget(Legend())
        splitter.addWidget(center)
        splitter.addWidget(self.inspector)
        splitter.setSizes([380, 820, 300])
        self.workspace = splitter
        self.start_page = StartPage(samples or [], self.recent_files())
        self.start_page.sigOpen.connect(self.sigOpenRequested)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.start_page)
        self.stack.addWidget(splitter)
        self.setCentralWidget(self.stack)

        bottom = QTabWidget()
        bottom.addTab(self.memory, "Memory (saved tensors)")
        bottom.addTab(self.console, "Console")
        bottom.addTab(self.ledger, "Gradient ledger")
        bottom.addTab(self.diagnostics, "Diagnostics")
        self.bottom_tabs = bottom
        dock = QDockWidget("Timeline views", self)
        dock.setObjectName("bottom")
        dock.setWidget(bottom)
        dock.setFeatures(QDockWidget.DockWidgetMovable | QDockWidget.DockWidgetFloatable)
        self.addDockWidget(Qt.BottomDockWidgetArea, dock)
        self.bottom_dock = dock
        dock.hide()  # shown with the first run: the start page needs no empty chart
        toggles_dock = QDockWidget("Run options", self)
        toggles_dock.setObjectName("toggles")
        toggles_dock.setWidget(self.toggles)
        self.addDockWidget(Qt.RightDockWidgetArea, toggles_dock)
        self.toggles_dock = toggles_dock
        toggles_dock.hide()  # options of a run: shown with the first run
        self.resizeDocks([dock], [250], Qt.Vertical)

        self._build_actions()
        self._form_keys = _FormKeys(self)
        QApplication.instance().installEventFilter(self._form_keys)
        self.play_timer = QTimer(self)
        self.play_timer.timeout.connect(self._play_tick)
        # while a runner streams, the views catch up at most ten times a second
        self.live_refresh = QTimer(self)
        self.live_refresh.setSingleShot(True)
        self.live_refresh.setInterval(60)
        self.live_refresh.timeout.connect(self._refresh_live)

        self.scene.sigNodeSelected.connect(self._on_node_selected)
        self.code.sigLineClicked.connect(self._on_line_clicked)
        self.inspector.sigLineLink.connect(lambda line: self.code.highlight(line, self._error_line()))
        self.console.sigLineLink.connect(lambda line: self.code.highlight(line, self._error_line()))
        self.memory.sigJump.connect(self.set_cursor)
        self.diagnostics.sigFinding.connect(self._on_finding)
        self.toggles.sigRunRequested.connect(self.sigRunRequested)
        self.view.sigDetachRequested.connect(self.toggles.request_detach)
        self.view.sigGradcheckRequested.connect(self._request_gradcheck)
        self.statusBar().addPermanentWidget(self.status_label)  # no stretch: messages need the room

    # ------------------------------------------------------------------ actions
    def _build_actions(self) -> None:
        bar = QToolBar("Stepping")
        bar.setObjectName("stepping")
        self.addToolBar(Qt.TopToolBarArea, bar)
        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        self._action(file_menu, "&Open…", QKeySequence.Open, self.open_dialog)
        self.recent_menu = file_menu.addMenu("Open &recent")
        self._fill_recent()
        export_menu = file_menu.addMenu("&Export")
        self._action(export_menu, "Graph as PNG / SVG / PDF…", QKeySequence("Ctrl+E"), self.export_image)
        self._action(export_menu, "Graph data as JSON / DOT / GraphML…", None, self.export_data)
        self._action(export_menu, "Memory chart as PNG…", None, self.export_chart_png)
        self._action(export_menu, "Memory chart as CSV…", None, self.export_chart_csv)
        self._action(export_menu, "Run as trace file…", QKeySequence.Save, self.export_trace)
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", QKeySequence.Quit, self.close)
        run_menu = menu.addMenu("&Run")
        self.actions: dict[str, QAction] = {}
        for key, text, short, shortcut, slot in (
            ("back", "Step back", "◀ Back", "Left", lambda: self.move(timeline.step_back)),
            ("step", "Step", "Step ▶", "Right", lambda: self.move(timeline.step_forward)),
            ("over", "Step over module call", "Over module", "Down", lambda: self.move(timeline.step_over_module)),
            ("to_backward", "Run to next backward", "To backward", "B", lambda: self.move(timeline.next_backward)),
            ("bw_node", "Step one backward node", "Backward node", "N", lambda: self.move(timeline.next_backward_node)),
            ("end_step", "Run to end of step", "End of step", "E", lambda: self.move(timeline.end_of_step)),
            ("next_step", "Next step", "Next step", "Shift+Right", lambda: self.move(timeline.next_step)),
            ("to_start", "Go to start", "Start", "Home", lambda: self.move(lambda run, c: 0)),
            ("to_end", "Run to end", "To end", "End", lambda: self.move(lambda run, c: timeline.last(run))),
            ("play", "Play / pause", "Play/pause", "Space", self.toggle_play),
            ("restart", "Restart", "Restart", "Ctrl+R", self.restart),
            ("stop", "Stop", "Stop ■", "Escape", self.sigStopRequested.emit),
        ):
            action = self._action(run_menu, text, QKeySequence(shortcut), slot)
            action.setIconText(short)
            action.setToolTip(f"{text} ({QKeySequence(shortcut).toString()})")
            bar.addAction(action)
            self.actions[key] = action
        bar.addSeparator()
        bar.addWidget(QLabel(" speed "))
        self.speed = QSlider(Qt.Horizontal)
        self.speed.setRange(1, 60)
        self.speed.setValue(6)
        self.speed.setFixedWidth(90)
        self.speed.setToolTip("animation speed: steps per second")
        self.speed.valueChanged.connect(self._on_speed)
        bar.addWidget(self.speed)
        self.addToolBarBreak(Qt.TopToolBarArea)
        bar = QToolBar("Timeline")
        bar.setObjectName("timeline")
        self.addToolBar(Qt.TopToolBarArea, bar)
        bar.addWidget(QLabel(" timeline "))
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setRange(0, 0)
        self.slider.setMinimumWidth(300)
        self.slider.setToolTip("the timeline: every recorded event; drag to scrub")
        self.slider.valueChanged.connect(self._on_slider)
        bar.addWidget(self.slider)
        self.position_label = QLabel("")
        self.position_label.setFixedWidth(560)  # fixed: a long text must not push it out of the bar
        bar.addWidget(self.position_label)
        view_menu = menu.addMenu("&View")
        for text, shortcut, slot in (("Fit to window", "F", self.view.fit), ("Zoom to selection", "Z", self.view.zoom_to_selection),
                                     ("Zoom in", "Ctrl++", lambda: self.view.zoom(1.25)),
                                     ("Zoom out", "Ctrl+-", lambda: self.view.zoom(0.8)),
                                     ("Find node", "Ctrl+F", lambda: self.search.setFocus())):
            action = self._action(view_menu, text, QKeySequence(shortcut), slot)
            if text == "Zoom in":
                action.setShortcuts([QKeySequence("Ctrl++"), QKeySequence("Ctrl+=")])
        overview = self._action(view_menu, "Overview in the corner", None,
                                lambda on: self.view.set_overview_enabled(on))
        overview.setCheckable(True)
        overview.setChecked(True)
        view_menu.addSeparator()  # panels closed with their × come back from here
        view_menu.addAction(self.toggles_dock.toggleViewAction())
        view_menu.addAction(self.bottom_dock.toggleViewAction())

    def _action(self, menu, text, shortcut, slot) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(shortcut)
        action.triggered.connect(slot)
        menu.addAction(action)
        self.addAction(action)
        return action

    # ------------------------------------------------------------------ files
    def recent_files(self) -> list[str]:
        value = self.settings.value("recent", [])
        if isinstance(value, str):
            value = [value]
        return [p for p in (value or []) if os.path.exists(p)][:10]

    def remember(self, path: str) -> None:
        recent = [p for p in self.recent_files() if p != path]
        self.settings.setValue("recent", [path] + recent[:9])
        self._fill_recent()

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        for path in self.recent_files():
            self.recent_menu.addAction(path, lambda p=path: self.sigOpenRequested.emit(p))

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a script or a trace", "",
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

    def show_error(self, title: str, message: str) -> None:
        self.statusBar().showMessage(message, 15000)
        if QApplication.platformName() not in ("offscreen", "minimal"):
            QMessageBox.warning(self, title, message)

    def show_warning(self, title: str, message: str) -> None:
        self.statusBar().showMessage(message.replace("\n\n", " "), 60000)
        if QApplication.platformName() not in ("offscreen", "minimal"):
            QMessageBox.information(self, title, message)

    # ------------------------------------------------------------------ runs
    def begin_run(self, script_path: str | None, options: RunOptions, run: Run | None = None) -> None:
        """Show a (new) run; the previous one stays as an overlay on the memory chart."""
        if script_path is None or script_path != self.script_path:
            self.earlier_runs.clear()  # another script: nothing to compare with
        elif self.run is not None and len(self.run.events) > 1:
            label = RunOptions.from_dict((self.run.start or {}).get("options", {})).label()
            self.earlier_runs.append((label, self.run))
        self.run = run if run is not None else Run()
        self.statusBar().clearMessage()  # what the last run ended with is not this run's news
        self.script_path = script_path
        self.options = options
        self.toggles.set_options(options)
        # a trace is a recording: running it again with other options needs its script
        self.toggles.setEnabled(bool(script_path))
        self.toggles.setToolTip("" if script_path else "a trace is a recording: open its script to run it again "
                                "with other options")
        self.cursor = -1
        self.follow_live = True
        self._finished = False
        self._chart_turn = 0
        self.selected_node = None
        self.inspector.show_empty()
        self.scene.set_run(self.run)
        self.view.set_message("")
        self.search.clear()
        if self.bottom_tabs.currentWidget() is self.console:  # brought forward by an earlier failure
            self.bottom_tabs.setCurrentWidget(self.memory)
        self.memory.clear_overlays()
        for i, (label, earlier) in enumerate(self.earlier_runs[-6:]):
            self.memory.add_overlay(earlier, f"earlier run: {label} options", OVERLAY_COLORS[i % len(OVERLAY_COLORS)])
        if self.stack.currentIndex() != 1:
            self.stack.setCurrentIndex(1)
            self.bottom_dock.show()
            self.toggles_dock.show()
            width = max(900, self.width())
            self.workspace.setSizes([470, width - 470 - 330, 330])
        name = os.path.basename(script_path) if script_path else "run"
        self.setWindowTitle(f"graphview — {name} [{options.label()}]")
        self._refresh_source()
        if run is not None and run.events:
            self._grew()
            self.set_cursor(self.overview_index())
            self.view.fit_readable()

    def append_events(self, events: list[dict]) -> None:
        """Live: the runner sent more events."""
        if self.run is None or not events:
            return
        first = len(self.run.events) == 0
        self.run.extend(events)
        if first:
            self._refresh_source()
            self._refresh_live()
            self.view.fit_readable()
        elif not self.live_refresh.isActive():
            self.live_refresh.start()

    def _refresh_live(self) -> None:
        """One round of catching up with a streaming run, in short event-loop slices (new items;
        then the cursor and its panels; then, every fifth round, the chart), so the window
        repaints and answers input between them. Reschedules itself while work is left."""
        run = self.run
        if run is None:
            return
        ended = run.end is not None
        # while the runner streams, small rounds keep the window responsive; once it has ended,
        # nothing competes and the backlog is worked off in larger ones
        more = self._grew(budget=200 if ended else 40, chart=False)
        following = self.follow_live
        self._chart_turn = (self._chart_turn + 1) % 5

        def cursor_slice() -> None:
            self.slices_pending -= 1
            if self.run is run and self.follow_live and not self.play_timer.isActive():
                self.set_cursor(len(run.events) - 1)
            if self._chart_turn == 0 or not more:
                self._later(chart_slice)

        def chart_slice() -> None:
            self.slices_pending -= 1
            if self.run is run:
                self.memory.show_run(run, self._device())
                self.memory.set_cursor(self.cursor)

        self._later(cursor_slice)
        if more:
            if not self.live_refresh.isActive():
                self.live_refresh.start()
        elif ended and not self._finished:
            self._finished = True
            self.follow_live = False
            QTimer.singleShot(0, lambda: self._finish_run(move=following))

    def _later(self, work) -> None:
        """Run ``work`` in a later pass of the event loop, after input and repaints: a timer a few
        ms out, not a zero-delay call, which Qt runs before anything else that is waiting."""
        self.slices_pending += 1
        QTimer.singleShot(4, work)

    def _finish_run(self, move: bool = True) -> None:
        """The run is over and drawn: its chart, diagnostics and (if the user was following it)
        the view of its last complete graph, in an event-loop slice of its own."""
        if self.run is None or self.run.end is None:
            return
        self.memory.show_run(self.run, self._device())
        self._summarize_end()
        if move:
            self.set_cursor(self.overview_index())
            self.view.fit_readable()
        else:
            self.set_cursor(self.cursor)

    def _grew(self, budget: int | None = None, chart: bool = True) -> bool:
        """Take in what the run gained; returns True while canvas items are still waiting."""
        run = self.run
        self.scene.live = run.end is None
        more = self.scene.grow(budget=budget)
        self.slider.blockSignals(True)
        self.slider.setRange(0, max(0, len(run.events) - 1))
        self.slider.blockSignals(False)
        if run.start:
            self.toggles.set_devices(run.start.get("devices") or [])
        if chart:
            self.memory.show_run(run, self._device())
        if budget is None and run.end is not None:
            self._summarize_end()
        return more

    def _summarize_end(self) -> None:
        run = self.run
        self._compare_with_earlier()
        findings = diagnose(run)
        self.diagnostics.show_findings(findings)
        self.bottom_tabs.setTabText(self.bottom_tabs.indexOf(self.diagnostics),
                                    f"Diagnostics ({len(findings)})" if findings else "Diagnostics")
        self.status_label.setText(f"run {run.status}: {len(run.events)} events, {len(run.ops)} ops, "
                                  f"{len(run.op_nodes)} autograd nodes, {len(run.backwards)} backward calls")
        if run.status == "stopped":  # the user pressed Stop: not an error
            self.statusBar().showMessage("stopped: everything recorded until then is kept", 20000)
        elif run.failed:
            self._report_failure(run)
        else:
            self._report_ineffective_options(run)

    def _report_ineffective_options(self, run: Run) -> None:
        """Options that changed nothing, or that left nothing to differentiate, say so."""
        notes = []
        options = RunOptions.from_dict((run.start or {}).get("options") or {})
        forced = [ev for ev in run.events if ev.get("ev") == "detach" and ev.get("forced")]
        for spec in options.detach_at:
            if not forced:
                notes.append(f"detach at {spec!r} matched nothing in this run")
        if run.mode == "step" and not run.backwards:
            notes.append("no backward ran: step() returned a tensor without grad_fn "
                         f"(grad mode {options.grad_mode}{', detach at ' + ', '.join(options.detach_at) if options.detach_at else ''})")
        if notes:
            text = "; ".join(notes)
            self.comparison = f"{self.comparison}; {text}" if self.comparison else text
            self.statusBar().showMessage(self.comparison, 30000)

    def _report_failure(self, run: Run) -> None:
        """A failed run says so where a user looks: the console comes to the front, the status bar
        names the error and its line, and an empty canvas explains itself."""
        error = run.errors[0][1] if run.errors else {}
        what = f"{error.get('type', '')}: {error.get('message', '')}".strip(": ") or (run.end or {}).get("message") \
            or run.status
        line = error.get("line")
        where = f" at line {line}" if line else ""
        ended = {"error": "failed", "exit": f"exited with code {(run.end or {}).get('exit_code')}",
                 "timeout": "was stopped at its time limit"}.get(run.status, run.status)
        self.statusBar().showMessage(f"the script {ended}{where}: "
                                     f"{what.splitlines()[0] if what else ''} (traceback in the Console)", 60000)
        self.bottom_tabs.setCurrentWidget(self.console)
        if not self.scene.node_items:
            self.view.set_message(f"The script stopped{where} before autograd recorded anything:\n{what}\n\n"
                                  "The Console tab below has the traceback; fix the script and open it again.")

    def _compare_with_earlier(self) -> None:
        """After a re-run with other options: what the toggle removed from (or added to) the graph."""
        if not self.earlier_runs:
            self.comparison = ""
            return
        from graphview.core.diff import describe, diff

        label, earlier = self.earlier_runs[-1]
        result = diff(earlier, None, self.run, None)
        removed = sorted(result.removed.items(), key=lambda kv: -kv[1])
        added = sorted(result.added.items(), key=lambda kv: -kv[1])
        parts = [f"compared with the earlier run ({label} options), last graph: {sum(result.removed.values())} nodes gone"]
        if removed:
            parts.append(", ".join(describe(sig) for sig, _ in removed[:4]) + (" …" if len(removed) > 4 else ""))
        parts.append(f"{sum(result.added.values())} new")
        if added:
            parts.append(", ".join(describe(sig) for sig, _ in added[:4]) + (" …" if len(added) > 4 else ""))
        # the whole run too: a toggle may change one step only (detach at a node of step 1)
        before, now = _nodes_per_step(earlier), _nodes_per_step(self.run)
        if before != now:
            parts.append(f"autograd nodes per step {', '.join(map(str, before))} → {', '.join(map(str, now))}")
        peak_before = max(earlier.peak_saved_bytes().values(), default=0)
        peak_now = max(self.run.peak_saved_bytes().values(), default=0)
        if peak_before != peak_now:
            parts.append(f"peak saved {human_bytes(peak_before)} → {human_bytes(peak_now)}")
        self.comparison = "; ".join(parts)
        self.statusBar().showMessage(self.comparison, 30000)

    def _device(self) -> str:
        if self.options.device:
            return self.options.device
        run = self.run
        if run is not None:
            used = [d for d in run.devices if d.startswith("cuda")]
            if used and any(p[1] == used[0] for p in run.memory_points):
                return used[0]
        return "cpu"

    def _refresh_source(self) -> None:
        source = (self.run.start or {}).get("source") if self.run else None
        if source is None and self.script_path and os.path.exists(self.script_path):
            try:
                with open(self.script_path, encoding="utf-8") as f:
                    source = f.read()
            except (OSError, UnicodeDecodeError):
                source = ""
        self.code.set_source(source or "")
        start = self.run.start if self.run else None
        if start and start.get("mode") == "step":
            steps = (start.get("options") or {}).get("steps") or self.options.steps
            self.code_note.setText(f"Step script: graphview calls <b>step()</b> {steps}× (Run options → steps) and runs "
                                   "backward and the optimizer on what it returns; the <code>__main__</code> block "
                                   "is not run.")
            self.code_note.show()
        else:
            self.code_note.hide()
        # the number of steps means something only for a step script
        self.toggles.steps.setEnabled(bool(start) and start.get("mode") == "step")

    def overview_index(self) -> int:
        """Where a finished run opens: its last graph complete, just before backward consumes it.

        At the very end of a run most graphs are gone (autograd frees them), so the end is a poor
        first view; the user steps or scrubs from there, or goes to the start (Home).
        """
        return timeline.overview(self.run)

    def restart(self) -> None:
        if self.script_path:
            self.sigRunRequested.emit(self.options)

    # ------------------------------------------------------------------ the cursor
    def move(self, step) -> None:
        if self.run is None or not self.run.events:
            return
        self.follow_live = False
        target = step(self.run, max(0, self.cursor))
        self.set_cursor(target)
        self._keep_in_view()

    def _keep_in_view(self) -> None:
        """Like a debugger following execution: scroll so the node the cursor's event made or ran
        is on screen (only when it is not; a view the user placed otherwise stays)."""
        item = self.scene.item_at_event(self.cursor)
        if item is not None:
            self.view.ensureVisible(item, 60, 40)

    def set_cursor(self, index: int, animate: bool = False) -> None:
        run = self.run
        if run is None or not run.events:
            return
        index = max(0, min(index, len(run.events) - 1))
        previous = self.cursor
        self.cursor = index
        self.follow_live = index == len(run.events) - 1 and self.follow_live
        self.slider.blockSignals(True)
        self.slider.setValue(index)
        self.slider.blockSignals(False)
        self.scene.set_cursor(index)
        self.view.overview.schedule()
        self.memory.set_cursor(index)
        self.code.highlight(timeline.line_at(run, index), self._error_line(index))
        self.console.show_run(run, index)
        self.ledger.show_run(run, index)
        if self.selected_node:
            self.inspector.show_node(run, self.selected_node, index)
        text = f" {index} / {len(run.events) - 1}   {timeline.describe(run, index)}"
        metrics = self.position_label.fontMetrics()
        self.position_label.setText(metrics.elidedText(text, Qt.ElideRight, self.position_label.width() - 8))
        self.position_label.setToolTip(timeline.describe(run, index))
        if animate and previous < index:
            self._animate(previous, index)

    def _error_line(self, index: int | None = None) -> int | None:
        run = self.run
        if run is None:
            return None
        limit = self.cursor if index is None else index
        for i, ev in run.errors:
            if i <= limit:
                return ev.get("line")
        return None

    def _animate(self, start: int, end: int) -> None:
        """Pulses for the gradients sent by nodes that finished between two cursor positions."""
        run = self.run
        duration = int(900 / max(1, self.speed.value()))
        for i in range(start + 1, end + 1):
            ev = run.events[i]
            if ev.get("ev") != "bw_node_done":
                continue
            op = run.op_nodes.get(ev["vid"])
            if op is None:
                continue
            texts = [short_value(g) if g is not None else "" for g in ev.get("grads_out") or []]
            self.scene.pulse(op.id, [t for t in texts if t][:1], duration)

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
        rows = "".join(f"<tr><td>{i}</td><td>{a:.8g}</td><td>{n:.8g}</td></tr>"
                       for i, (a, n) in enumerate(zip(result["autograd"], result["numeric"])))
        color = "#2e7d32" if worst <= 1e-4 else "#c62828"
        self.inspector.setHtml(
            f"<h3>Gradient check: {result['tensor']}</h3><p>d(first backward's loss)/d{result['tensor']} in float64,"
            f" central differences with eps={result['eps']:g}.</p><table><tr><th>element</th><th>autograd</th>"
            f"<th>finite differences</th></tr>{rows}</table>"
            f"<p style='color:{color}'>largest relative error {worst:.3g}: {verdict.lower()}</p>")

    def _on_finding(self, finding) -> None:
        if finding is None:
            return
        self.follow_live = False
        self.set_cursor(finding.index)
        if finding.node and finding.node in self.scene.node_items:
            self.scene.select_node(finding.node)
            self.view.center_on_node(finding.node)
        if finding.line:
            self.code.highlight(finding.line, self._error_line())

    def _on_slider(self, value: int) -> None:
        self.follow_live = False
        self.set_cursor(value)

    def toggle_play(self) -> None:
        if self.play_timer.isActive():
            self.play_timer.stop()
        else:
            if self.run is not None and self.cursor >= len(self.run.events) - 1:
                self.set_cursor(0)
            self.play_timer.start(int(1000 / self.speed.value()))

    def _on_speed(self, value: int) -> None:
        if self.play_timer.isActive():
            self.play_timer.start(int(1000 / value))

    def _play_tick(self) -> None:
        run = self.run
        if run is None or self.cursor >= len(run.events) - 1:
            self.play_timer.stop()
            return
        self.follow_live = False
        self.set_cursor(timeline.step_forward(run, self.cursor), animate=True)
        self._keep_in_view()

    # ------------------------------------------------------------------ selection and search
    def _on_node_selected(self, node_id: str) -> None:
        if not node_id:
            self.selected_node = None
            self.inspector.show_empty()
            return
        self.selected_node = node_id
        if self.run is not None:
            self.inspector.show_node(self.run, node_id, self.cursor)
            item = self.scene.node_items.get(node_id)
            if item is not None and item.node.line is not None:
                self.code.highlight(item.node.line, self._error_line())

    def _on_line_clicked(self, line: int) -> None:
        items = [i for i in self.scene.node_items.values() if i.node.line == line and i.isVisible()]
        self.scene.clearSelection()
        for item in items:
            item.setSelected(True)
        if items:
            self.view.centerOn(items[0])

    def find(self) -> None:
        text = self.search.text().strip().lower()
        if not text:
            return
        matches = [i for i in self.scene.node_items.values()
                   if i.isVisible() and (text in i.node.title.lower() or text in i.node.subtitle.lower()
                                         or text in (i.node.module or "").lower())]
        self.scene.clearSelection()
        for item in matches:
            item.setSelected(True)
        if matches:
            self.view.center_on_node(matches[0].node.id)
            self.statusBar().showMessage(f"{len(matches)} nodes match '{text}'", 5000)
        else:
            self.statusBar().showMessage(f"no node matches '{text}'", 5000)

    # ------------------------------------------------------------------ export
    def _ask_path(self, title: str, pattern: str) -> str | None:
        path, chosen = QFileDialog.getSaveFileName(self, title, "", pattern)
        if path and not os.path.splitext(path)[1]:
            # a name typed without a suffix gets the one of the file type chosen in the dialog
            match = re.search(r"\(\*(\.[\w.]+)\)", chosen or pattern)
            if match:
                path += match.group(1)
        return path or None

    def export_image(self, path: str | None = None) -> None:
        path = path or self._ask_path("Export graph image", "PNG (*.png);;SVG (*.svg);;PDF (*.pdf)")
        if path:
            self._guard(lambda: render_scene(self.scene, path, scale=2.0), path)

    def export_data(self, path: str | None = None) -> None:
        path = path or self._ask_path("Export graph data", "JSON (*.json);;DOT (*.dot);;GraphML (*.graphml)")
        if path and self.run is not None:
            self._guard(lambda: export_graph(self.run, path, at=self.cursor), path)

    def export_chart_png(self, path: str | None = None) -> None:
        path = path or self._ask_path("Export memory chart", "PNG (*.png)")
        if path:
            self._guard(lambda: save_png(self.memory.grab(), path), path)

    def export_chart_csv(self, path: str | None = None) -> None:
        path = path or self._ask_path("Export memory series", "CSV (*.csv)")
        if path:
            self._guard(lambda: save(path, self.memory.to_csv()), path)

    def export_trace(self, path: str | None = None) -> None:
        path = path or self._ask_path("Save run as trace", f"graphview trace (*{SUFFIX})")
        if path and self.run is not None:
            self._guard(lambda: write_trace(path, self.run.events), path)

    def _guard(self, action, path: str) -> bool:
        try:
            action()
        except (ExportError, TraceError, OSError) as exc:
            self.show_error("Export failed", str(exc))
            return False
        self.statusBar().showMessage(f"wrote {path}", 8000)
        return True

    def node_item(self, node_id: str) -> NodeItem | None:
        return self.scene.node_items.get(node_id)

    def closeEvent(self, event) -> None:
        self.play_timer.stop()
        self.sigStopRequested.emit()
        super().closeEvent(event)

