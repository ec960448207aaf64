"""The memory chart's title: the peak's headline and the legend's keys, laid out for the chart's width.

Wrapped as one paragraph above the plot, the title took six lines of a 1366x768 window's 310 px
chart ("activations peak 2.4 KiB / all saved 3.8 KiB at event 49, / weights and inputs included /
(cpu) activations / weights / inputs and constants"), more with an earlier run's key. Now a title
that fits the chart's width takes one line; one that does not takes two, the headline above the
legend, each the longest of its forms that fits (:func:`fit`): the headline leaves out what the
stack holds besides activations, then the event and the device, then its bold, then goes on to a
second line before the red figure, the legend's other keys beside it (never its words: what each
figure is stays said); the legend's keys take their short words, then those that do not fit are
counted. The chart's tooltip says all of it (:func:`tooltip`).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QFont, QTextDocument

from graphview.qt.plain import esc, esc_lines

#: the title's type size (the chart's tick labels are about as big)
SIZE = "9pt"
#: between the headline and the legend on one line, between two keys (closer in a narrow chart's legend)
GAP, KEY_GAP, NARROW_KEY_GAP = "&nbsp;&nbsp;&nbsp; ", "&nbsp;&nbsp; ", "&nbsp; "


@dataclass(frozen=True)
class Segment:
    """A run of the headline in one style: ``text`` (which never breaks across lines if ``whole``),
    then ``tail``."""

    text: str
    css: str
    whole: bool = False
    tail: str = ""

    def html(self) -> str:
        if self is BREAK:
            return "<br>"
        return f"<span style='{self.css}'>{unbroken(self.text) if self.whole else esc(self.text)}{esc(self.tail)}</span>"

    def plain(self) -> str:
        return self.text + self.tail


#: where the shortest headline goes on to a second line (its red figure there, its words kept)
BREAK = Segment("\n", "")


@dataclass(frozen=True)
class Key:
    """A legend key: its mark in its line's colour, its words, and the shorter words of a narrow chart."""

    colour: str
    mark: str
    words: str
    short: str

    def html(self, words: str, text_colour: str) -> str:
        # a key's mark and its words never part at a line's end: the mark would read as the last key's
        return (f"<span style='color:{self.colour}'>{self.mark}</span>"
                f"<span style='color:{text_colour}'>&nbsp;{unbroken(words)}</span>")


@dataclass(frozen=True)
class TitleParts:
    """What the title says: its headline's forms, longest first, and the legend's keys."""

    headlines: tuple[tuple[Segment, ...], ...]
    keys: tuple[Key, ...]
    text_colour: str  # the keys' words
    muted: str  # "+2 more"

    def full(self) -> str:
        """The whole title on one line (as HTML)."""
        return f"{headline_html(self.headlines[0])}{GAP}{self.legend(len(self.keys), short=False)}"

    def legend(self, shown: int, short: bool, first: int = 0) -> str:
        """The keys from ``first`` on: ``shown`` of them (in their short words if ``short``), the rest counted."""
        keys = self.keys[first:]
        words = [key.html(key.short if short else key.words, self.text_colour) for key in keys[:shown]]
        if shown < len(keys):
            words.append(f"<span style='color:{self.muted}'>+{len(keys) - shown}&nbsp;more</span>")
        return (NARROW_KEY_GAP if short else KEY_GAP).join(words)

    def legends(self, first: int = 0) -> list[str]:
        """The legend's forms (the keys from ``first`` on), longest first."""
        keys = len(self.keys) - first
        forms = [self.legend(keys, short=False, first=first)]
        forms += [self.legend(shown, short=True, first=first) for shown in range(keys, 0, -1)]
        return forms


def headline_html(segments: tuple[Segment, ...]) -> str:
    return "".join(segment.html() for segment in segments)


def peak_headlines(figures: tuple[str, ...], device: str, text: str, cursor: str,
                   muted: str) -> tuple[tuple[Segment, ...], ...]:
    """The forms of a headline of a peak, longest first. ``figures``: all saved at the peak, its
    event, the activations' own peak and what the stack holds besides (``", weights included"``).
    The activations first: what the forward made and backward alone keeps (weights are held anyway);
    the red dot marks the top of the stack, all saved: its words wear the dot. Every form says what
    each figure is; the shortest breaks the line before the red figure (T5's at 1366x768 dropped
    "all saved", and its bare red "● 294.9 KiB" said nothing)."""
    saved, event, activations, besides = figures
    bold = f"color:{text}; font-weight:bold"
    peak = Segment(f"activations peak {activations}", bold)
    gap = Segment("\u00a0 ", "")
    at_event = Segment(f"● all saved {saved}", f"color:{cursor}", whole=True, tail=f" at event {event}")
    all_saved = Segment(f"● all saved {saved}", f"color:{cursor}", whole=True)
    on = Segment(f" ({device})", f"color:{muted}")
    light = Segment(peak.text, f"color:{text}")  # (bold, the words take a few pixels more)
    return ((peak, gap, at_event, Segment(f"{besides} ({device})", f"color:{muted}")),
            (peak, gap, at_event, on),
            (peak, gap, all_saved, on),
            (peak, gap, all_saved),
            (light, gap, all_saved),
            (peak, BREAK, all_saved))


def fit(parts: TitleParts, width: float, font: QFont) -> str:
    """The title as HTML for a line ``width`` pixels wide, in ``font`` at :data:`SIZE`: all of it on
    one line where it fits, else the headline above the legend, each the longest form that fits
    (the shortest where none does: the label then wraps it). A headline on two lines (its shortest
    form) has the legend's other keys beside its red figure where they fit there, the activations' key
    before its first line (the legend's first key is the headline's first figure's: activations)."""
    whole = parts.full()
    if html_width(whole, font) <= width:
        return whole
    headline = longest_fitting([headline_html(h) for h in parts.headlines], width, font)
    if "<br>" in headline and parts.keys:
        # two lines still: the first (the activations' peak) wears the activations' key, the other
        # keys go beside the red figure (counted if need be); else a third line takes the legend
        key = parts.keys[0]
        marked = f"<span style='color:{key.colour}'>{key.mark}</span>&nbsp;{headline}"
        beside = [f"{marked}{GAP}{legend}" if legend else marked for legend in parts.legends(first=1)]
        if html_width(beside[-1], font) <= width:
            return longest_fitting(beside, width, font)
    legend = longest_fitting(parts.legends(), width, font)
    return f"{headline}<br>{legend}"


def longest_fitting(forms: list[str], width: float, font: QFont) -> str:
    return next((form for form in forms if html_width(form, font) <= width), forms[-1])


def html_width(html: str, font: QFont) -> float:
    """How wide ``html`` is on one line, as the title's label lays it out (its document's margins in)."""
    document = QTextDocument()
    document.setDefaultFont(font)
    document.setHtml(f"<span style='font-size:{SIZE}'>{html}</span>")
    return document.idealWidth() + 2 * document.documentMargin()


def tooltip(parts: TitleParts, about: str) -> str:
    """The chart's tooltip: the whole headline, each key in its whole words, then ``about`` (plain text)."""
    headline = "".join(segment.plain() for segment in parts.headlines[0])
    keys = "<br>".join(f"<span style='color:{key.colour}'>{key.mark}</span> {esc(key.words)}" for key in parts.keys)
    return f"<qt><b>{esc(headline)}</b><br>{keys}<br><br>{esc_lines(about)}</qt>"


def unbroken(label: str) -> str:
    """``label`` as HTML that wraps only between its parts: "weights (parameters)" may
    break before its bracket, "earlier run 2: retain_graph, checkpoint encoder.layers.* options" after
    its colon and commas, nowhere else."""
    words = esc(label).replace(" ", "&nbsp;")
    for breaking in ("&nbsp;(", ":&nbsp;", ",&nbsp;"):
        words = words.replace(breaking, breaking.replace("&nbsp;", " "))
    return words
