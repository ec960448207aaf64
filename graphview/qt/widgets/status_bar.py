"""ElidingStatusBar: a status bar whose messages end in "…" where the permanent text on the right
begins, instead of running under it (the whole message is the bar's tooltip)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QStatusBar

from graphview.qt.plain import text_tip


class ElidingStatusBar(QStatusBar):
    """A QStatusBar whose temporary messages fit the room the permanent widgets leave."""

    #: the gap kept between a message and the permanent widgets, and the bar's own margins
    SPARE = 36

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._permanent: list = []
        self._message = ""
        self.messageChanged.connect(self._on_message_changed)

    def addPermanentWidget(self, widget, stretch: int = 0) -> None:
        self._permanent.append(widget)
        super().addPermanentWidget(widget, stretch)

    def room(self) -> int:
        """The width a message may take, in pixels."""
        taken = sum(w.sizeHint().width() for w in self._permanent if not w.isHidden())
        return max(40, self.width() - taken - self.SPARE)

    def showMessage(self, text: str, timeout: int = 0) -> None:
        shown = QFontMetrics(self.font()).elidedText(text, Qt.ElideRight, self.room())
        self.setToolTip(text_tip(text) if shown != text else "")  # a message quotes names: text, never HTML
        self._message = text
        super().showMessage(shown, timeout)

    def message(self) -> str:
        """The message shown now, whole (``currentMessage()`` is what fits)."""
        return self._message if self.currentMessage() else ""

    def _on_message_changed(self, text: str) -> None:
        if not text:
            self.setToolTip("")
            self._message = ""
