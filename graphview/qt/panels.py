"""The panels around the canvas: code, inspector, console, gradient ledger, memory chart, toggles."""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRect, QRectF, QSize, Qt, QUrl, Signal
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QTextCursor, QTextFormat
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFormLayout, QPlainTextEdit, QPushButton, QSpinBox, QSplitter,
                               QTextBrowser, QTextEdit, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from graphview.core.events import summary_text
from graphview.core.options import GRAD_MODES, RunOptions
from graphview.core.run import ACCUMULATE_GRAD, Run
from graphview.qt.canvas import human_bytes

MONO = QFont("DejaVu Sans Mono", 10)


# ---------------------------------------------------------------------- code
class _LineNumbers(QWidget):
    def __init__(self, editor: "CodeView") -> None:
        super().__init__(editor)
        self.editor = editor

    def sizeHint(self) -> QSize:
        return QSize(self.editor.number_width(), 0)

    def paintEvent(self, event) -> None:
        self.editor.paint_numbers(event)


class CodeView(QPlainTextEdit):
    """The script's source, the line at the cursor highlighted; a click selects what it created."""

    sigLineClicked = Signal(int)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setFont(MONO)
        self.setMinimumWidth(300)
        self.setLineWrapMode(QPlainTextEdit.WidgetWidth)  # long docstring lines stay readable
        self._numbers = _LineNumbers(self)
        self.blockCountChanged.connect(lambda _: self.setViewportMargins(self.number_width(), 0, 0, 0))
        self.updateRequest.connect(self._scroll_numbers)
        self.current_line: int | None = None
        self.error_line: int | None = None
        self.setViewportMargins(self.number_width(), 0, 0, 0)

    def number_width(self) -> int:
        digits = len(str(max(1, self.blockCount())))
        return 14 + self.fontMetrics().horizontalAdvance("9") * max(3, digits)

    def _scroll_numbers(self, rect, dy) -> None:
        if dy:
            self._numbers.scroll(0, dy)
        else:
            self._numbers.update(0, rect.y(), self._numbers.width(), rect.height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        cr = self.contentsRect()
        self._numbers.setGeometry(QRect(cr.left(), cr.top(), self.number_width(), cr.height()))

    def paint_numbers(self, event) -> None:
        painter = QPainter(self._numbers)
        painter.fillRect(event.rect(), QColor("#f3f4f6"))
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        bottom = top + round(self.blockBoundingRect(block).height())
        while block.isValid() and top <= event.rect().bottom():
            number = block.blockNumber() + 1
            if block.isVisible() and bottom >= event.rect().top():
                painter.setPen(QColor("#c62828") if number == self.error_line else
                               QColor("#111827") if number == self.current_line else QColor("#9ca3af"))
                painter.drawText(0, top, self._numbers.width() - 6, self.fontMetrics().height(),
                                 Qt.AlignRight, str(number))
            block = block.next()
            top = bottom
            bottom = top + round(self.blockBoundingRect(block).height())

    def set_source(self, text: str) -> None:
        self.setPlainText(text)
        self.current_line = None
        self.error_line = None

    def highlight(self, line: int | None, error_line: int | None = None) -> None:
        self.current_line, self.error_line = line, error_line
        selections = []
        for number, color in ((error_line, QColor("#fde2e2")), (line, QColor("#fff3c4"))):
            if number is None or number < 1 or number > self.blockCount():
                continue
            sel = QTextEdit.ExtraSelection()
            sel.format.setBackground(color)
            sel.format.setProperty(QTextFormat.FullWidthSelection, True)
            sel.cursor = QTextCursor(self.document().findBlockByNumber(number - 1))
            selections.append(sel)
        self.setExtraSelections(selections)
        if line is not None and 1 <= line <= self.blockCount():
            cursor = QTextCursor(self.document().findBlockByNumber(line - 1))
            self.setTextCursor(cursor)
            self.ensureCursorVisible()
        self._numbers.update()

    def mouseReleaseEvent(self, event) -> None:
        super().mouseReleaseEvent(event)
        line = self.cursorForPosition(event.position().toPoint()).blockNumber() + 1
        self.sigLineClicked.emit(line)


# ---------------------------------------------------------------------- inspector
class Inspector(QTextBrowser):
    """Everything recorded about the selected node, at the cursor."""

    sigLineLink = Signal(int)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._images: dict[str, QImage] = {}
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._on_link)
        self.setMinimumWidth(240)
        self.show_empty()

    def show_empty(self) -> None:
        self.setHtml("<p style='color:#6b7280'>Click a node in the graph to see everything recorded about it.</p>")

    def _on_link(self, url: QUrl) -> None:
        text = url.toString()
        if text.startswith("line:"):
            self.sigLineLink.emit(int(text[5:]))

    def _histogram(self, name: str, summary) -> str:
        """An inline picture of ``summary``'s value histogram (when it has one), as HTML."""
        stats = summary.get("stats") if isinstance(summary, dict) else None
        counts = stats.get("hist") if isinstance(stats, dict) else None
        if not counts:
            return ""
        # as wide as the value column can be without a horizontal scroll bar
        width = max(120, min(320, self.viewport().width() - 118))
        self._images[name] = histogram_image(counts, stats["min"], stats["max"], width=width)
        sampled = stats.get("hist_of")
        note = (f"<br><span style='color:#6b7280;font-size:small'>histogram of {sampled:,} evenly spaced values "
                f"of {stats.get('numel', 0):,}</span>" if sampled else "")
        return f"<br><img src='hist:{name}'>{note}"

    def loadResource(self, kind: int, url: QUrl):
        if url.scheme() == "hist" and url.path() in self._images:
            return self._images[url.path()]
        return super().loadResource(kind, url)

    def show_node(self, run: Run, node_id: str, index: int) -> None:
        self._images = {}
        rows: list[tuple[str, str]] = []
        title = node_id
        if node_id.startswith("op"):
            op = run.op_nodes.get(int(node_id[2:]))
            if op is None:
                return self.show_empty()
            title = "AccumulateGrad" if op.name == ACCUMULATE_GRAD else op.name
            rows.append(("kind", "AccumulateGrad (writes a leaf's .grad)" if op.name == ACCUMULATE_GRAD else "grad_fn node"))
            if op.leaf is not None:
                rows.append(("leaf", html.escape(run.tensor_name(op.leaf) or f"tensor {op.leaf}")))
            if op.op:
                rows.append(("created by", html.escape(op.op)))
            if op.module:
                rows.append(("module", html.escape(op.module)))
            if op.line is not None:
                rows.append(("source line", f"<a href='line:{op.line}'>line {op.line}</a>"))
            if op.seq is not None:
                rows.append(("sequence nr", str(op.seq)))
            nexts = []
            for child, nr in op.next:
                name = run.op_nodes[child].name if child in run.op_nodes else "None (no grad needed)"
                nexts.append(html.escape(name.replace(ACCUMULATE_GRAD, "AccumulateGrad")))
            rows.append(("next_functions", "<br>".join(nexts) or "none"))
            state = "freed by backward" if op.freed is not None and op.freed <= index else "alive"
            runs = [i for _, i in op.executed if i <= index]
            if runs and not any(ev.get("ev") == "bw_node_done" and ev.get("vid") == op.vid
                                for ev in run.events[runs[-1]:index + 1]):
                rows.append(("state", f"<b style='color:#c2410c'>running now</b> (backward); executed {len(runs) - 1}× before"))
            else:
                rows.append(("state", f"{state}; executed {len(runs)}×"))
            unreachable = run.unreachable_reason(op.vid, index)
            if unreachable is not None:
                rows.append(("backward", f"<i>will not run</i>: {html.escape(unreachable)}"))
            saved = [s for s in run.saved.values() if s.owner == op.vid and s.born <= index]
            lines = []
            for s in saved:
                released = s.released is not None and s.released <= index
                shape = "×".join(map(str, s.shape)) or "scalar"
                kind = {"param": "leaf that requires grad", "input": "input or constant"}.get(s.kind, s.kind)
                lines.append(f"{html.escape(str(s.attr))}: {shape} {s.dtype}, {human_bytes(s.bytes)} ({kind})"
                             + (" <i>released</i>" if released else ""))
            rows.append(("saved tensors", "<br>".join(lines) or "none"))
            started = {bid: i for bid, i in op.executed}
            for call in run.backwards.values():
                if started.get(call.bid, index + 1) <= index:  # only what has happened by the cursor
                    rows.append((f"grad in (backward {call.bid})", _grads(call.grads_in.get(op.vid))))
                    done = next((i for i, ev in enumerate(run.events[started[call.bid]:index + 1], started[call.bid])
                                 if ev.get("ev") == "bw_node_done" and ev.get("vid") == op.vid), None)
                    if done is not None and op.vid in call.grads_out:
                        outs = call.grads_out.get(op.vid) or []
                        labels = []
                        for (child, _), g in zip(op.next, outs):
                            if child not in run.op_nodes:  # an input that needs no gradient
                                labels.append("→ <span style='color:#6b7280'>(no grad needed)</span>")
                                continue
                            target = run.op_nodes[child].name.replace(ACCUMULATE_GRAD, "AccumulateGrad")
                            labels.append(f"→ {html.escape(target)}: {html.escape(_capped(g, 6))}")
                        rows.append((f"grad out (backward {call.bid})", "<br>".join(labels) or "none"))
        else:
            tnode = run.tensor_nodes.get(node_id)
            if tnode is None:
                return self.show_empty()
            info = tnode.info
            title = run.tensor_name(tnode.tid) or f"tensor {tnode.tid}"
            roots = [c.bid for c in run.backwards.values() if tnode.tid in c.roots_tensors and c.start <= index]
            kind_text = f"{info.get('kind')} ({'leaf' if tnode.grad_fn is None else 'intermediate'})"
            if roots:
                kind_text = f"output / loss: root of backward {', '.join(map(str, roots))}"
            rows += [
                ("kind", kind_text),
                ("shape", "×".join(map(str, info.get("shape") or [])) or "scalar"),
                ("dtype", str(info.get("dtype"))), ("device", str(info.get("device"))),
                ("requires_grad", str(info.get("requires_grad"))), ("is_leaf", str(info.get("is_leaf"))),
                ("version", str(tnode.version)),
            ]
            if tnode.grad_fn is not None and tnode.grad_fn in run.op_nodes:
                rows.append(("grad_fn", html.escape(run.op_nodes[tnode.grad_fn].name)))
            if info.get("line") is not None:
                rows.append(("first seen at", f"<a href='line:{info['line']}'>line {info['line']}</a>"))
            value = {"shape": info.get("shape"), "values": info["values"]} if "values" in info else (
                {"shape": info.get("shape"), "stats": info["stats"]} if "stats" in info else None)
            value = run.value_at(tnode.tid, index) or value
            rows.append(("value", html.escape(_capped(value)) + self._histogram("value", value)))
            entry = run.grad_at(tnode.tid, index)
            rows.append((".grad", html.escape(_capped(entry.value)) + self._histogram("grad", entry.value)
                         if entry else "None"))
        body = "".join(f"<tr><td nowrap style='color:#6b7280;padding-right:8px;vertical-align:top'>{k}</td><td>{v}</td></tr>"
                       for k, v in rows)
        self.setHtml(f"<h3 style='margin:2px 0'>{html.escape(title)}</h3><table>{body}</table>")


def histogram_image(counts: list[int], lo: float, hi: float, width: int = 232, height: int = 74) -> QImage:
    """Bars of ``counts`` over equal bins from ``lo`` to ``hi``, with the range written below."""
    image = QImage(width, height, QImage.Format_ARGB32)
    image.fill(QColor("#ffffff"))
    painter = QPainter(image)
    font = QFont("DejaVu Sans", 7)
    painter.setFont(font)
    plot_h = height - 16
    top = max(counts) or 1
    bar_w = (width - 2) / len(counts)
    painter.setPen(Qt.NoPen)
    painter.setBrush(QColor("#4c8bf5"))
    for i, count in enumerate(counts):
        h = 0 if count == 0 else max(1.0, (plot_h - 2) * count / top)
        painter.drawRect(QRectF(1 + i * bar_w, plot_h - h, max(1.0, bar_w - 1), h))
    painter.setPen(QColor("#9ca3af"))
    painter.drawLine(0, plot_h, width, plot_h)
    painter.setPen(QColor("#4b5563"))
    painter.drawText(QRectF(0, plot_h + 1, width / 2, 14), Qt.AlignLeft | Qt.AlignVCenter, f"{lo:.4g}")
    painter.drawText(QRectF(width / 2, plot_h + 1, width / 2, 14), Qt.AlignRight | Qt.AlignVCenter, f"{hi:.4g}")
    painter.end()
    return image


def _grads(grads) -> str:
    if not grads:
        return "none"
    return "<br>".join(html.escape(_capped(g)) for g in grads)


def _capped(summary, limit: int = 8) -> str:
    """A value summary for a panel: at most ``limit`` values, then how many more."""
    return summary_text(summary, limit)


# ---------------------------------------------------------------------- console
class Console(QTextBrowser):
    """The script's output and errors; traceback lines are links into the code pane."""

    sigLineLink = Signal(int)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setFont(MONO)
        self.anchorClicked.connect(lambda url: self.sigLineLink.emit(int(url.toString()[5:]))
                                   if url.toString().startswith("line:") else None)

    def show_run(self, run: Run, index: int) -> None:
        """Output up to event ``index``; rebuilt only when that text changes."""
        pieces = self._pieces(run)
        shown = sum(1 for at, _ in pieces if at <= index)
        key = (id(run), shown)
        if key == getattr(self, "_shown_key", None):
            return
        self._shown_key = key
        self.setHtml("<pre style='white-space:pre-wrap;margin:0'>" + "".join(p for _, p in pieces[:shown]) + "</pre>")
        self.moveCursor(QTextCursor.End)

    def _pieces(self, run: Run) -> list[tuple[int, str]]:
        cache = getattr(self, "_cache", None)
        if cache is None or cache[0] is not run:
            cache = self._cache = (run, [], [0])
        _, pieces, scanned = cache
        events = run.events
        for i in range(scanned[0], len(events)):
            ev = events[i]
            kind = ev.get("ev")
            if kind == "stdout":
                pieces.append((i, html.escape(ev["text"])))
            elif kind == "stderr":
                pieces.append((i, f"<span style='color:#b45309'>{html.escape(ev['text'])}</span>"))
            elif kind == "step_end" and ev.get("result"):
                pieces.append((i, f"<span style='color:#6b7280'>── step {ev['step']}: step() returned "
                                  f"{html.escape(summary_text(ev['result']))} ──</span>\n"))
            elif kind == "output_capped":
                pieces.append((i, f"<i>… {ev['bytes']} more characters of {ev['stream']} not kept</i>\n"))
            elif kind == "error":
                pieces.append((i, _error_html(ev)))
            elif kind == "run_end":
                status = ev.get("status")
                color = "#2e7d32" if status == "ok" else "#c62828"
                pieces.append((i, f"<span style='color:{color}'>── run {html.escape(status)}"
                                  f"{': ' + html.escape(ev['message']) if ev.get('message') else ''} ──</span>\n"))
        scanned[0] = len(events)
        return pieces


def _error_html(ev: dict) -> str:
    lines = ["<span style='color:#c62828'>Traceback (in your script):</span>"]
    for frame in ev.get("traceback") or ():
        lines.append(f"  <a href='line:{frame['line']}'>line {frame['line']}</a>, in {html.escape(frame['func'])}: "
                     f"{html.escape(frame['text'])}")
    lines.append(f"<b style='color:#c62828'>{html.escape(ev.get('type', 'Error'))}: {html.escape(ev.get('message', ''))}</b>")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- diagnostics
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
            self.detail.setHtml("<p style='color:#6b7280'>no autograd pitfalls found in this run</p>"
                                if not self.findings else "")
            return
        where = f" (line {finding.line})" if finding.line else ""
        self.detail.setHtml(f"<p><b style='color:#b45309'>{html.escape(finding.title)}</b>{where}</p>"
                            f"<p>{html.escape(finding.explanation)}</p>"
                            f"<p><b>Fix:</b> {html.escape(finding.fix)}</p>")

    def show_findings(self, findings: list) -> None:
        if self.list.topLevelItemCount() and [f.to_dict() for f in findings] == [f.to_dict() for f in self.findings]:
            return
        self.findings = list(findings)
        self.list.clear()
        for f in findings:
            item = QTreeWidgetItem([f.title, str(f.line or "")])
            item.setData(0, Qt.UserRole, f)
            item.setToolTip(0, f"{f.explanation}\n\nFix: {f.fix}")
            item.setForeground(0, QColor("#b45309"))
            self.list.addTopLevelItem(item)
        if not findings:
            self.list.addTopLevelItem(QTreeWidgetItem(["no autograd pitfalls found in this run", ""]))
            self._show_detail(None)
        else:
            self.list.setCurrentItem(self.list.topLevelItem(0))


# ---------------------------------------------------------------------- gradient ledger
class GradLedger(QTreeWidget):
    """Per leaf, every change of its ``.grad``: +(-8) → -8, +(-8) → -16, zero_grad → None."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setHeaderLabels(["tensor / change", ".grad after"])
        self.setColumnWidth(0, 420)
        self.setRootIsDecorated(True)
        self._pending: tuple | None = None  # (run, index) to show once this tab is in front

    def show_run(self, run: Run, index: int) -> None:
        if not self.isVisible():  # another tab is in front: rebuild when this one is shown
            self._pending = (run, index)
            return
        self._pending = None
        key = (id(run), sum(1 for entries in run.grads.values() for e in entries if e.index <= index),
               sum(len(entries) for entries in run.grads.values()))
        if key == getattr(self, "_shown_key", None):
            return  # nothing to redraw
        self._shown_key = key
        self.clear()
        for tid, entries in run.grads.items():
            name = run.tensor_name(tid) or f"tensor {tid}"
            shown = [e for e in entries if e.index <= index]
            top = QTreeWidgetItem([name, _capped(shown[-1].value) if shown else "None"])
            self.addTopLevelItem(top)
            for e in entries:
                step = f"step {e.step}: " if e.step is not None else (f"backward {e.bid}: " if e.bid else "")
                if e.how in ("accumulate", "retained"):
                    what = (f"{step}.grad += {_capped(e.increment, 4)}" if e.increment is not None
                            else f"{step}.grad kept (retain_grad)")
                else:
                    what = f"{step}{e.how.replace('_', ' ')}"
                child = QTreeWidgetItem([what, _capped(e.value)])
                if e.index > index:
                    for col in (0, 1):
                        child.setForeground(col, QColor("#b0b0b0"))
                top.addChild(child)
            top.setExpanded(True)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._pending is not None:
            self.show_run(*self._pending)


# ---------------------------------------------------------------------- memory chart
class BytesAxis(pg.AxisItem):
    """Byte axis with ticks at round binary sizes (1 KiB, 2 KiB, ... not 1000 B)."""

    def tickSpacing(self, minVal, maxVal, size):
        span = max(1.0, maxVal - minVal)
        unit = 1.0
        while unit * 1024 <= span:
            unit *= 1024
        for mult in (0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
            step = unit * mult
            if span / step <= 5 and step >= 1:
                return [(step, 0)]
        return [(unit * 512, 0)]

    def tickStrings(self, values, scale, spacing):
        return [human_bytes(v) for v in values]


class MemoryChart(pg.PlotWidget):
    """Live saved-tensor bytes over the timeline, stacked by kind; a cursor; click to jump."""

    sigJump = Signal(int)
    MAX_POINTS = 1500  # filled curves cost paint time per point: long runs are drawn binned (peaks kept)
    COLORS = {"activation": "#4c8bf5", "param": "#34a853", "input": "#fbbc04"}
    FILLS = {"activation": "#b3cdfb", "param": "#a9dcb8", "input": "#fde6a0"}  # opaque: blending is slow

    def __init__(self, parent=None) -> None:
        super().__init__(parent=parent, axisItems={"left": BytesAxis("left")})
        self.setBackground("w")
        self.getAxis("left").setWidth(72)  # fixed: labels of changing width would re-layout forever
        # no grid: in software rendering its translucent lines cost more than everything else
        self.setLabel("bottom", "event")
        self.setMouseEnabled(x=True, y=False)
        # top right, away from where runs start; an opaque box keeps it readable over the curves
        # the legend is a line of the title, above the plot: it can never cover the curves
        self._overlay_labels: list[tuple[str, str]] = []
        self.cursor_line = pg.InfiniteLine(pos=0, angle=90, pen=pg.mkPen("#c62828", width=1.5))
        self.addItem(self.cursor_line)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.overlays: list[pg.PlotDataItem] = []
        self._overlay_peaks: list[int] = []
        self._cache: dict | None = None  # the series as numpy arrays, extended as a run grows (_arrays)
        self.peak = pg.ScatterPlotItem(size=9, brush=pg.mkBrush("#c62828"))
        self.addItem(self.peak)  # the peak's figure goes in the title: a TextItem repaints forever
        self.scene().sigMouseClicked.connect(self._clicked)
        self.series: dict[str, list] = {}
        self.device = "cpu"

    def show_run(self, run: Run, device: str) -> None:
        """Plot ``run``'s series on ``device``. A live run calls this as it grows: only the new
        events are converted, and binning, stacking and the peak run in numpy, so a refresh
        costs about the same at event 1,000 as at event 1,000,000."""
        self.device = device
        series = run.memory_series(device)
        self.series = series
        arrays = self._arrays(run, device, series)
        stack = np.zeros(len(arrays["total"]), dtype=np.int64)
        for kind in ("input", "param", "activation"):
            top = stack + arrays[kind]
            label = {"activation": "activations", "param": "leaves that require grad (parameters)",
                     "input": "inputs and constants"}[kind]
            x, y = _peak_decimate(top, self.MAX_POINTS)
            curve = self.curves.get(kind)
            if curve is None:
                # steps, not ramps: the bytes after event i hold until event i + 1
                curve = self.plot(x, y, name=label, pen=pg.mkPen(QColor(self.COLORS[kind]), width=1), fillLevel=0,
                                  brush=QColor(self.FILLS[kind]), stepMode="right")
                self.curves[kind] = curve
            else:
                curve.setData(x, y)
            stack = top
        if self._cache["has_alloc"]:
            x, values = _peak_decimate(arrays["allocated"], self.MAX_POINTS)
            if "allocated" not in self.curves:
                self.curves["allocated"] = self.plot(x, values, name="CUDA allocated", pen=pg.mkPen("#6b7280", style=Qt.DashLine))
            else:
                self.curves["allocated"].setData(x, values)
        elif "allocated" in self.curves:
            self.curves["allocated"].setData([], [])  # an earlier run's allocator line
        # opaque stacked areas: the tallest (activations, the total) at the back, inputs in front
        for z, kind in enumerate(("activation", "param", "input", "allocated")):
            if kind in self.curves:
                self.curves[kind].setZValue(-10 + z)
        total = arrays["total"]
        peak_x = int(np.argmax(total)) if len(total) else 0
        if len(total) and total[peak_x] > 0:
            peak_value = int(total[peak_x])
            self.peak.setData([peak_x], [peak_value])
            self._title(f"<span style='color:#c62828'>● peak {human_bytes(peak_value)} at event {peak_x}</span>"
                        f" <span style='color:#6b7280'>(saved tensors on {device})</span>")
        else:
            self.peak.setData([], [])
            self._title(f"<span style='color:#6b7280'>no saved tensors on {device}</span>")
        self._headroom(int(total.max()) if len(total) else 0)

    def _title(self, headline: str) -> None:
        keys = [(self.COLORS["activation"], "■", "activations"), (self.COLORS["param"], "■", "parameters (leaves that require grad)"),
                (self.COLORS["input"], "■", "inputs and constants")]
        if self._cache is not None and self._cache["has_alloc"]:
            keys.append(("#6b7280", "┅", "CUDA allocated"))
        keys += [(color, "┅", label) for label, color in self._overlay_labels]
        legend = "&nbsp;&nbsp; ".join(f"<span style='color:{color}'>{mark}</span>"
                                      f"<span style='color:#374151'> {html.escape(label)}</span>" for color, mark, label in keys)
        self.setTitle(f"{headline}&nbsp;&nbsp;&nbsp; {legend}", size="9pt")

    def _headroom(self, peak: int) -> None:
        """Fix the y range a little above the highest curve, this run's or an earlier run's (auto
        range would follow only part of them and jump while a run streams)."""
        top = max([peak] + self._overlay_peaks)
        self.enableAutoRange(axis="y", enable=False)
        self.setYRange(0, max(top, 1) * 1.12, padding=0)

    def _arrays(self, run: Run, device: str, series: dict) -> dict[str, np.ndarray]:
        """The series as numpy arrays, extended by only what is new since the last call."""
        cache = self._cache
        n = len(series["total"])
        if cache is None or cache["run"] is not run or cache["device"] != device or cache["n"] > n:
            cache = self._cache = {"run": run, "device": device, "n": 0, "has_alloc": False,
                                   "buffers": {k: np.zeros(1024, dtype=np.float64 if k == "allocated" else np.int64)
                                               for k in ("activation", "param", "input", "total", "allocated")}}
        old = cache["n"]
        if n > old:
            for kind, buffer in cache["buffers"].items():
                if len(buffer) < n:
                    grown = np.zeros(max(n, 2 * len(buffer)), dtype=buffer.dtype)
                    grown[:old] = buffer[:old]
                    cache["buffers"][kind] = buffer = grown
                tail = series[kind][old:n]
                if kind == "allocated":
                    if any(v is not None for v in tail):
                        cache["has_alloc"] = True
                    tail = [np.nan if v is None else v for v in tail]
                buffer[old:n] = tail
            cache["n"] = n
        return {kind: buffer[:n] for kind, buffer in cache["buffers"].items()}

    def add_overlay(self, run: Run, label: str, color: str) -> None:
        x, y = _peak_decimate(run.memory_series(self.device)["total"], self.MAX_POINTS)
        curve = self.plot(x, y, name=label, pen=pg.mkPen(color, width=2, style=Qt.DotLine))
        self.overlays.append(curve)
        self._overlay_labels.append((label, color))
        self._overlay_peaks.append(int(y.max()) if len(y) else 0)

    def clear_overlays(self) -> None:
        for curve in self.overlays:
            self.removeItem(curve)
        self.overlays.clear()
        self._overlay_peaks.clear()
        self._overlay_labels.clear()

    def set_cursor(self, index: int) -> None:
        self.cursor_line.setValue(index)

    def _clicked(self, event) -> None:
        point = self.plotItem.vb.mapSceneToView(event.scenePos())
        if self.series.get("total"):
            index = int(round(point.x()))
            self.sigJump.emit(max(0, min(index, len(self.series["total"]) - 1)))

    def to_csv(self) -> str:
        rows = ["event,activation_bytes,param_bytes,input_bytes,total_bytes,cuda_allocated_bytes"]
        s = self.series
        for i in range(len(s.get("total", []))):
            alloc = s["allocated"][i]
            rows.append(f"{i},{s['activation'][i]},{s['param'][i]},{s['input'][i]},{s['total'][i]},"
                        f"{'' if alloc is None else alloc}")
        return "\n".join(rows) + "\n"


def _peak_decimate(values, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``limit`` points: each bin of events keeps its highest value (peaks survive)."""
    values = np.asarray(values)
    n = len(values)
    if n <= limit:
        return np.arange(n), values
    width = -(-n // limit)
    bins = -(-n // width)
    padded = np.full(bins * width, -np.inf if values.dtype.kind == "f" else np.iinfo(np.int64).min, dtype=values.dtype)
    padded[:n] = values
    rows = padded.reshape(bins, width)
    if values.dtype.kind == "f":
        rows = np.where(np.isnan(rows), -np.inf, rows)
    offsets = np.argmax(rows, axis=1)
    xs = np.arange(bins) * width + offsets
    return xs, values[xs]


# ---------------------------------------------------------------------- toggles
class TogglesPanel(QWidget):
    """The run options; "Run again" starts a new run, earlier runs stay on the memory chart."""

    sigRunRequested = Signal(object)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        form = QFormLayout()
        self.retain = QCheckBox("retain_graph")
        self.retain.setToolTip("pass retain_graph=True to every backward: the graph and its saved tensors stay")
        self.create = QCheckBox("create_graph")
        self.create.setToolTip("pass create_graph=True to every backward: gradients get graphs of their own")
        self.mode = QComboBox()
        self.mode.addItems(list(GRAD_MODES))
        self.accumulate = QCheckBox("skip zero_grad")
        self.accumulate.setToolTip("accumulate gradients across steps: zero_grad calls do nothing")
        self.device = QComboBox()
        self.device.addItem("script's choice", None)
        self.steps = QSpinBox()
        self.steps.setRange(1, 1000)
        self.steps.setValue(3)
        self.detach = QComboBox()
        self.detach.setEditable(True)
        self.detach.addItem("")
        self.detach.setToolTip("op:N, line:N or a module path; right-click a node for suggestions")
        form.addRow(self.retain)
        form.addRow(self.create)
        form.addRow("grad mode", self.mode)
        form.addRow(self.accumulate)
        form.addRow("device", self.device)
        form.addRow("steps", self.steps)
        self.steps.setToolTip("how many times a step script's step() is called")
        form.addRow("detach at", self.detach)
        self.run_button = QPushButton("Run again with these options")
        self.run_button.clicked.connect(lambda: self.sigRunRequested.emit(self.options()))
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.run_button)
        layout.addStretch(1)

    def set_devices(self, devices: list[str]) -> None:
        current = {self.device.itemData(i) for i in range(self.device.count())}
        for device in devices:
            if device not in current:
                self.device.addItem(device, device)

    def set_options(self, options: RunOptions) -> None:
        self.retain.setChecked(options.retain_graph)
        self.create.setChecked(options.create_graph)
        self.mode.setCurrentText(options.grad_mode)
        self.accumulate.setChecked(options.accumulate)
        self.steps.setValue(options.steps)
        self.detach.setCurrentText(", ".join(options.detach_at))

    def options(self) -> RunOptions:
        detach = [s.strip() for s in self.detach.currentText().split(",") if s.strip()]
        return RunOptions(retain_graph=self.retain.isChecked(), create_graph=self.create.isChecked(),
                          grad_mode=self.mode.currentText(), accumulate=self.accumulate.isChecked(),
                          device=self.device.currentData(), steps=self.steps.value(), detach_at=detach)

    def request_detach(self, spec: str) -> None:
        self.detach.setCurrentText(spec)
        self.sigRunRequested.emit(self.options())
