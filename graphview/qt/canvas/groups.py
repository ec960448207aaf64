"""GroupItem: the box of one nn.Module call, open (a dashed outline around its nodes) or shut
(one card with the module's path, type, autograd nodes and the bytes it holds for backward)."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QFont, QFontMetricsF, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsObject

from graphview.core.held import Held
from graphview.core.hierarchy import ModuleBox
from graphview.qt.canvas.card_now import running_line
from graphview.qt.canvas.nodes import NodeItem
from graphview.qt.canvas.style import NAME_PT, NODE_H, NODE_W, SMALLEST_TEXT_PT, colors
from graphview.qt.formatting import elided, human_bytes
from graphview.qt.plain import esc

#: the size of a shut box: a node's cell, a little wider
SHUT_W, SHUT_H = NODE_W + 20, NODE_H + 16
#: a shut box of repeated blocks is this much taller: a bar per block, its activations
BARS_H = 16.0
#: the width of a shut card's lines: the card less the room each side
CARD_TEXT_W = SHUT_W - 12


class GroupItem(QGraphicsObject):
    """The box of one module call; double-click shuts or opens it."""

    sigToggled = Signal(str)
    LABEL_FONT = QFont("DejaVu Sans", SMALLEST_TEXT_PT)
    LABEL_H = 14.0

    def __init__(self, box: ModuleBox) -> None:
        super().__init__()
        self.box = box
        self.key = box.key
        self.path = box.path
        self.depth = box.level
        self.collapsed = False
        self.rect = QRectF()
        self.members = 0  # nodes inside shown at the cursor
        self.ops = 0  # autograd nodes inside shown at the cursor
        self.made_graph = True  # the call made an autograd node (one under no_grad made none: no graph "now")
        self.saved = 0  # bytes its autograd nodes hold for backward at the cursor
        self.held = Held()  # the same, split: activations, and the weights and inputs held anyway
        self.running = False  # a node inside is executing at the cursor
        self.error = False  # shut, where an error happened inside (a node, or a tensor a failing op took)
        self.freed = False  # backward freed every autograd node inside
        self.now: str | None = None  # shut, in forward: the op at the cursor ran inside (its name)
        # the activations held for it when backward started, (earlier run, this run): weights apart
        self.compared: tuple[int, int] | None = None
        self._compared_card: str | None = None  # compared_card_text, worked out once a comparison
        # repeated blocks, shut: each block's (title, autograd nodes, bytes of activations) at the cursor
        self.blocks: tuple[tuple[str, int, int], ...] = ()
        self.label_shift = 0.0  # moved right when an enclosing box's label sits at the same height
        self.label_below = False  # on the bottom border: right of the enclosing box's, the top had no room
        self.label_drop = 0.0  # moved down inside its box, under an enclosing box's name at the same height
        self.spared: tuple[QRectF, ...] = ()  # enclosing boxes' labels its outline must not cross
        self._bounds: QRectF | None = None  # boundingRect, until the geometry changes
        self._label_width: tuple[str, float] = ("", 0.0)  # the label and its width
        self.setZValue(-10 + box.level)
        self.setAcceptHoverEvents(True)

    def set_box(self, rect: QRectF, members: int, ops: int = 0, held: Held | None = None, running: bool = False,
                freed: bool = False, now: str | None = None, error: bool = False) -> None:
        height = SHUT_H + (BARS_H if self.box.repeats is not None else 0.0)
        box = QRectF(rect.center().x() - SHUT_W / 2, rect.center().y() - height / 2, SHUT_W, height) \
            if self.collapsed else rect
        state = (box, members, ops, held or Held(), running, freed, now, error)
        if state != (self.rect, self.members, self.ops, self.held, self.running, self.freed, self.now, self.error):
            self.prepareGeometryChange()
            self.rect, self.members, self.ops, self.held, self.running, self.freed, self.now, self.error = state
            self.saved = self.held.total
            self.setZValue(3 if self.collapsed else -10 + self.box.level)
            self._tooltip()
            self.update()

    def set_blocks(self, blocks: tuple[tuple[str, int, int], ...]) -> None:
        """A shut box of repeated blocks: each block's (title, autograd nodes, bytes of activations)
        at the cursor, drawn as a bar per block (the tooltip lists them)."""
        if blocks != self.blocks:
            self.blocks = blocks
            self._tooltip()
            self.update()

    def set_compared(self, compared: tuple[int, int] | None) -> None:
        if compared != self.compared:
            self.prepareGeometryChange()
            self.compared = compared
            self._compared_card = None
            self._tooltip()
            self.update()

    def compared_text(self) -> str:
        """``51.2 KiB → 5.0 KiB activations``: the activations held for it when backward started (its
        nodes', and what a checkpoint of it kept), in the earlier run and this one."""
        if self.compared is None:
            return ""
        before, after = self.compared
        return f"{human_bytes(before)} → {human_bytes(after)} activations"

    def compared_card_text(self) -> str:
        """:meth:`compared_text` as a shut card's line holds it whole: the unit once where both
        figures share it (``512.5 → 512.5 KiB activations``), else the figures alone (the tooltip
        says what they are). Elided from its start, "512.5 KiB → 512.5 KiB activations" read
        "…5 KiB → 512.5 KiB activations" on a card: the first figure 5 KiB. Worked out once for a
        comparison, not at each paint."""
        if self._compared_card is not None:
            return self._compared_card
        before, after = (human_bytes(n) for n in self.compared)
        (number, _, unit), (number_after, _, unit_after) = before.partition(" "), after.partition(" ")
        forms = [self.compared_text()]
        if unit == unit_after:
            forms.append(f"{number} → {number_after} {unit} activations")
        forms.append(f"{before} → {after}")
        metrics = QFontMetricsF(self.LABEL_FONT)
        self._compared_card = next((text for text in forms if metrics.horizontalAdvance(text) <= CARD_TEXT_W), forms[-1])
        return self._compared_card

    def label(self) -> str:
        """An open box's name; with a comparison, its activations in both runs."""
        text = self.box.label
        return f"{text} · {self.compared_text()}" if self.compared is not None else text

    def _tooltip(self) -> None:
        action = "double-click to open it" if self.collapsed else "double-click to shut it"
        held = f"<br>{esc(self.held.text())}" if self.saved else ""
        if self.compared is not None:
            held += f"<br>held for it when backward started: {esc(self.compared_text())} (earlier run → this run)"
        if self.collapsed and self.blocks:
            rows = "".join(f"<br>{esc(title)}: {ops} ops · {esc(human_bytes(activations))} activations"
                           for title, ops, activations in self.blocks)
            held += f"<br>each block, the bar of its activations:{rows}"
        self.setToolTip(f"<qt><b>{esc(self.box.title)}</b> · {esc(self.box.shown_kind or 'module')}<br>"
                        f"{self.ops} autograd nodes, {self.members} nodes in all{held}<br>({action})</qt>")

    def summary(self) -> str:
        """The last line of a shut box: its autograd nodes (ops), and the bytes they hold."""
        tensors = f"{self.members} tensors" if self.members != 1 else "1 tensor"
        if self.box.setup:  # no autograd node inside: what it made
            return tensors
        if self.ops == 0 and self.members and not self.made_graph:  # no_grad, inference_mode, frozen weights
            text = tensors
            if self.now is None:  # (with the op that ran now the card has no room for it)
                text += ", no graph"
        elif self.ops == 0 and self.members:  # autograd destroyed its nodes: its parameters are left
            text = "no graph now"
        else:
            text = f"{self.ops} ops" if self.ops != 1 else "1 op"
        if self.compared is not None:  # a comparison: its activations in each run say more than the op count
            return self.compared_card_text()
        if self.now is not None:  # stepping forward through it: what ran, as an open box would show
            return running_line(text, self.now, self.LABEL_FONT, CARD_TEXT_W)
        if self.held.activations:  # what checkpointing it could free; the weights are held anyway
            return f"{text} · {human_bytes(self.held.activations)} activations"
        return f"{text} · {human_bytes(self.held.weights)} weights" if self.held.weights else text

    def anchor_in(self) -> QPointF:
        return QPointF(self.rect.center().x(), self.rect.top())

    def anchor_out(self) -> QPointF:
        return QPointF(self.rect.center().x(), self.rect.bottom())

    def label_rect(self, shift: float | None = None, below: bool | None = None, drop: float | None = None) -> QRectF:
        """Where an open box's name sits: on the top border (or the bottom one), breaking the dashed
        line, inside the box's corners (a longer name is elided to its width); ``drop`` below
        that, inside the box, under an enclosing box's name."""
        shift = self.label_shift if shift is None else shift
        drop = self.label_drop if drop is None else drop
        border = self.rect.bottom() if (self.label_below if below is None else below) else self.rect.top()
        width = min(self.label_width() + 10, self.rect.width() - 20 - shift)
        return QRectF(self.rect.left() + 10 + shift, border - self.LABEL_H / 2 + drop, max(0.0, width), self.LABEL_H)

    def label_width(self) -> float:
        """The width of an open box's whole name in :attr:`LABEL_FONT`."""
        text = self.label()
        if text != self._label_width[0]:
            self._label_width = (text, QFontMetricsF(self.LABEL_FONT).horizontalAdvance(text))
        return self._label_width[1]

    def prepareGeometryChange(self) -> None:
        super().prepareGeometryChange()  # (Qt asks boundingRect here: the old one, to repaint where it was)
        self._bounds = None  # the caller changes the box next: boundingRect is worked out anew

    def boundingRect(self) -> QRectF:
        # asked for every box in view at each paint (11,000 shut boxes of a deep MLP zoomed out):
        # kept until the box, its label or its place changes
        if self._bounds is None:
            self._bounds = self.rect.adjusted(-9, -self.LABEL_H / 2 - 9, 9, 9).united(
                self.label_rect().adjusted(-1, -1, 1, 1))
        return QRectF(self._bounds)

    def paint(self, painter, option, widget=None) -> None:
        c = colors()
        if self.collapsed:
            self._paint_shut(painter, option)
            return
        painter.setPen(QPen(c.q("running_border"), 2.2, Qt.DashLine) if self.running else QPen(c.q("group_border"), 1, Qt.DashLine))
        painter.setBrush(Qt.NoBrush)  # outline only: translucent fills of big boxes make panning slow
        painter.save()
        if self.spared:  # a box nested one row under its parent's top: its outline breaks for the parent's name
            keep = QPainterPath()
            keep.addRect(self.boundingRect())
            for label in self.spared:
                cut = QPainterPath()
                cut.addRect(label)
                keep = keep.subtracted(cut)
            painter.setClipPath(keep, Qt.IntersectClip)  # within any clip already set (a page of a PDF)
        painter.drawRoundedRect(self.rect, 10, 10)
        painter.restore()
        # (its name, on the border, is drawn above the edges: graphview.qt.canvas.box_labels)

    def _paint_shut(self, painter, option) -> None:
        c = colors()
        if self.running or self.error:  # a node inside is executing, or failed: the box lights up as it would
            painter.setPen(Qt.NoPen)
            painter.setBrush(c.q("running_glow" if self.running else "error_glow"))
            painter.drawRoundedRect(self.rect.adjusted(-7, -7, 7, 7), 14, 14)
        if self.running:
            painter.setPen(QPen(c.q("running_border"), 3))
            painter.setBrush(c.q("running_fill"))
        elif self.error:  # the legend's "where the error happened"
            painter.setPen(QPen(c.q("error_border"), 3))
            painter.setBrush(c.q("collapsed_fill"))
        elif self.now is not None:  # forward: the op at the cursor ran inside
            painter.setPen(QPen(c.q("selection"), 2.6))
            painter.setBrush(c.q("collapsed_fill"))
        elif self.freed:  # backward ran through it and freed what it saved, as its nodes show
            painter.setPen(QPen(c.q("freed_border"), 1.2, Qt.DashLine))
            painter.setBrush(c.q("freed_fill"))
        else:
            painter.setPen(QPen(c.q("collapsed_border"), 1.6))
            painter.setBrush(c.q("collapsed_fill"))
        painter.drawRoundedRect(self.rect, 8, 8)
        if option.levelOfDetailFromTransform(painter.worldTransform()) < 0.3:
            return
        # three lines: where it is, what it is, what it holds (and repeated blocks: a bar each)
        inner = self.rect.adjusted((SHUT_W - CARD_TEXT_W) / 2, 3, -(SHUT_W - CARD_TEXT_W) / 2, -3)
        if self.box.repeats is not None:
            bars = QRectF(inner.left() + 4, inner.bottom() - BARS_H + 3, inner.width() - 8, BARS_H - 5)
            self._paint_bars(painter, bars)
            inner.setBottom(inner.bottom() - BARS_H)
        third = inner.height() / 3
        faded = self.faded()
        for row, (font, text) in enumerate(self.card_lines(inner.width())):
            painter.setFont(font)
            painter.setPen(c.q("freed_text") if faded else c.q("collapsed_text") if row == 0 else c.q("subtitle"))
            painter.drawText(QRectF(inner.left(), inner.top() + row * third, inner.width(), third + (2 if row == 0 else 0)),
                             Qt.AlignCenter, text)

    def card_lines(self, width: float) -> list[tuple[QFont, str]]:
        """A shut card's three lines as drawn ``width`` wide, each in its font, elided to that
        width: where it is, what it is, what it holds (:meth:`summary`)."""
        small = self.LABEL_FONT
        font = self.title_font()
        return [(font, elided(f"▸ {self.box.title}", font, width)),
                (small, elided(self.box.shown_kind or "module", small, width)),
                (small, elided(self.summary(), small, width))]

    def faded(self) -> bool:
        """Whether a shut card's text is drawn faded: as its card is, freed by backward; lit up as
        running, or at the cursor, it reads in full (a node inside is executing)."""
        return self.freed and not self.running and self.now is None

    def _paint_bars(self, painter, area: QRectF) -> None:
        """A bar per repeated block, as tall as its activations against the largest block's, on a
        baseline (a block that holds none shows the baseline alone)."""
        c = colors()
        painter.setPen(QPen(c.q("freed_text") if self.freed else c.q("subtitle"), 0.8))
        painter.drawLine(QPointF(area.left(), area.bottom()), QPointF(area.right(), area.bottom()))
        blocks = self.blocks
        most = max((activations for _, _, activations in blocks), default=0)
        if not blocks or most <= 0:
            return
        step = area.width() / len(blocks)
        gap = 1.0 if step > 3 else 0.0
        painter.setPen(Qt.NoPen)
        painter.setBrush(c.q("freed_border") if self.freed else c.q("saved_border"))
        for k, (_, _, activations) in enumerate(blocks):
            height = area.height() * activations / most
            if height > 0:
                painter.drawRect(QRectF(area.left() + k * step, area.bottom() - height, step - gap, height))

    def title_font(self) -> QFont:
        """The font of a shut box's first line (its path): bold, smaller for a long path (which is
        elided beyond that), never under :data:`SMALLEST_TEXT_PT`."""
        font = QFont("DejaVu Sans", NAME_PT)
        font.setBold(True)
        if QFontMetricsF(font).horizontalAdvance(f"▸ {self.box.title}") > self.rect.width() - 12:
            font.setPointSizeF(SMALLEST_TEXT_PT)
        return font

    def mouseDoubleClickEvent(self, event) -> None:
        self.sigToggled.emit(self.key)


def solid(item) -> bool:
    """Whether ``item`` is drawn as a block a label, a note or a page's cut must not cross: a
    visible node, or a shut module box (the card in place of its nodes)."""
    return item.isVisible() and (isinstance(item, NodeItem) or isinstance(item, GroupItem) and item.collapsed)
