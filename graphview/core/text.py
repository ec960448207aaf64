"""Text from a trace, made safe for where it is shown: a terminal and XML files.

A trace is data someone else may have written, and so is what a script prints: a tensor's name, a
module path, an op name, a dtype, an error message can hold anything JSON can (control characters,
a lone surrogate, markup). Shown as it is, ``\\x1b[2J`` clears a terminal and ``\\x1b]0;...\\x07``
retitles it; ``\\x00`` makes an SVG or GraphML file malformed XML. The rules (docs/safety.md):

- the terminal gets :func:`visible` text: every character that is not printable (control and
  format characters, bidirectional overrides, lone surrogates) written as its Python escape
  (``\\x1b``, ``\\u202e``, ``\\ud800``), so a line says what it holds and nothing more;
- XML gets :func:`xml_text`: the characters XML 1.0 forbids written the same way, the rest as it is
  (the XML writer escapes ``<`` and ``&``).

Qt has its own rules (markup): :mod:`graphview.qt.plain`.
"""

from __future__ import annotations

import re

#: characters XML 1.0 does not allow anywhere in a document (its ``Char`` production), lone
#: surrogates included
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _escape(c: str) -> str:
    """One character as Python writes it in a string literal (``\\x1b``, ``\\u202e``, ``\\ud800``)."""
    return repr(c)[1:-1]


def visible(text: object, newlines: bool = False) -> str:
    """``text`` with every character that is not printable escaped (``\\x1b``): safe to print on a
    terminal. ``newlines``: keep line breaks (``\\n``) as they are, for text printed as several lines
    (each line is still escaped); otherwise the result is one line."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() or (newlines and c == "\n") else _escape(c) for c in s)


#: the characters of an op's name an edge's label says at most (the window's and the web page's):
#: a trace's strings run to 4,096 characters (torch's op names to some 30); beyond, it is cut with an
#: ellipsis
LABEL_CHARS = 48


def label_text(text: str) -> str:
    """``text`` (an op's name, a trace's string) as an edge's label says it: on one line, a line
    break or another character that is not printable escaped (``\\n``, :func:`visible`),
    :data:`LABEL_CHARS` characters at most."""
    text = visible(text[:LABEL_CHARS + 1])  # (one more: a longer one is cut, with "…")
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def visible_lines(text: object) -> str:
    """:func:`visible` keeping line breaks."""
    return visible(text, newlines=True)


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 forbids (``\\x00``, ``\\x1b``, a lone surrogate...)
    escaped as :func:`visible` escapes them: fit to be an XML attribute or text node."""
    return _XML_FORBIDDEN.sub(lambda m: _escape(m.group()), text)
