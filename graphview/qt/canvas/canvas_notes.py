"""What the canvas says when there is little to draw: a message in the middle of an empty canvas
(the start of a run, a run that failed before any op), and a note where no autograd graph is alive
(between steps and after the run, only leaves are left)."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QGraphicsView

from graphview.qt.canvas.groups import solid
from graphview.qt.canvas.style import colors

#: what the empty canvas says at the start of a run
START_HINT = ("The start of the run (event 0).\nStep forward (→) to watch autograd build the graph op by op; "
              "End jumps to the end of the run.")
#: what it says once the cursor has left event 0 with nothing to draw yet (GPT-2's constructor: 60 ops)
NOTHING_YET = ("Nothing to draw yet at event {index} / {last}: a tensor is drawn once an op uses it (what a "
               "model's constructor makes waits for the forward that uses it).\nStep forward (→) goes on op by op; "
               "Next step (Shift+→) and To backward skip ahead.")


def shown_message(message: str, cursor: int, events: int | None) -> str:
    """The note on the empty canvas, ``message``, at event ``cursor`` of a run of ``events`` events
    (None: no drawing yet): the start hint says where the cursor is once it moved on."""
    if message == START_HINT and cursor > 0:
        last = events - 1 if events is not None else cursor  # (as the timeline counts)
        return NOTHING_YET.format(index=cursor, last=last)
    return message


def paint_message(view: QGraphicsView, painter: QPainter, text: str) -> None:
    """``text`` in the middle of the viewport of ``view``."""
    painter.save()
    painter.resetTransform()
    area = QRectF(view.viewport().rect()).adjusted(40, 40, -40, -40)
    painter.setPen(colors().q("message"))
    painter.setFont(QFont("DejaVu Sans", 11))
    painter.drawText(area, Qt.AlignCenter | Qt.TextWordWrap, text)
    painter.restore()


def paint_graph_gone(view: QGraphicsView, painter: QPainter) -> None:
    """Between steps and after the run, autograd holds no graph: only leaves are left, spread
    over the rows their graph took. A note says why the canvas is nearly empty, where it hides
    no node (at the top, else at the bottom, else in a corner)."""
    gone = view.scene().graph_gone_at()
    if gone is None:
        return
    text = (f"No autograd graph at this point: the last one was destroyed at event {gone} "
            "(nothing referenced its output any more). Leaves keep their .grad; step back (←) to see the graph.")
    painter.save()
    painter.resetTransform()
    font = QFont("DejaVu Sans", 9)
    painter.setFont(font)
    port = QRectF(view.viewport().rect())
    width = min(port.width() - 40, 440.0)
    height = QFontMetricsF(font).boundingRect(QRectF(0, 0, width - 20, 400), Qt.TextWordWrap, text).height() + 12
    # where it hides no node (its leaves sit all over the rows their graph took): top, bottom, corners
    xs = (port.center().x() - width / 2, 10.0, port.width() - width - 10)
    places = [QRectF(x, y, width, height) for x in xs for y in (10.0, port.height() - height - 10)]
    note = next((place for place in places if not any(map(solid, view.items(place.toRect())))), places[0])
    c = colors()
    painter.setPen(QPen(c.q("group_border"), 1))
    painter.setBrush(c.q("overview_fill"))
    painter.drawRoundedRect(note, 6, 6)
    painter.setPen(c.q("group_label"))
    painter.drawText(note.adjusted(10, 6, -10, -6), Qt.AlignCenter | Qt.TextWordWrap, text)
    painter.restore()
