"""The diagnostics tab: the autograd pitfalls found in the run, each with what happened and the fix."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QSplitter, QTextBrowser, QTreeWidget, QTreeWidgetItem

from graphview.core.run import Run
from graphview.qt import theme as themes


class DiagnosticsPanel(QSplitter):
    """The pitfalls found in the run: a list (click one to go to its line, node and moment) and,
    beside it, the selected finding in full: what autograd did, and the fix."""

    sigFinding = Signal(object)

    def __init__(self, parent=None) -> None:
        super().__init__(Qt.Horizontal, parent)
        self.list = QTreeWidget()
        self.list.setHeaderLabels(["pitfall", "line"])
        self.list.setRootIsDecorated(False)
        self.list.setColumnWidth(0, 360)
        self.detail = QTextBrowser()
        self.detail.setOpenLinks(False)
        self.addWidget(self.list)
        self.addWidget(self.detail)
        self.setStretchFactor(0, 2)
        self.setStretchFactor(1, 3)
        self.findings: list = []
        self.list.currentItemChanged.connect(lambda item, _: self._show_detail(item))
        self.list.itemClicked.connect(lambda item, col: self._chosen(item))
        self.detail.document().setDefaultStyleSheet(themes.css())
        themes.changes().changed.connect(self.apply_theme)

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
        if finding is None:
            self.detail.setHtml("<p class='muted'>no autograd pitfalls found in this run</p>"
                                if not self.findings else "")
            return
        where = f" (line {finding.line})" if finding.line else ""
        self.detail.setHtml(f"<p><b class='warn'>{html.escape(finding.title)}</b>{where}</p>"
                            f"<p>{html.escape(finding.explanation)}</p>"
                            f"<p><b>Fix:</b> {html.escape(finding.fix)}</p>")

    def set_run(self, run: Run) -> None:
        """A new run: the last run's findings go; this run's come when it has ended."""
        if run.end is None and self.findings:
            self.findings = []
            self.list.clear()
            self.detail.setHtml("<p class='muted'>pitfalls are listed when the run ends</p>")

    def set_cursor(self, index: int) -> None:
        """Findings are about the whole run: nothing here moves with the cursor."""

    def show_findings(self, findings: list) -> None:
        if self.list.topLevelItemCount() and [f.to_dict() for f in findings] == [f.to_dict() for f in self.findings]:
            return
        self.findings = list(findings)
        self.list.clear()
        for f in findings:
            item = QTreeWidgetItem([f.title, str(f.line or "")])
            item.setData(0, Qt.UserRole, f)
            item.setToolTip(0, f"{f.explanation}\n\nFix: {f.fix}")
            item.setForeground(0, QColor(themes.current().warn))
            self.list.addTopLevelItem(item)
        if not findings:
            self.list.addTopLevelItem(QTreeWidgetItem(["no autograd pitfalls found in this run", ""]))
            self._show_detail(None)
        else:
            self.list.setCurrentItem(self.list.topLevelItem(0))
