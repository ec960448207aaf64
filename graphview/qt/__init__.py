"""The window (PySide6, pyqtgraph). Never imports torch or graphview.capture.

Where things are:

- ``main_window``: MainWindow, the layout and the wiring, nothing else; its parts: ``window_docks``
  (the panels as docks, the timeline views' tabs), ``window_menus`` (menus and toolbars),
  ``recent_files`` (File > Open recent), ``node_search`` (search and code-line clicks);
- ``session``: Session, what every view shows (run, cursor, selection, follow-live), and the
  SessionView protocol (``set_run``, ``set_cursor``) the views implement;
- ``actions``: the table of commands; menus, the toolbar and the shortcut sheet are built from it;
- ``run_controller``: RunController, a run's lifecycle (begin, grow while live, finish, summarise),
  which reaches the window through ``run_window.RunWindow``; the other helpers (``player``,
  ``run_placement``, ``pending_step``, ``export_dialogs``, ``actions`` and the window's parts) are given the session, the
  canvas and the callables they use, and import nothing of the main window;
- ``player``: play / pause and the gradient pulses; ``timeline_bar``: the slider and the event's words;
- ``canvas/``: the graph (items, scene, view and its parts, minimap); ``theme`` and ``theme_changes``
  (the signal that a theme was applied, apart so that the canvas needs nothing of ``theme``); ``panels/``: one module per panel;
- ``widgets/``: small widgets not tied to a run; ``start_page``; ``export_dialogs``: File > Export;
- ``export``: drawing a run or a scene into PNG / SVG / PDF (also used by the command line);
- ``formatting``: bytes and value summaries in a few words.

A new timeline panel is one module in ``panels/`` implementing SessionView, and one line in
``MainWindow._build_docks`` that adds it as a tab and attaches it to the session.
"""
