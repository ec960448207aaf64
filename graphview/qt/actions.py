"""Every command of the window in one table: menus, the toolbar and the shortcut sheet are built from it.

A command is an :class:`ActionSpec`. :func:`build_actions` turns the table into ``QAction`` s on
a window: each goes into its menu (``"&File/&Export"`` is the Export submenu of File, made the
first time a spec names it), onto the stepping toolbar when it has toolbar text, and into the
window itself so its shortcut works wherever the focus is. :func:`shortcut_sheet` writes the
Help menu's list of keys from the same table, so it cannot drift from what the keys do.

Adding a command is one row here, with a handler that takes the window's :class:`Commands`
(what the handlers call: the window is one, and this module imports nothing of it).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Callable, Protocol, Union

from PySide6.QtCore import SignalInstance
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLineEdit, QMainWindow, QMenu, QStatusBar, QToolBar

from graphview.core import timeline
from graphview.core.run import Run
from graphview.qt import theme as themes
from graphview.qt.canvas import GraphView, first_drawn
from graphview.qt.player import Player

Shortcut = Union[str, QKeySequence.StandardKey]


class RunState(Protocol):
    going: bool  # a runner is running, or a trace is being read


class Commands(Protocol):
    """What the handlers and ``enabled_when`` s of :data:`ACTIONS` use of the window."""

    run: Run | None
    runs: RunState
    script_path: str | None
    player: Player
    view: GraphView
    search: QLineEdit
    sigStopRequested: SignalInstance

    @property
    def cursor(self) -> int: ...

    def open_dialog(self) -> None: ...
    def export_image(self) -> None: ...
    def export_data(self) -> None: ...
    def export_chart_png(self) -> None: ...
    def export_chart_csv(self) -> None: ...
    def export_trace(self) -> None: ...
    def export_animation(self) -> None: ...
    def export_web_page(self) -> None: ...
    def close(self) -> bool: ...
    def move(self, step: Callable) -> None: ...
    def restart(self) -> None: ...
    def set_follow(self, on: bool) -> None: ...
    def show_shortcuts(self) -> object: ...
    def show_about(self) -> object: ...
    def statusBar(self) -> QStatusBar: ...


@dataclass(frozen=True)
class ActionSpec:
    """One command of the window.

    Attributes
    ----------
    id : str
        The key of the action in the window's ``actions`` (``"step"``, ``"export_image"``).
    text : str
        The menu text (``&`` marks the mnemonic).
    menu : str
        The menu it is in, submenus after a ``/``: ``"&Run"``, ``"&File/&Export"``.
    handler : callable
        Called with the window (and, for a checkable action, whether it is now checked).
    shortcuts : tuple
        Key sequences, portable text (``"Shift+Right"``) or a ``QKeySequence.StandardKey``;
        the first is the one menus and the shortcut sheet show.
    toolbar : str
        Short text for the stepping toolbar; ``""`` keeps the action off it.
    enabled_when : callable or None
        Called with the window whenever the run changes; the action is greyed while it is false.
    checkable, checked : bool
        A toggle, and whether it starts on.
    separator_before : bool
        A separator line above it in its menu.
    """

    id: str
    text: str
    menu: str
    handler: Callable
    shortcuts: tuple[Shortcut, ...] = ()
    toolbar: str = ""
    enabled_when: Callable[[Commands], bool] | None = None
    checkable: bool = False
    checked: bool = False
    separator_before: bool = False


def _has_run(window: Commands) -> bool:
    return window.run is not None


def _going(window: Commands) -> bool:
    """A runner is running, or a trace is being read: something Stop stops."""
    return window.run is not None and window.runs.going


def _has_script(window: Commands) -> bool:
    return bool(window.script_path)


def _move(step: Callable) -> Callable[[Commands], None]:
    return lambda window: window.move(step)


def _step(forward: bool) -> Callable[[Commands], None]:
    """Step (→) or Step back (←): one stop, passing over the stops where the canvas draws nothing
    (:mod:`graphview.qt.canvas.first_drawn`)."""
    def press(window: Commands) -> None:
        if window.run is None or not window.run.events:
            return
        first_drawn.step(window.view.scene(), window.run, max(0, window.cursor), forward,
                         lambda index: window.move(lambda run, cursor: index))
    return press


#: what the status bar says when Fit shows the graph's width around the current node, not all of it
FIT_NOT_WHOLE = "Fit shows the graph's width, where its text reads: F again shows all of it ([ shuts boxes)"
#: and when Fit pressed again shows all of it
FIT_WHOLE_SMALL = "Fit shows all of the graph, smaller than its text reads: F again shows its width"
#: and when all of it would be too thin a column to see: the part round the current node, as small as it is seen
FIT_OVERVIEW_PART = ("Fit shows the graph as small as its nodes are seen, round the current node: the corner's "
                     "overview shows all of it ([ shuts boxes, F again shows its width)")


def _fit(window: Commands) -> None:
    """View > Fit to window; where the whole graph would not read, the status bar says why Fit
    did not show all of it (a newcomer read it as Fit not working), and Fit pressed again on that
    view shows all of it, small (what a newcomer expected of Fit). The note goes once the view
    changes (:func:`forget_fit_note`)."""
    view = window.view
    if view.showing_fit_width():
        if not view.fit(whole=True):
            window.statusBar().showMessage(FIT_OVERVIEW_PART, 10000)
        elif view.transform().m11() < view.readable_scale():
            window.statusBar().showMessage(FIT_WHOLE_SMALL, 10000)
    elif not view.fit():
        window.statusBar().showMessage(FIT_NOT_WHOLE, 10000)


def forget_fit_note(window: Commands) -> None:
    """What the canvas shows changed (a step, a zoom, a box opened or shut): a Fit's note in the
    status bar no longer describes it and goes at once (it stayed its ten seconds over a view at
    another zoom)."""
    if window.statusBar().currentMessage() in (FIT_NOT_WHOLE, FIT_WHOLE_SMALL, FIT_OVERVIEW_PART):
        window.statusBar().clearMessage()


RUN, VIEW, FILE, EXPORT, HELP = "&Run", "&View", "&File", "&File/&Export", "&Help"

ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("open", "&Open…", FILE, lambda w: w.open_dialog(), (QKeySequence.Open,)),
    ActionSpec("export_image", "Graph as PNG / SVG / PDF…", EXPORT, lambda w: w.export_image(), ("Ctrl+E",),
               enabled_when=_has_run),
    ActionSpec("export_data", "Graph data as JSON / DOT / GraphML…", EXPORT, lambda w: w.export_data(),
               enabled_when=_has_run),
    ActionSpec("export_chart_png", "Memory chart as PNG…", EXPORT, lambda w: w.export_chart_png(),
               enabled_when=_has_run),
    ActionSpec("export_chart_csv", "Memory chart as CSV…", EXPORT, lambda w: w.export_chart_csv(),
               enabled_when=_has_run),
    ActionSpec("export_trace", "Run as trace file…", EXPORT, lambda w: w.export_trace(), (QKeySequence.Save,),
               enabled_when=_has_run),
    ActionSpec("export_animation", "Animation (GIF / APNG / MP4 / WebM)…", EXPORT, lambda w: w.export_animation(),
               enabled_when=_has_run, separator_before=True),
    ActionSpec("export_web_page", "Web page to step through…", EXPORT, lambda w: w.export_web_page(),
               enabled_when=_has_run),
    ActionSpec("quit", "&Quit", FILE, lambda w: w.close(), (QKeySequence.Quit,), separator_before=True),
    ActionSpec("back", "Step back", RUN, _step(False), ("Left",), "◀ Back", _has_run),
    ActionSpec("step", "Step", RUN, _step(True), ("Right",), "Step ▶", _has_run),
    ActionSpec("over", "Step over module call", RUN, _move(timeline.step_over_module), ("Down",), "Over module",
               _has_run),
    ActionSpec("to_backward", "Run to next backward", RUN, _move(timeline.next_backward), ("B",), "To backward",
               _has_run),
    ActionSpec("bw_node", "Step one backward node", RUN, _move(timeline.next_backward_node), ("N",),
               "Backward node", _has_run),
    ActionSpec("end_step", "Run to end of step", RUN, _move(timeline.end_of_step), ("E",), "End of step", _has_run),
    ActionSpec("next_step", "Next step", RUN, _move(timeline.next_step), ("Shift+Right",), "Next step", _has_run),
    ActionSpec("to_start", "Go to start", RUN, _move(lambda run, cursor: 0), ("Home",), "Start", _has_run),
    ActionSpec("to_end", "Run to end", RUN, _move(lambda run, cursor: timeline.last(run)), ("End",), "To end",
               _has_run),
    ActionSpec("play", "Play / pause", RUN, lambda w: w.player.toggle(), ("Space",), "Play/pause", _has_run),
    ActionSpec("restart", "Restart", RUN, lambda w: w.restart(), ("Ctrl+R",), "Restart", _has_script),
    ActionSpec("stop", "Stop", RUN, lambda w: w.sigStopRequested.emit(), ("Escape",), "Stop ■", _going),
    ActionSpec("fit", "Fit to window", VIEW, _fit, ("F",)),
    ActionSpec("zoom_selection", "Zoom to selection", VIEW, lambda w: w.view.zoom_to_selection(), ("Z",)),
    ActionSpec("zoom_in", "Zoom in", VIEW, lambda w: w.view.zoom(1.25), ("Ctrl++", "Ctrl+=")),
    ActionSpec("zoom_out", "Zoom out", VIEW, lambda w: w.view.zoom(0.8), ("Ctrl+-",)),
    ActionSpec("open_level", "Open module boxes one level deeper", VIEW, lambda w: w.view.change_level(1), ("]",),
               enabled_when=_has_run, separator_before=True),
    ActionSpec("shut_level", "Shut module boxes one level up", VIEW, lambda w: w.view.change_level(-1), ("[",),
               enabled_when=_has_run),
    ActionSpec("open_all", "Open every module box", VIEW, lambda w: w.view.change_level(None), ("Ctrl+]",),
               enabled_when=_has_run),
    ActionSpec("find", "Find node", VIEW, lambda w: w.search.setFocus(), ("Ctrl+F",)),
    ActionSpec("overview", "Overview in the corner", VIEW, lambda w, on: w.view.set_overview_enabled(on),
               checkable=True, checked=True),
    ActionSpec("follow", "Follow the current node while stepping", VIEW, lambda w, on: w.set_follow(on),
               checkable=True, checked=True),
    ActionSpec("shortcuts", "&Keyboard shortcuts", HELP, lambda w: w.show_shortcuts(), ("F1",)),
    ActionSpec("about", "&About graphview", HELP, lambda w: w.show_about()),
)


def key_text(shortcut: Shortcut) -> str:
    """A shortcut as the user reads it (``Ctrl+O``, ``Shift+Right``)."""
    return QKeySequence(shortcut).toString(QKeySequence.NativeText)


def build_actions(window: QMainWindow, toolbar: QToolBar, specs: tuple[ActionSpec, ...] = ACTIONS
                  ) -> tuple[dict[str, QAction], dict[str, QMenu]]:
    """The window's ``QAction`` s by id, and its menus by path (``"&File/&Export"``). The handlers
    are called with ``window``, which is also the :class:`Commands` they use."""
    actions: dict[str, QAction] = {}
    menus: dict[str, QMenu] = {}
    for spec in specs:
        menu = _menu(window, menus, spec.menu)
        if spec.separator_before:
            menu.addSeparator()
        action = QAction(spec.text, window)
        action.setShortcuts([QKeySequence(s) for s in spec.shortcuts])
        action.setCheckable(spec.checkable)
        action.setChecked(spec.checked)
        if spec.checkable:
            action.toggled.connect(lambda on, spec=spec: spec.handler(window, on))
        else:
            action.triggered.connect(lambda _=False, spec=spec: spec.handler(window))
        menu.addAction(action)
        window.addAction(action)
        if spec.toolbar:
            action.setIconText(spec.toolbar)
            action.setToolTip(f"{spec.text} ({key_text(spec.shortcuts[0])})" if spec.shortcuts else spec.text)
            toolbar.addAction(action)
        actions[spec.id] = action
    return actions, menus


def _menu(window: QMainWindow, menus: dict[str, QMenu], path: str) -> QMenu:
    if path not in menus:
        parent, _, name = path.rpartition("/")
        menus[path] = (_menu(window, menus, parent) if parent else window.menuBar()).addMenu(name)
    return menus[path]


def update_enabled(window: Commands, actions: dict[str, QAction], specs: tuple[ActionSpec, ...] = ACTIONS) -> None:
    """Grey the actions whose ``enabled_when`` is false for the window as it is now."""
    for spec in specs:
        if spec.enabled_when is not None:
            actions[spec.id].setEnabled(bool(spec.enabled_when(window)))


def menu_title(path: str) -> str:
    """A menu path as the user reads it: ``"&File/&Export"`` is ``"File › Export"``."""
    return path.replace("&", "").replace("/", " › ")


def shortcut_sheet(specs: tuple[ActionSpec, ...] = ACTIONS) -> str:
    """Every command with a key, grouped by menu in the menus' order, as an HTML table with a
    heading row per menu."""
    groups: dict[str, list[str]] = {}
    heading = themes.current().canvas.border["op"]
    for spec in specs:
        rows = groups.setdefault(spec.menu, [])
        keys = " or ".join(text for text in map(key_text, spec.shortcuts) if text)
        if keys:  # a standard key this platform binds to nothing (Quit on some) is left out
            rows.append(f"<tr><td style='padding-right:16px'><b>{html.escape(keys)}</b></td>"
                        f"<td>{html.escape(spec.text.replace('&', ''))}</td></tr>")
    sections = (f"<tr><td colspan='2' style='padding-top:10px; color:{heading}; font-size:large'>"
                f"{html.escape(menu_title(menu))}</td></tr>{''.join(rows)}" for menu, rows in groups.items() if rows)
    return f"<table>{''.join(sections)}</table>"  # one table: the keys line up from menu to menu
