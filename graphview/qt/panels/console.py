"""The console: the script's output and errors up to the cursor; traceback lines link into the code."""

from __future__ import annotations

import bisect
import itertools

from PySide6.QtCore import Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QTextBrowser

from graphview.core.diagnostics import cut_finding
from graphview.core.events import summary_text
from graphview.core.run import Run
from graphview.qt import theme as themes
from graphview.qt.plain import esc
from graphview.qt.widgets.fonts import MONO

#: the events the console shows something for
_SHOWN = frozenset({"stdout", "stderr", "step_end", "output_capped", "error", "run_end"})
#: the most of the output (as HTML) the console shows: the newest part before the cursor, whole
#: pieces (a print, an error), with a line saying how many earlier ones it leaves out. The console
#: is built again at each step that adds output; a trace may hold errors without end, and 20,000
#: of them (7 MB) took 0.4 s a step
SHOWN_CAP = 1 << 20


class Console(QTextBrowser):
    """The script's output and errors; traceback lines are links into the code pane."""

    sigLineLink = Signal(object)  # a line of the script: a trace's number, past what a C int holds

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setFont(MONO)
        self._run: Run | None = None
        self.document().setDefaultStyleSheet(themes.css())
        themes.changes().changed.connect(self.apply_theme)
        self.anchorClicked.connect(lambda url: self.sigLineLink.emit(int(url.toString()[5:]))
                                   if url.toString().startswith("line:") else None)

    def set_run(self, run: Run) -> None:
        """A new run: the last run's output (and its "run ok") goes."""
        self._run = run
        self._shown_key = None
        self.clear()

    def apply_theme(self, theme=None) -> None:
        """The theme changed: the output again, its coloured words in the theme's colours."""
        self.document().setDefaultStyleSheet(themes.css())
        shown = getattr(self, "_shown_key", None)
        if shown is not None and self._run is not None and id(self._run) == shown[0]:
            self._shown_key = None
            self.show_run(self._run, self._shown_index)

    def set_cursor(self, index: int) -> None:
        self.show_run(self._run, index)

    def show_run(self, run: Run, index: int) -> None:
        """Output up to event ``index``; rebuilt only when that text changes."""
        pieces = self._pieces(run)
        shown = bisect.bisect_right(pieces, index, key=lambda piece: piece[0])  # (in the order of events)
        key = (id(run), shown)
        if key == getattr(self, "_shown_key", None):
            return
        self._shown_key, self._shown_index = key, index
        ends = self._cache[3]  # ends[i]: the length of pieces[:i], as HTML
        first = min(bisect.bisect_left(ends, ends[shown] - SHOWN_CAP, 0, shown), max(shown - 1, 0))  # the last whole
        cut = (f"<span class='muted'>── {first:,} earlier pieces of output are not shown: the console shows "
               f"the last MiB before the cursor ──</span>\n") if first else ""
        self.setHtml("<pre style='white-space:pre-wrap;margin:0'>" + cut
                     + "".join(p for _, p in pieces[first:shown]) + "</pre>")
        self.moveCursor(QTextCursor.End)

    def _pieces(self, run: Run) -> list[tuple[int, str]]:
        cache = getattr(self, "_cache", None)
        if cache is None or cache[0] is not run:
            cache = self._cache = (run, [], [0], [0])
        _, pieces, scanned, ends = cache
        self._scan(run, pieces, scanned[0])
        ends.extend(list(itertools.accumulate((len(p) for _, p in pieces[len(ends) - 1:]), initial=ends[-1]))[1:])
        scanned[0] = len(run.events)
        return pieces

    def _scan(self, run: Run, pieces: list[tuple[int, str]], start: int) -> None:
        """Append to ``pieces`` what the events from ``start`` on show."""
        events = run.events
        for i, ev in events.where(_SHOWN, start):
            kind = ev.get("ev")
            if kind == "stdout":
                pieces.append((i, esc(ev["text"])))
            elif kind == "stderr":
                pieces.append((i, f"<span class='warn'>{esc(ev['text'])}</span>"))
            elif kind == "step_end" and ev.get("result"):
                pieces.append((i, f"<span class='muted'>── step {esc(ev['step'])}: step() returned "
                                  f"{esc(summary_text(ev['result']))} ──</span>\n"))
            elif kind == "output_capped":
                pieces.append((i, f"<i>… {esc(ev['bytes'])} more characters of {esc(ev['stream'])} not kept</i>\n"))
            elif kind == "error":
                pieces.append((i, _error_html(ev)))
            elif kind == "run_end":
                status = ev.get("status")
                cut = cut_finding(run) if status == "ok" else None  # "run ok" would hide that nothing learned
                verdict = "error" if status != "ok" else "warn" if cut is not None else "ok"
                pieces.append((i, f"<span class='{verdict}'>── run {esc(status)}"
                                  f"{': ' + esc(ev['message']) if ev.get('message') else ''}"
                                  f"{', but ' + esc(cut.title) + ' (see Diagnostics)' if cut else ''} ──</span>\n"))


def _error_html(ev: dict) -> str:
    lines = ["<span class='error'>Traceback (in your script):</span>"]
    for frame in ev.get("traceback") or ():
        lines.append(f"  <a href='line:{esc(frame['line'])}'>line {esc(frame['line'])}</a>, in {esc(frame['func'])}: "
                     f"{esc(frame.get('text') or '')}")  # (a frame's source text may be missing)
    lines.append(f"<b class='error'>{esc(ev.get('type', 'Error'))}: {esc(ev.get('message', ''))}</b>")
    return "\n".join(lines) + "\n"
