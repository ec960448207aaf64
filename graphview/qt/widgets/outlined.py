"""Controls whose edges read on either theme (check boxes, text fields, spin and combo boxes),
and a selected tab that stands out from the others.

Fusion outlines the controls in the window's colour darkened by 40%: on the dark theme that is
#191b20 around a #181a1f box on the #202329 panel (1.1:1), so an unchecked option in the run options
read as a bare word and an empty field as nothing at all; on the light theme #bcbcbc on #efefef
(1.6:1). :class:`OutlinedControls` draws them as the desktop's style does, then outlines them in the
theme's ``control_border`` (3:1 and more against the panel and the field, WCAG's contrast for a
control's edge). A focused control keeps the style's own focus outline.

Fusion fills a selected tab a shade off the others (on the dark theme #21242a beside #1e2026,
1.05:1, or #3b3f46 beside #35393f, 1.1:1; 1.2:1 on the light theme): the style draws a line in the
theme's ``accent`` along the selected tab's outer edge, 3:1 and more against the tabs beside it, as
editors mark the tab in front.

:func:`outline_everywhere` makes it the application's style: every control of every window and
dialog is drawn by it, none left out.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QApplication, QProxyStyle, QStyle, QTabBar

from graphview.qt import theme as themes

#: the complex controls outlined (their frame), with the corner radius Fusion gives them
FRAMED = (QStyle.CC_SpinBox, QStyle.CC_ComboBox)
#: how thick the selected tab's line is
ACCENT_WIDTH = 3


class OutlinedControls(QProxyStyle):
    """The desktop's style with a check box's box and a field's frame outlined in the theme's
    ``control_border`` (its ``disabled`` colour for a disabled control), and the selected tab
    marked by a line in the theme's ``accent``."""

    def drawPrimitive(self, element, option, painter, widget=None) -> None:
        super().drawPrimitive(element, option, painter, widget)
        if element == QStyle.PE_IndicatorCheckBox:
            if not (option.state & QStyle.State_HasFocus and option.state & QStyle.State_KeyboardFocusChange):
                outline(option, painter, 0)
        elif element == QStyle.PE_FrameLineEdit and not option.state & QStyle.State_HasFocus:
            outline(option, painter, 2)

    def drawComplexControl(self, control, option, painter, widget=None) -> None:
        super().drawComplexControl(control, option, painter, widget)
        if control in FRAMED and option.frame and not option.state & QStyle.State_HasFocus:
            outline(option, painter, 2)

    def drawControl(self, element, option, painter, widget=None) -> None:
        super().drawControl(element, option, painter, widget)
        if element == QStyle.CE_TabBarTabShape and option.state & QStyle.State_Selected:
            theme = themes.current()
            colour = theme.accent if option.state & QStyle.State_Enabled else theme.disabled
            painter.fillRect(accent_line(option.rect, option.shape), QColor(colour))


def accent_line(rect: QRect, shape: QTabBar.Shape) -> QRect:
    """The line along a tab's outer edge (the edge away from the page it shows), for the bar's ``shape``."""
    inner = rect.adjusted(1, 1, -1, -1)  # (inside the tab's outline at its sides)
    if shape in (QTabBar.RoundedSouth, QTabBar.TriangularSouth):
        return QRect(inner.left(), rect.bottom() - ACCENT_WIDTH + 1, inner.width(), ACCENT_WIDTH)
    if shape in (QTabBar.RoundedWest, QTabBar.TriangularWest):
        return QRect(rect.left(), inner.top(), ACCENT_WIDTH, inner.height())
    if shape in (QTabBar.RoundedEast, QTabBar.TriangularEast):
        return QRect(rect.right() - ACCENT_WIDTH + 1, inner.top(), ACCENT_WIDTH, inner.height())
    return QRect(inner.left(), rect.top(), inner.width(), ACCENT_WIDTH)


def outline(option, painter: QPainter, radius: float) -> None:
    """A 1 px line just inside ``option.rect``, where the style draws the control's edge."""
    theme = themes.current()
    colour = theme.control_border if option.state & QStyle.State_Enabled else theme.disabled
    painter.save()
    painter.setRenderHint(QPainter.Antialiasing, radius > 0)
    painter.setPen(QPen(QColor(colour), 1))
    painter.setBrush(Qt.NoBrush)
    if radius:
        painter.drawRoundedRect(QRectF(option.rect).adjusted(0.5, 0.5, -0.5, -0.5), radius, radius)
    else:
        painter.drawRect(option.rect.adjusted(0, 0, -1, -1))
    painter.restore()


_installed: list[OutlinedControls] = []  # (kept: the application does not own it for Python)


def outline_everywhere() -> None:
    """Make :class:`OutlinedControls` the application's style, once: every line edit, combo box,
    spin box, check box and tab bar of every window and dialog is drawn by it."""
    if _installed:
        return
    style = OutlinedControls()
    _installed.append(style)
    QApplication.setStyle(style)
