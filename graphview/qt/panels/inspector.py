"""The inspector: everything recorded about the selected node at the cursor, with histograms; with
nothing selected, about the node the cursor is on."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QRectF, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QColor, QFont, QImage, QPainter
from PySide6.QtWidgets import QTextBrowser

from graphview.core.events import SAMPLE_NOTE
from graphview.core.options import NO_GRAPH_MODES
from graphview.core.run import ACCUMULATE_GRAD, OpNode, Run, TensorNode
from graphview.core.text import label_text
from graphview.core.queries.names import node_title
from graphview.qt import theme as themes
from graphview.qt.formatting import capped, human_bytes
from graphview.qt.plain import esc


#: the most entries of one list (next functions, saved tensors, gradients) and of backward calls the
#: inspector shows: a trace decides how long they are, and a node with 50,000 next functions took
#: half a second to show at each click
LIST_SHOWN = 100
BACKWARDS_SHOWN = 20
#: under the title of the node the Inspector shows because the cursor is on it
FOLLOWED_NOTE = "at the cursor (click a node to keep it here)"


class Inspector(QTextBrowser):
    """Everything recorded about the selected node, at the cursor."""

    sigLineLink = Signal(object)  # a line of the script: a trace's number, past what a C int holds

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._images: dict[str, QImage] = {}
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._on_link)
        self.setMinimumWidth(240)
        self._run: Run | None = None
        self._cursor = -1
        self._selection = ""
        self._node_at: Callable[[int], str | None] | None = None  # the node the cursor's event is about
        self._shown: tuple = (self.show_empty, ())  # what is on show, drawn again in a new theme
        self._pending = False  # the cursor's node is to be shown once the inspector is (see _show_followed)
        self._pinned = False  # a gradient check's table, asked for: kept at every cursor until a selection
        self._setting = False  # inside setHtml (see _redraw_if_resized)
        self._drawn_for: int | None = None  # the viewport width its histograms were sized for
        self.document().setDefaultStyleSheet(themes.css())
        self.show_empty()
        themes.changes().changed.connect(self.apply_theme)

    def _key_width(self) -> int:
        """The width the key column takes (its longest key, in this font, with its padding)."""
        return self.fontMetrics().horizontalAdvance("requires_grad") + 60

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._redraw_if_resized()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._pending:  # the cursor moved while it was behind another tab
            self._pending = False
            show, args = self._shown
            show(*args)
            return
        self._redraw_if_resized()

    def _redraw_if_resized(self) -> None:
        """A histogram was sized for another width (the panel was hidden behind another tab, or
        resized since): drawn again, or the table would be too wide and wrap its keys letter by letter.
        Resized while its page is being set (the dock's layout gives it another width as the page's
        scroll bar comes), it is drawn again once that is done: set again inside setHtml, the page
        held the node's table twice (maximized at 1366x768 under X)."""
        if self._setting:
            QTimer.singleShot(0, self._redraw_if_resized)
            return
        drawn_for = self._drawn_for
        if drawn_for is not None and drawn_for != self.viewport().width() and self.isVisible():
            show, args = self._shown
            show(*args)

    def apply_theme(self, theme=None) -> None:
        """The theme changed: the coloured words and the histograms again, in its colours."""
        self.document().setDefaultStyleSheet(themes.css())
        show, args = self._shown
        show(*args)

    def show_empty(self) -> None:
        self._shown, self._pending = (self.show_empty, ()), False
        self._set_page("<p class='muted'>Click a node in the graph to see everything recorded about it.</p>")

    def _set_page(self, html: str) -> None:
        self._setting = True
        try:
            self.setHtml(html)
        finally:
            self._setting = False

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
        width = max(120, min(320, self.viewport().width() - self._key_width()))
        self._drawn_for = self.viewport().width()
        self._images[name] = histogram_image(counts, stats["min"], stats["max"], width=width)
        sampled = stats.get("hist_of")
        numel = stats.get("numel", 0)
        note = (f"<br><span class='muted' style='font-size:small'>histogram of {esc(f'{sampled:,}')} evenly spaced "
                f"values of {esc(f'{numel:,}')}</span>" if sampled else "")

        return f"<br><img src='hist:{name}'>{note}"

    def loadResource(self, kind: int, url: QUrl):
        if url.scheme() == "hist" and url.path() in self._images:
            return self._images[url.path()]
        return super().loadResource(kind, url)

    def follow_with(self, node_at: Callable[[int], str | None]) -> None:
        """With nothing selected, show the node ``node_at(index)`` says the cursor's event is about
        (the node a backward step runs, the tensor an op made), as a debugger's variables follow
        execution: the user's own selection (a click, a search, a finding) is kept instead, at
        any cursor, until a click on empty canvas gives the Inspector back to the cursor."""
        self._node_at = node_at

    # the SessionView protocol: the inspector follows the cursor and the selection
    def set_run(self, run: Run) -> None:
        self._run, self._cursor, self._selection, self._pinned = run, -1, "", False
        self.show_empty()

    def set_cursor(self, index: int) -> None:
        self._cursor = index
        if self._pinned:
            return
        if self._selection:
            self.show_node(self._run, self._selection, index)
        else:
            self._show_followed(index)

    def set_selection(self, node_id: str) -> None:
        self._selection, self._pinned = node_id, False
        if not node_id:
            self._show_followed(self._cursor)
        elif self._run is not None:
            self.show_node(self._run, node_id, self._cursor)

    def _show_followed(self, index: int) -> None:
        """Nothing selected: the cursor's node, or the hint when its event is about none. Behind
        another tab (the code's, at 1366x768), it is shown when the inspector is: following cost
        each step 2 ms more on the transformer sample, for a panel no one saw."""
        if not self.isVisible():
            self._shown, self._pending = (self._show_followed, (index,)), True
            return
        node_id = self._node_at(index) if self._node_at is not None and self._run is not None and index >= 0 else None
        if node_id is None:
            self.show_empty()
        else:
            self.show_node(self._run, node_id, index, followed=True)

    def show_node(self, run: Run, node_id: str, index: int, followed: bool = False) -> None:
        """Node ``node_id`` at event ``index``; ``followed``: shown because the cursor is on it,
        not because the user selected it (a line under the title says so)."""
        self._images = {}
        self._shown, self._pending = (self.show_node, (run, node_id, index, followed)), False
        if node_id.startswith("op"):
            op = run.op_nodes.get(int(node_id[2:]))
            if op is None:
                return self.show_empty()
            title = node_title(op.name)
            rows = self._op_rows(run, op, index) + self._backward_rows(run, op, index)
        else:
            tnode = run.tensor_nodes.get(node_id)
            if tnode is None:
                return self.show_empty()
            title = run.tensor_title(tnode.tid, tnode.grad_fn)
            title = f"tensor {tnode.tid}" if title == "tensor" else title
            rows = self._tensor_rows(run, tnode, index)
        when = self._not_now(run, node_id, index)
        if when:  # kept selected while the cursor is where it is not (yet, or any more)
            rows.insert(0, ("at this point", f"<span class='muted'>{esc(when)}</span>"))
        # each row's value is HTML: every string from the trace in it is escaped where it is put in
        body = "".join(f"<tr><td nowrap class='muted' style='padding-right:8px;vertical-align:top;white-space:nowrap'>{esc(k)}</td><td>{v}</td></tr>"
                       for k, v in rows)
        # a value shown as "a sample of N" (core.events.summary_text): say once what that means
        footnote = (f"<p class='muted' style='font-size:small'>{esc(SAMPLE_NOTE[:1].upper() + SAMPLE_NOTE[1:])}.</p>"
                    if ", a sample of " in body else "")
        note = (f"<p class='muted' style='margin:0 0 4px 0'>{FOLLOWED_NOTE}</p>" if followed else "")
        self._set_page(f"<h3 style='margin:2px 0'>{esc(title)}</h3>{note}<table>{body}</table>{footnote}")

    @staticmethod
    def _not_now(run: Run, node_id: str, index: int) -> str:
        """Why the node is not in the graph at ``index``: not made yet, or destroyed ('' if it is)."""
        if node_id.startswith("op"):
            op = run.op_nodes.get(int(node_id[2:]))
            if op is None:
                return ""
            if op.born > index:
                return f"not made yet (autograd makes it at event {op.born})"
            if op.dead is not None and op.dead <= index:
                return f"destroyed at event {op.dead}"
            return ""
        tnode = run.tensor_nodes.get(node_id)
        if tnode is not None and tnode.born > index:
            return f"not recorded yet (first seen at event {tnode.born})"
        return ""

    def show_gradcheck(self, result: dict) -> None:
        """A gradient check's table: autograd against finite differences, element by element. The user
        asked for it: it stays at every cursor (the following of the cursor does not take its place)
        until a node is selected, or the canvas clicked."""
        self._shown, self._pending, self._pinned = (self.show_gradcheck, (result,)), False, True
        worst = result["max_rel_error"]
        verdict = "agree" if worst <= 1e-4 else "disagree"
        rows = "".join(f"<tr><td>{i}</td><td>{a:.8g}</td><td>{n:.8g}</td></tr>"
                       for i, (a, n) in enumerate(zip(result["autograd"], result["numeric"])))
        verdict_class = "ok" if worst <= 1e-4 else "error"
        self._set_page(
            f"<h3>Gradient check: {esc(result['tensor'])}</h3><p>d(first backward's loss)/d{esc(result['tensor'])} in float64,"
            f" central differences with eps={result['eps']:g}.</p><table><tr><th>element</th><th>autograd</th>"
            f"<th>finite differences</th></tr>{rows}</table>"
            f"<p class='{verdict_class}'>largest relative error {worst:.3g}: {verdict}</p>")

    def _op_rows(self, run: Run, op: OpNode, index: int) -> list[tuple[str, str]]:
        """An autograd node: what made it, where it points, whether it ran, what it saved."""
        rows = [("kind", "AccumulateGrad (writes a leaf's .grad)" if op.name == ACCUMULATE_GRAD else "grad_fn node")]
        if op.leaf is not None:
            rows.append(("leaf", esc(run.tensor_name(op.leaf) or f"tensor {op.leaf}")))
        if op.op:
            rows.append(("created by", esc(op.op)))
        if op.module:
            rows.append(("module", esc(run.module_label(op.module))))
        if op.line is not None:
            rows.append(("source line", f"<a href='line:{esc(op.line)}'>line {esc(op.line)}</a>"))
        if op.seq is not None:
            rows.append(("sequence nr", esc(op.seq)))
        nexts = []
        for child, nr in op.next[:LIST_SHOWN + 1]:
            name = run.op_nodes[child].name if child in run.op_nodes else "None (no grad needed)"
            nexts.append(esc(node_title(name)))
        rows.append(("next_functions", listed(nexts, len(op.next)) or "none"))
        state = "freed by backward" if op.freed is not None and op.freed <= index else "alive"
        runs = [(bid, i) for bid, i in op.executed if i <= index]
        if runs and not _done_by(run, op.vid, *runs[-1], index):
            rows.append(("state", f"<b class='running'>running now</b> (backward); executed {len(runs) - 1}× before"))
        else:
            rows.append(("state", f"{state}; executed {len(runs)}×"))
        unreachable = run.unreachable_reason(op.vid, index)
        if unreachable is not None:
            rows.append(("backward", f"<i>will not run</i>: {esc(unreachable)}"))
        saved = sorted((s for s in run.saved_by_owner.get(op.vid, ()) if s.born <= index), key=lambda s: s.sid)
        # the other nodes that save the same memory (a max-pool saves the ReLU's result the ReLU
        # saves: one storage, counted once in the memory chart, though each node's card shows it)
        lines = []
        for s in saved:
            released = not s.held_at(index)
            shape = "×".join(map(str, s.shape)) or "scalar"
            kind = {"param": "a weight: held anyway", "input": "an input or constant: held anyway",
                    "activation": "an activation: held for backward alone"}.get(s.kind, s.kind)
            others = () if released else run.owners_of(s.device, s.storage, index) - {op.vid}
            names = sorted(run.op_nodes[v].name if v in run.op_nodes else f"node {v}" for v in others)
            also = f"; the same memory {', '.join(names)} saves" if names else ""
            lines.append(f"{esc(s.attr)}: {esc(shape)} {esc(s.dtype)}, {esc(human_bytes(s.bytes))} "
                         f"({esc(kind)}{esc(also)})"
                         + (" <i>released</i>" if released else ""))
        rows.append(("saved tensors", listed(lines) or "none"))
        return rows

    def _backward_rows(self, run: Run, op: OpNode, index: int) -> list[tuple[str, str]]:
        """The gradients into and out of ``op`` in each backward call that reached it by ``index``."""
        rows: list[tuple[str, str]] = []
        started = {bid: i for bid, i in op.executed}
        calls = [call for call in run.backwards.values() if started.get(call.bid, index + 1) <= index]
        if len(calls) > BACKWARDS_SHOWN:  # (only what has happened by the cursor, the newest)
            rows.append(("earlier backward calls", f"<span class='muted'>{len(calls) - BACKWARDS_SHOWN:,} not shown"
                                                   "</span>"))
        for call in calls[-BACKWARDS_SHOWN:]:
            rows.append((f"grad in (backward {call.bid})", _grads(call.grads_in.get(op.vid))))
            if _done_by(run, op.vid, call.bid, started[call.bid], index) and op.vid in call.grads_out:
                outs = call.grads_out.get(op.vid) or []
                labels = []
                for (child, _), g in zip(op.next[:LIST_SHOWN + 1], outs):
                    if child not in run.op_nodes:  # an input that needs no gradient
                        labels.append("→ <span class='muted'>(no grad needed)</span>")
                        continue
                    target = node_title(run.op_nodes[child].name)
                    labels.append(f"→ {esc(target)}: {esc(capped(g, 6))}")
                shown = listed(labels, min(len(op.next), len(outs)))
                rows.append((f"grad out (backward {call.bid})", shown or "none"))
        return rows

    def _tensor_rows(self, run: Run, tnode: TensorNode, index: int) -> list[tuple[str, str]]:
        """A tensor: its kind, shape, dtype, version, value and ``.grad`` at ``index``."""
        info = tnode.info
        roots = [c.bid for c in run.backwards.values() if tnode.tid in c.roots_tensors and c.start <= index]
        kind_text = esc(f"{info.get('kind')} ({'leaf' if tnode.grad_fn is None else 'intermediate'})")
        made = run.made_by.get(tnode.tid)
        if tnode.grad_fn is None and info.get("kind") == "input" and made is not None \
                and made.get("mode") in NO_GRAPH_MODES:  # (a model's logits under no_grad read "input (leaf)")
            kind_text = esc(f"result of {label_text(str(made.get('op')))} under {made['mode']} (a leaf: no grad_fn)")
        if roots:
            kind_text = esc(f"output / loss: root of backward {', '.join(map(str, roots))}")
        rows = [
            ("kind", kind_text),
            ("shape", esc("×".join(map(str, info.get("shape") or [])) or "scalar")),
            ("dtype", esc(info.get("dtype"))), ("device", esc(info.get("device"))),
            ("requires_grad", esc(info.get("requires_grad"))), ("is_leaf", esc(info.get("is_leaf"))),
            ("version", esc(run.version_at(tnode, index))),
        ]
        if tnode.grad_fn is not None and tnode.grad_fn in run.op_nodes:
            rows.append(("grad_fn", esc(run.op_nodes[tnode.grad_fn].name)))
        also = run.aliases.get(tnode.tid)
        if also:  # (a tied weight: one tensor, its .grad the sum of both uses)
            rows.append(("also", esc(", ".join(also)) + " <span class='muted'>(the same tensor: tied)</span>"))
        line = run.first_line.get(tnode.tid)
        if line is not None:
            # made by an op graphview saw (an activation, torch.randn at that line), or made before the
            # recording or where it is not seen (a layer's weight): where the script first used it
            made = run.made_by.get(tnode.tid)
            key = "made at" if made is not None and made.get("line") == line else "first used at"
            rows.append((key, f"<a href='line:{esc(line)}'>line {esc(line)}</a>"))
        value = {"shape": info.get("shape"), "values": info["values"]} if "values" in info else (
            {"shape": info.get("shape"), "stats": info["stats"]} if "stats" in info else None)
        value = run.value_at(tnode.tid, index) or value
        rows.append(("value", esc(capped(value)) + self._histogram("value", value)))
        entry = run.grad_at(tnode.tid, index)
        if entry:
            rows.append((".grad", esc(capped(entry.value)) + self._histogram("grad", entry.value)))
        elif not info.get("is_leaf", True):  # the question users ask most: why is this grad None
            retained = any(ev.get("tid") == tnode.tid for _, ev in run.events.where({"retain_grad"}, 0, index + 1))
            why = ("retained: its gradient comes with the next backward" if retained else
                   "autograd keeps .grad of leaves only: call .retain_grad() on this tensor before backward "
                   "to keep its gradient")
            rows.append((".grad", f"None <span class='muted'>({why})</span>"))
        else:
            rows.append((".grad", "None"))
        return rows


def histogram_image(counts: list[int], lo: float, hi: float, width: int = 232, height: int = 74) -> QImage:
    """Bars of ``counts`` over equal bins from ``lo`` to ``hi``, with the range written below."""
    t = themes.current()
    image = QImage(width, height, QImage.Format_ARGB32)
    image.fill(QColor(t.histogram_background))
    painter = QPainter(image)
    font = QFont("DejaVu Sans", 7)
    painter.setFont(font)
    plot_h = height - 16
    top = max(counts) or 1
    bar_w = (width - 2) / len(counts)
    painter.setPen(Qt.NoPen)
    painter.setBrush(QColor(t.histogram_bar))
    for i, count in enumerate(counts):
        h = 0 if count == 0 else max(1.0, (plot_h - 2) * count / top)
        painter.drawRect(QRectF(1 + i * bar_w, plot_h - h, max(1.0, bar_w - 1), h))
    painter.setPen(QColor(t.histogram_axis))
    painter.drawLine(0, plot_h, width, plot_h)
    painter.setPen(QColor(t.histogram_text))
    painter.drawText(QRectF(0, plot_h + 1, width / 2, 14), Qt.AlignLeft | Qt.AlignVCenter, f"{lo:.4g}")
    painter.drawText(QRectF(width / 2, plot_h + 1, width / 2, 14), Qt.AlignRight | Qt.AlignVCenter, f"{hi:.4g}")
    painter.end()
    return image


def _done_by(run: Run, vid: int, bid: int, started: int, index: int) -> bool:
    """Whether node ``vid``, started at event ``started`` in backward ``bid``, had finished by ``index``."""
    call = run.backwards.get(bid)
    done = call.grads_out.index_of(vid) if call is not None else None
    return done is not None and started <= done <= index


def listed(items: list[str], total: int | None = None) -> str:
    """HTML lines, the first :data:`LIST_SHOWN` of ``items`` (of ``total``, when only some were made)
    and how many more there are."""
    total = len(items) if total is None else total
    more = f"<br><span class='muted'>… and {total - LIST_SHOWN:,} more</span>" if total > LIST_SHOWN else ""
    return "<br>".join(items[:LIST_SHOWN]) + more


def _grads(grads) -> str:
    if not grads:
        return "none"
    return listed([esc(capped(g)) for g in grads[:LIST_SHOWN + 1]], len(grads))
