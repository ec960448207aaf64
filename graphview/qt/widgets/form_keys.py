"""FormKeys: bare-key shortcuts give way to a focused form control."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (QAbstractButton, QAbstractItemView, QAbstractSlider, QAbstractSpinBox, QComboBox,
                               QLineEdit)


class FormKeys(QObject):
    """The timeline's bare-key shortcuts (Space, arrows, Home, End) stand back while a form control
    has the focus: Space ticks the checkbox, Down opens the combo box, Right moves the slider.

    :meth:`watch` the application: the filter goes on each form control as it takes the focus (a
    shortcut is asked of the focused widget), not on the whole application, where every event of
    every object (each paint, each timer) would pass through Python."""

    def watch(self, app) -> None:
        app.focusChanged.connect(self._focused)
        self._focused(None, app.focusWidget())

    def _focused(self, old, new) -> None:
        if isinstance(new, self.CONTROLS):
            new.installEventFilter(self)  # (installed again, it is still there once)

    KEYS = {Qt.Key_Space, Qt.Key_Left, Qt.Key_Right, Qt.Key_Up, Qt.Key_Down, Qt.Key_Home, Qt.Key_End,
            Qt.Key_PageUp, Qt.Key_PageDown}
    CONTROLS = (QAbstractButton, QComboBox, QAbstractSpinBox, QAbstractSlider, QLineEdit, QAbstractItemView)

    def eventFilter(self, obj, event) -> bool:
        if (event.type() == QEvent.ShortcutOverride and isinstance(obj, self.CONTROLS)
                and event.key() in self.KEYS and not (event.modifiers() & ~Qt.KeypadModifier)):
            event.accept()  # the focused control takes the key; no shortcut fires
            return True
        return False
