"""What the canvas says when there is little to draw: a message in the middle of an empty canvas
(the start of a run, a run that failed before any op), and a note where no autograd graph is alive
(between steps and after the run, only leaves are left)."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QGraphicsView

from graphview.qt.canvas.groups import GroupItem, solid
from graphview.qt.canvas.sketch import SketchItem
from graphview.qt.canvas.style import colors

#: what the empty canvas says at the start of a run
START_HINT = ("The start of the run (event 0).\nStep forward (→) to watch autograd build the graph op by op; "
              "End jumps to the end of the run.")
#: what it says once the cursor has left event 0 with nothing to draw yet (GPT-2's constructor: 60 ops)
NOTHING_YET = ("Nothing to draw yet at event {index} / {last}: a tensor is drawn once an op uses it (what a "
               "model's constructor makes waits for the forward that uses it).\nStep forward (→) goes to the "
               "first op that draws something, Step back (←) to the last that drew something or the start; Next "
               "step (Shift+→) and To backward skip ahead.")


#: and at the run's end (a script that only builds a model: → goes there in one press)
NOTHING_AT_END = ("The end of the run (event {index}), with nothing to draw: a tensor is drawn once an op uses it "
                  "(what a model's constructor makes waits for a forward that uses it).\nStep back (←) goes to "
                  "the last op that drew something, or the start.")


def shown_message(message: str, cursor: int, events: int | None, ended: bool = False) -> str:
    """The note on the empty canvas, ``message``, at event ``cursor`` of a run of ``events`` events
    (None: no drawing yet): the start hint says where the cursor is once it moved on, and that the
    run is over where the cursor is at the event that ``ended`` it."""
    if message == START_HINT and cursor > 0 and ended:
        return NOTHING_AT_END.format(index=cursor)
    if message == START_HINT and cursor > 0:
        last = events - 1 if events is not None else cursor  # (as the timeline counts)
        return NOTHING_YET.format(index=cursor, last=last)
    return message


def paint_message(view: QGraphicsView, painter: QPainter, text: str, hint: bool = False) -> None:
    """``text`` in the middle of the viewport of ``view``: in the colour of a problem (a run that
    stopped before autograd recorded anything), or of a plain note where it is a ``hint`` (the
    start of a run: in red, a newcomer's first screen read as an error)."""
    painter.save()
    painter.resetTransform()
    area = QRectF(view.viewport().rect()).adjusted(40, 40, -40, -40)
    painter.setPen(colors().q("subtitle" if hint else "message"))
    painter.setFont(QFont("DejaVu Sans", 11))
    painter.drawText(area, Qt.AlignCenter | Qt.TextWordWrap, text)
    painter.restore()


def paint_graph_gone(view: QGraphicsView, painter: QPainter) -> None:
    """Between steps and after the run, autograd holds no graph: only leaves are left, spread
    over the rows their graph took. A note says why the canvas is nearly empty, on a plain card
    (nothing shows through its text) placed by :func:`graph_gone_note_rect`."""
    gone = view.scene().graph_gone_at()
    if gone is None:
        return
    text = GRAPH_GONE.format(event=gone)
    painter.save()
    painter.resetTransform()
    font = QFont("DejaVu Sans", 9)
    painter.setFont(font)
    note = graph_gone_note_rect(view, text, font)
    c = colors()
    painter.setPen(QPen(c.q("group_border"), 1))
    painter.setBrush(c.q("background"))
    painter.drawRoundedRect(note, 6, 6)
    painter.setPen(c.q("group_label"))
    painter.drawText(note.adjusted(10, 6, -10, -6), Qt.AlignCenter | Qt.TextWordWrap, text)
    painter.restore()


#: the note of a canvas where no autograd graph is alive (``event``: where the last one was destroyed)
GRAPH_GONE = ("No autograd graph at this point: the last one was destroyed at event {event} (nothing referenced "
              "its output any more). Leaves keep their .grad; step back (←) to see the graph.")


def graph_gone_note_rect(view: QGraphicsView, text: str, font: QFont) -> QRectF:
    """Where the note ``text`` goes, in viewport pixels: the first place (the top's middle, left and
    right, then the bottom's) where it covers nothing drawn (no node, no box's frame or name, no
    edge, not the overview), narrower if that makes room (the leaves left of a model opened a level
    down sit in its boxes: beside them, a margin); else, looked for the same way, the first off the
    overview that hides no node, shut card or box name, else the first off the overview that hides
    no node or shut card, else the first that hides no node or shut card; else the top's middle."""
    port = QRectF(view.viewport().rect())
    overview = getattr(view, "overview", None)
    taken = QRectF(overview.geometry()) if overview is not None and overview.isVisible() else QRectF()

    def places(width: float) -> list[QRectF]:
        height = QFontMetricsF(font).boundingRect(QRectF(0, 0, width - 20, 400), Qt.TextWordWrap, text).height() + 12
        xs = (port.center().x() - width / 2, 10.0, port.width() - width - 10)
        return [QRectF(x, y, width, height) for y in (10.0, port.height() - height - 10) for x in xs]

    cache: dict[tuple, tuple[list, bool]] = {}

    def looked_at(place: QRectF) -> tuple[list, bool]:
        """The items the note would hide there, and whether one of them is an open box's name
        (each place is looked at once, whichever of the tries below asks)."""
        key = (place.x(), place.y(), place.width())
        known = cache.get(key)
        if known is None:
            in_scene = view.mapToScene(place.toRect()).boundingRect()
            hidden = [item for item in view.items(place.toRect())
                      if item.isVisible() and not isinstance(item, SketchItem) and _drawn_over(item, in_scene)]
            name = any(isinstance(item, GroupItem) and not item.collapsed and in_scene.intersects(item.label_rect())
                       for item in hidden)
            known = cache[key] = (hidden, name)
        return known

    def hides_a_node(place: QRectF) -> bool:
        return any(map(solid, looked_at(place)[0]))

    widest = min(port.width() - 40, 440.0)
    widths = [width for width in (widest, 340.0, 260.0) if width <= widest]
    for bad in (lambda place: place.intersects(taken) or bool(looked_at(place)[0]),
                lambda place: place.intersects(taken) or hides_a_node(place) or looked_at(place)[1],
                lambda place: place.intersects(taken) or hides_a_node(place),
                hides_a_node):
        for width in widths:
            found = next((place for place in places(width) if not bad(place)), None)
            if found is not None:
                return found
    return places(widest)[0]


def _drawn_over(item, place: QRectF) -> bool:
    """Whether a note at ``place`` (scene units), among ``item``'s bounds, hides something of it: an
    open module box only where its frame or its name is (inside, it is empty canvas)."""
    if not isinstance(item, GroupItem) or item.collapsed:
        return True
    inside = item.rect.adjusted(6, 6, -6, -6)
    return place.intersects(item.label_rect()) or not inside.contains(place)
