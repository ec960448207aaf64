"""The diagnostics tab: the autograd pitfalls found in the run, each with what happened and the fix,
and what activation checkpointing would cut (measured, once tried)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QPushButton, QSplitter, QTextBrowser, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from graphview.core.run import Run
from graphview.qt import theme as themes
from graphview.qt.plain import esc, text_tip
from graphview.qt.widgets.wrapping import wrap_lines


#: what the panel says of a run that was checked and has no finding
NONE_FOUND = "no autograd pitfalls found in this run"


class DiagnosticsPanel(QSplitter):
    """The pitfalls found in the run: a list (click one to go to its line, node and moment) and,
    beside it, the selected finding in full: what autograd did, and the fix."""

    sigFinding = Signal(object)
    sigTryCheckpoint = Signal(str)  # a suggestion's "try it": re-run with --checkpoint PATTERN
    SUGGESTION = Qt.UserRole + 1

    def __init__(self, parent=None) -> None:
        super().__init__(Qt.Horizontal, parent)
        self.list = QTreeWidget()
        self.list.setHeaderLabels(["pitfall", "line"])
        self.list.setRootIsDecorated(False)
        wrap_lines(self.list, {1: (0.0, 44, 44)})  # a finding's title wraps; the line number keeps its column
        self.detail = QTextBrowser()
        # one above the other in a short tab (640x400): the two scroll rather than hold the window tall
        self.list.setMinimumHeight(44)
        self.detail.setMinimumHeight(44)
        self.detail.setOpenLinks(False)
        self.try_button = QPushButton()
        self.try_button.hide()
        self.try_button.clicked.connect(self._try)
        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(self.detail, 1)
        side_layout.addWidget(self.try_button)
        self.addWidget(self.list)
        self.addWidget(side)
        self._side = side  # (hidden while the list holds only its line saying there is nothing to read)
        self.suggestions: list = []  # graphview.core.whatif.Suggestion, biggest first
        self.said_when_none = NONE_FOUND  # what the panel says when the run has no finding
        self.measured: list[str] = []  # what tried suggestions did, measured by their re-runs
        self.no_rerun: str | None = None  # why "Try it" cannot re-run this run (a trace has no script to run)
        self.setStretchFactor(0, 2)
        self.setStretchFactor(1, 3)
        self.findings: list = []
        self.list.currentItemChanged.connect(lambda item, _: self._show_detail(item))
        self.list.itemClicked.connect(lambda item, col: self._chosen(item))
        self.detail.document().setDefaultStyleSheet(themes.css())
        themes.changes().changed.connect(self.apply_theme)

    #: narrower than this, the list goes above the selected finding (beside it, at 1366x768, each
    #: finding's title was cut to "suggestion: checkp")
    SIDE_BY_SIDE_MIN = 560

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        orientation = Qt.Horizontal if self.width() >= self.SIDE_BY_SIDE_MIN else Qt.Vertical
        if orientation != self.orientation():
            self.setOrientation(orientation)
        self._fit_list()  # (the rows' heights change with the width)

    #: one above the other, the list takes at most this share of the height (the detail the rest)
    LIST_SHARE = 0.4

    def _fit_list(self) -> None:
        """One above the other: the list as tall as its rows (at most :data:`LIST_SHARE` of the
        panel), the selected finding below it the rest (at 1366x768, 2:3 of 235 px left the detail
        seven lines while the list's rows took less than its room)."""
        if self.orientation() != Qt.Vertical or not self._side.isVisible():
            return
        rows = sum(self.list.visualItemRect(self.list.topLevelItem(i)).height()
                   for i in range(self.list.topLevelItemCount()))
        total = sum(self.sizes())
        wanted = rows + self.list.header().height() + 2 * self.list.frameWidth()
        height = max(self.list.minimumHeight(), min(wanted, int(total * self.LIST_SHARE)))
        self.setSizes([height, total - height])

    def apply_theme(self, theme=None) -> None:
        """The theme changed: the findings' words in its colours."""
        self.detail.document().setDefaultStyleSheet(themes.css())
        for i in range(self.list.topLevelItemCount()):
            item = self.list.topLevelItem(i)
            if item.data(0, Qt.UserRole) is not None:
                item.setForeground(0, QColor(themes.current().warn))
        if self.findings or self.list.topLevelItemCount():
            self._show_detail(self.list.currentItem())

    def topLevelItemCount(self) -> int:
        return self.list.topLevelItemCount()

    def topLevelItem(self, index: int):
        return self.list.topLevelItem(index)

    def _chosen(self, item) -> None:
        finding = item.data(0, Qt.UserRole) if item is not None else None
        if finding is not None:
            self.sigFinding.emit(finding)

    def _show_detail(self, item) -> None:
        finding = item.data(0, Qt.UserRole) if item is not None else None
        suggestion = item.data(0, self.SUGGESTION) if item is not None else None
        self.try_button.setVisible(suggestion is not None)
        if suggestion is not None:
            # (the module is named in the detail above: a path in the button's words made it as wide)
            self.try_button.setText("Try it: re-run with this checkpoint")
            self.try_button.setEnabled(self.no_rerun is None)
            self.try_button.setToolTip(text_tip(self.no_rerun or f"re-run the script with checkpoint {suggestion.pattern}"))
            why = f"<p class='warn'>{esc(self.no_rerun)}</p>" if self.no_rerun else ""
            self.detail.setHtml(f"<p><b>Suggestion:</b> {esc(suggestion.text())}.</p>{why}"
                                "<p>Checkpointing runs that module's forward under torch.utils.checkpoint.checkpoint("
                                "..., use_reentrant=False): the activations its nodes save are dropped and recomputed "
                                "during backward, where they are held again until the nodes that need them have run. "
                                "The saving above counts that; the weights the module saves are not in it, as the "
                                "model holds them anyway. The re-run measures the new peak of activations.</p>")
            return
        measured = item.data(0, self.SUGGESTION + 1) if item is not None else None
        if measured is not None:
            self.detail.setHtml(f"<p><b>Measured:</b> {esc(measured)}</p>")
            return
        if finding is None:
            self.detail.setHtml(f"<p class='muted'>{esc(self.said_when_none)}</p>" if not self.findings else "")
            return
        where = esc(f" (line {finding.line})") if finding.line else ""
        self.detail.setHtml(f"<p><b class='warn'>{esc(finding.title)}</b>{where}</p>"
                            f"<p>{esc(finding.explanation)}</p>"
                            f"<p><b>Fix:</b> {esc(finding.fix)}</p>")

    def set_run(self, run: Run) -> None:
        """A new run: the last run's findings go; this run's come when it has ended."""
        if run.end is None and self.findings:
            self.findings = []
            self.list.clear()
            self.detail.setHtml("<p class='muted'>pitfalls are listed when the run ends</p>")

    def set_rerun(self, why_not: str | None) -> None:
        """Whether "Try it" can re-run the run shown; ``why_not``: what to do instead (a trace is a
        recording: clicked, the button ran nothing and said nothing)."""
        self.no_rerun = why_not
        item = self.list.currentItem()
        if item is not None and item.data(0, self.SUGGESTION) is not None:
            self._show_detail(item)

    def set_cursor(self, index: int) -> None:
        """Findings are about the whole run: nothing here moves with the cursor."""

    def set_suggestions(self, suggestions: list, measured: list[str]) -> None:
        """What checkpointing would cut (listed after the pitfalls from the next :meth:`show_findings`)."""
        self.suggestions, self.measured = list(suggestions), list(measured)
        self._shown = None

    def _try(self) -> None:
        item = self.list.currentItem()
        suggestion = item.data(0, self.SUGGESTION) if item is not None else None
        if suggestion is not None and self.no_rerun is None:
            self.sigTryCheckpoint.emit(suggestion.pattern)

    def show_findings(self, findings: list, unchecked: str | None = None) -> None:
        """List ``findings`` (then the measured re-runs and the suggestions); ``unchecked``: why
        there was nothing to check (``Run.nothing_checked``), said instead of a clean bill."""
        shown = ([f.to_dict() for f in findings], [s.text() for s in self.suggestions], self.measured, unchecked)
        if self.list.topLevelItemCount() and shown == getattr(self, "_shown", None):
            return
        self._shown = shown
        self.findings = list(findings)
        self.list.clear()
        for f in findings:
            item = QTreeWidgetItem([f.title, str(f.line or "")])
            item.setData(0, Qt.UserRole, f)
            item.setToolTip(0, text_tip(f"{f.explanation}\n\nFix: {f.fix}"))
            item.setForeground(0, QColor(themes.current().warn))
            self.list.addTopLevelItem(item)
        self.said_when_none = unchecked or NONE_FOUND
        if not findings:
            item = QTreeWidgetItem([self.said_when_none, ""])
            item.setToolTip(0, text_tip(self.said_when_none))
            self.list.addTopLevelItem(item)
        for text in self.measured:
            item = QTreeWidgetItem([f"✓ {text}", ""])
            item.setData(0, self.SUGGESTION + 1, text)
            item.setToolTip(0, text_tip(text))
            self.list.addTopLevelItem(item)
        for suggestion in self.suggestions:
            # (its title: the whole text wrapped taller than a short list, cut mid-sentence; the detail says it)
            item = QTreeWidgetItem([f"suggestion: {suggestion.title()}", ""])
            item.setData(0, self.SUGGESTION, suggestion)
            item.setToolTip(0, text_tip(f"{suggestion.text()}\n\nselect it, then 'Try it' re-runs with that checkpoint"))
            self.list.addTopLevelItem(item)
        # the first thing worth reading in full is selected: a pitfall, else what a tried checkpoint
        # measured or a suggestion with its "Try it" (the list's own line says there is no pitfall:
        # the detail repeating it left the suggestion cut off in a short list, its button hidden)
        first = 0 if findings else 1
        # the list's line alone (no pitfall, nothing tried or suggested): the detail beside it only
        # said the same again; the list takes the room
        self._side.setVisible(first < self.list.topLevelItemCount())
        if first < self.list.topLevelItemCount():
            self.list.setCurrentItem(self.list.topLevelItem(first))
        else:
            self._show_detail(None)
        self._fit_list()
