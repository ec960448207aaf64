"""Check boxes whose box reads on either theme.

Fusion outlines a check box's box in the window's colour darkened by 40%: on the dark theme that is
#191b20 around a #181a1f box on the #202329 panel (1.1:1), so an unchecked option in the run options
read as a bare word; on the light theme #bcbcbc on #efefef (1.6:1). :class:`OutlinedChecks` draws
the box as the application's style does, then outlines it in the theme's ``control_border``
(3:1 and more against the panel and the box, WCAG's contrast for a control's edge).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QCheckBox, QProxyStyle, QStyle

from graphview.qt import theme as themes


class OutlinedChecks(QProxyStyle):
    """The application's style with a check box's box outlined in the theme's ``control_border``
    (its ``disabled`` colour for a disabled box)."""

    def drawPrimitive(self, element, option, painter, widget=None) -> None:
        super().drawPrimitive(element, option, painter, widget)
        if element != QStyle.PE_IndicatorCheckBox:
            return
        theme = themes.current()
        colour = theme.control_border if option.state & QStyle.State_Enabled else theme.disabled
        painter.save()
        painter.setRenderHint(QPainter.Antialiasing, False)
        painter.setPen(QPen(QColor(colour), 1))
        painter.setBrush(Qt.NoBrush)
        painter.drawRect(option.rect.adjusted(0, 0, -1, -1))
        painter.restore()


def outline_checks(*boxes: QCheckBox) -> OutlinedChecks:
    """Give ``boxes`` the outlined style, which the caller keeps (a widget does not own its style)."""
    style = OutlinedChecks()
    for box in boxes:
        box.setStyle(style)
    return style
