"""ElidingStatusBar: a status bar whose messages end in "…" where the permanent text on the right
begins, instead of running under it (the whole message is the bar's tooltip). A message is elided
again whenever that room changes: the bar resized, or a permanent widget took a new width (the run's
status set after the message, which had been elided to the room the status left before)."""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QStatusBar

from graphview.qt.plain import text_tip

#: what changes the room a message has: the bar's or a permanent widget's size, place or showing
_ROOM_EVENTS = (QEvent.Resize, QEvent.Move, QEvent.Show, QEvent.Hide, QEvent.LayoutRequest)


class ElidingStatusBar(QStatusBar):
    """A QStatusBar whose temporary messages fit the room the permanent widgets leave."""

    #: the gap kept between a message and the permanent widgets, and the bar's own margins
    SPARE = 36
    #: where Qt draws a message: from this far from the bar's left, to 2 px before its first permanent widget
    LEFT = 6
    #: the gap kept between a message's end and the first permanent widget
    GAP = 8

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._permanent: list = []
        self._message = ""
        self._until: float | None = None  # when the message goes (monotonic seconds), None: when replaced
        self.messageChanged.connect(self._on_message_changed)

    def addPermanentWidget(self, widget, stretch: int = 0) -> None:
        self._permanent.append(widget)
        super().addPermanentWidget(widget, stretch)
        widget.installEventFilter(self)

    def room(self) -> int:
        """The width a message may take, in pixels: what the permanent widgets' sizes leave, and
        where they are drawn once the bar has laid them out (the smaller)."""
        shown = [w for w in self._permanent if not w.isHidden()]
        room = self.width() - sum(w.sizeHint().width() for w in shown) - self.SPARE
        if shown and self.isVisible():
            room = min(room, shown[0].x() - 2 - self.LEFT - self.GAP)
        return max(40, room)

    def showMessage(self, text: str, timeout: int = 0) -> None:
        self._message = text
        self._until = time.monotonic() + timeout / 1000 if timeout > 0 else None
        self._show()

    def _show(self, shown: str | None = None) -> None:
        """The message elided to the room there is now (``shown``, where the caller has it), for
        the rest of its time."""
        text = self._message
        if shown is None:
            shown = QFontMetrics(self.font()).elidedText(text, Qt.ElideRight, self.room())
        left = 0 if self._until is None else max(1, round((self._until - time.monotonic()) * 1000))
        self.setToolTip(text_tip(text) if shown != text else "")  # a message quotes names: text, never HTML
        super().showMessage(shown, left)

    def _refit(self) -> None:
        """The room changed: a message shown is elided again to it."""
        if not self._message or not self.currentMessage():
            return
        shown = QFontMetrics(self.font()).elidedText(self._message, Qt.ElideRight, self.room())
        if shown != self.currentMessage():
            self._show(shown)

    def eventFilter(self, watched, event) -> bool:
        if event.type() in _ROOM_EVENTS and watched in self._permanent:
            self._refit()
        return super().eventFilter(watched, event)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._refit()

    def message(self) -> str:
        """The message shown now, whole (``currentMessage()`` is what fits)."""
        return self._message if self.currentMessage() else ""

    def _on_message_changed(self, text: str) -> None:
        if not text:
            self.setToolTip("")
            self._message = ""
            self._until = None
