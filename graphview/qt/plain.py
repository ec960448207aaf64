"""Text stays text: how a string from a trace or a script reaches a Qt widget.

Qt renders a string as rich text (HTML) wherever it may: a tooltip, a ``QLabel`` and a
``QMessageBox`` in their default ``Qt.AutoText`` decide by what the string holds
(``Qt::mightBeRichText``: a tag before the first line break), and a ``QTextBrowser`` given
``setHtml`` renders all of it. A tensor named ``<img src=file:///...>`` then loads a local file
into the window, and ``<font size=7>`` spoofs it. The rule (docs/safety.md, "Text stays text"):

- HTML that graphview builds escapes every value it interpolates: :func:`esc`;
- a tooltip that is text is given as :func:`text_tip` (escaped, and marked as rich text so that
  Qt never shows ``&lt;`` literally); one that mixes graphview's markup with values escapes them;
- a label or a message box that shows such text is set to ``Qt.PlainText``: :func:`plain_label`,
  :func:`make_plain`, :func:`message_box`;
- painting (``QPainter.drawText``), item views' cells, line edits, window titles and menu entries
  are plain text already.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QMessageBox, QWidget


def esc(value: object) -> str:
    """``value`` as text inside HTML graphview builds: ``<``, ``>``, ``&`` and quotes escaped (so it
    is safe inside an attribute's quotes as well)."""
    return html.escape(str(value), quote=True)


def esc_lines(value: object) -> str:
    """:func:`esc`, its line breaks kept as ``<br>``."""
    return esc(value).replace("\r\n", "\n").replace("\n", "<br>")


def text_tip(value: object) -> str:
    """A tooltip that shows ``value`` as it is, line breaks kept. (Given as plain text, a tooltip is
    still taken for HTML when it holds a tag before its first line break; given escaped but without
    a tag, Qt would show ``&lt;`` itself. So: escaped, inside ``<qt>``, which Qt always renders.)"""
    text = str(value)
    return f"<qt>{esc_lines(text)}</qt>" if text else ""


def make_plain(label: QLabel) -> QLabel:
    """``label`` shows its text as text, never as HTML (returned, for chaining)."""
    label.setTextFormat(Qt.PlainText)
    return label


def plain_label(text: str = "", parent: QWidget | None = None) -> QLabel:
    """A ``QLabel`` that shows ``text`` as text (its default, ``Qt.AutoText``, renders a string that
    looks like HTML as HTML)."""
    return make_plain(QLabel(text, parent))


def message_box(parent: QWidget | None, icon: QMessageBox.Icon, title: str, text: str) -> QMessageBox:
    """A modal message box (not shown yet) whose title and text are text, never HTML."""
    box = QMessageBox(icon, title, text, QMessageBox.Ok, parent)
    box.setTextFormat(Qt.PlainText)
    return box


def button_text(value: object) -> str:
    """Text for a button or a menu entry: ``&`` doubled, so it marks no shortcut key."""
    return str(value).replace("&", "&&")
