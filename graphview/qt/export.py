"""Render the whole graph (not just the viewport) to PNG, SVG or PDF, with its caption and legend.

No dialogs here. The layout of a picture is :class:`graphview.qt.export_page.ExportPage`.
"""

# NOTE [fonts in exports]
# The canvas sets its fonts in points. A painter turns points into device pixels with the DPI of
# the device it paints on, before the world transform that maps scene units onto the device.
# The nodes' boxes and the elision of their labels are measured at the screen's DPI
# (``QFontMetricsF(font)``), so every device an export paints on gets that same DPI: a QImage
# its dots per metre, a QSvgGenerator and a QPdfWriter their resolution. A QPdfWriter left at
# its default 1200 dpi drew each 9 pt label 12.5 times too large (1200 / 96): a few huge black
# glyphs, clipped.
# Labels are names from code (``float32``, ``ffn.weight``): exports draw them without
# ligatures, so the text a PDF holds is the label's own characters ("fl", not "\ufb02").

from __future__ import annotations

import os
from bisect import bisect_right
from contextlib import contextmanager
from functools import cached_property

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QRectF, QSize, QSizeF
from PySide6.QtGui import QFont, QGuiApplication, QImage, QPageLayout, QPageSize, QPainter, QPdfWriter
from PySide6.QtSvg import QSvgGenerator

from graphview.core import timeline
from graphview.core.captions import caption as caption_of, script_name
from graphview.core.drawing import LAYER_HEIGHT
from graphview.core.export import (ALL_OPEN, DEFAULT_PAGES, GRAPH_MARGIN, MIN_SCALE, PAPER, PAPER_MARGIN, PAPER_NAME,
                                   ExportError, check_writable, default_fits, save)
from graphview.core.run import Run
from graphview.core.text import xml_text
from graphview.qt.canvas import GraphScene, GroupItem, NodeItem, style
from graphview.qt.canvas.groups import solid
from graphview.qt.canvas.style import CanvasColors
from graphview.qt.export_page import ExportPage

IMAGE_FORMATS = (".png", ".svg", ".pdf")
#: the themes a picture can be drawn in: the window's (None), or light whatever the window's is
THEMES = (None, "light")
MAX_PIXELS = 16384
TITLE = "graphview autograd graph"


def font_dpi() -> float:
    """The DPI fonts given in points are measured with (the screen's logical DPI; 96 without a screen)."""
    screen = QGuiApplication.primaryScreen()
    return screen.logicalDotsPerInchY() if screen is not None else 96.0


def content_rect(scene: GraphScene) -> QRectF:
    """The part of the scene an export shows: every visible node and module box (a shut box is
    a card in place of its nodes), with a margin."""
    rect = QRectF()
    for item in scene.items():
        if item.isVisible() and isinstance(item, (NodeItem, GroupItem)):
            rect = rect.united(item.sceneBoundingRect())
    if rect.isNull():
        rect = QRectF(0, 0, 200, 100)
    return rect.adjusted(-GRAPH_MARGIN, -GRAPH_MARGIN, GRAPH_MARGIN, GRAPH_MARGIN)


def png_scale(source: QRectF, scale: float) -> float:
    """``scale``, lowered where needed so that neither side of the PNG exceeds ``MAX_PIXELS``."""
    return min(scale, MAX_PIXELS / max(source.width(), source.height()))


@contextmanager
def _without_ligatures():
    """Painters resolve the canvas's fonts against the application's font: for the duration of
    an export, that font asks for no shaping (ligatures) where the script does not need it."""
    font = QGuiApplication.font()
    plain = QFont(font)
    plain.setStyleStrategy(QFont.StyleStrategy(font.styleStrategy() | QFont.PreferNoShaping))
    QGuiApplication.setFont(plain)
    try:
        yield
    finally:
        QGuiApplication.setFont(font)


def _begin(painter: QPainter, path: str) -> None:
    if not painter.isActive():
        raise ExportError(f"cannot write {path}")


def _png(page: ExportPage, scene: GraphScene, buffer: QBuffer, path: str, scale: float) -> float:
    factor = png_scale(page.rect(), scale)
    image = QImage(QSize(max(1, int(page.width * factor)), max(1, int(page.height * factor))), QImage.Format_ARGB32)
    dots_per_metre = round(font_dpi() / 0.0254)
    image.setDotsPerMeterX(dots_per_metre)
    image.setDotsPerMeterY(dots_per_metre)
    image.fill(page.colors.q("background"))
    painter = QPainter(image)
    painter.setRenderHints(QPainter.Antialiasing | QPainter.TextAntialiasing)
    painter.scale(factor, factor)
    page.paint(painter, scene)
    painter.end()
    if not image.save(buffer, "PNG"):
        raise ExportError(f"cannot write {path}: the image could not be encoded")
    return factor


def _svg(page: ExportPage, scene: GraphScene, buffer: QBuffer, path: str, scale: float) -> None:
    generator = QSvgGenerator()
    generator.setOutputDevice(buffer)
    generator.setResolution(round(font_dpi()))
    generator.setSize(QSize(int(page.width), int(page.height)))
    generator.setViewBox(page.rect())
    generator.setTitle(TITLE)  # vector: ``scale`` does not apply
    painter = QPainter(generator)
    _begin(painter, path)
    page.paint(painter, scene)
    painter.end()


#: a picture cut into pages may be printed up to this much smaller than the paper's width, in
#: SHRINK_STEPS steps, where that saves a page (its last rows alone on a page of their own)
SHRINK_MAX = 0.1
SHRINK_STEPS = 4
#: the halvings that find how wide a one-page picture's page can be (the scale within 1/2**8 of the largest)
WIDEN_STEPS = 8


def one_page_scale() -> float:
    """The smallest scale a whole picture is printed at on one page (rather than cut in parts at
    MIN_SCALE or more): the one at which its smallest text prints at ``SMALLEST_TEXT_PT * MIN_SCALE``
    points (4.8 pt; its 9 pt names at 5.4 pt), the sizes MIN_SCALE stands for. A scene unit is a
    pixel at :func:`font_dpi`, not a point: at 96 dpi MIN_SCALE prints the smallest text at 6.4 pt,
    and a 15-row graph (the MLP sample's, 1,513 units tall) was cut in two at a page break through
    a module box, on no page it could take at 0.6, landscape or portrait."""
    return min(MIN_SCALE, MIN_SCALE * 72.0 / font_dpi())


class PaperPages:
    """A PDF's pages: the picture on :data:`~graphview.core.export.PAPER` (A4), portrait or
    landscape, at one scale for every page. A picture that fits one page readably is one page,
    as wide as the paper holds at its scale (its caption and legend across it); a taller one is
    cut between rows of nodes into parts, a page each, at :data:`~graphview.core.export.MIN_SCALE`
    or more, every page with the legend, the first with the caption and the part, the others with
    the script's name, the part and the open box they begin inside.
    (The bundled transformer was one page 712 x 6,545 pt: 2.3 m.)"""

    def __init__(self, scene: GraphScene, source: QRectF, caption: str, legend: bool, colors: CanvasColors) -> None:
        self.scene = scene
        whole = ExportPage(source, caption, legend, colors)
        self.landscape, self.scale, one = self._one_page(whole)
        if self.scale >= MIN_SCALE:
            self.pages, self.count = [one], 1
            return
        cut = self._cut(whole, scene, source, caption, legend, colors)
        # whole on one page, its smallest text readable; or one part, which the paper turned the
        # other way prints larger (GPT-2 at --depth 0 was a part at the portrait's width, 0.364, its
        # page half empty, where landscape printed it whole at 0.445)
        if (cut[0][2] > 1 and self.scale >= one_page_scale()) or (cut[0][2] == 1 and self.scale >= cut[0][1]):
            self.pages, self.count = [one], 1
            return
        (self.landscape, self.scale, self.count), self._parts = cut

    def _cut(self, whole: ExportPage, scene: GraphScene, source: QRectF, caption: str, legend: bool,
             colors: CanvasColors) -> tuple[tuple[bool, float, int], tuple]:
        """((landscape, scale, pages), parts) for the picture cut in parts, as wide as the paper,
        the way up that needs the fewest pages."""
        # the first page has the whole caption; the others name the script and the part, and the
        # open module box they begin inside (its frame runs down the page, its name was left on the
        # page before): the same moment's three lines on every page took the room of a row
        boxes = _open_boxes(scene) if caption else []
        script = script_name(scene.run) if scene.run is not None else ""

        def page(k: int, count: int, top: float, bottom: float, inside: str = "") -> ExportPage:
            if not caption or count == 1:
                text = caption
            elif k == 0:
                text = f"{caption} · part 1 of {count}"
            else:
                text = " · ".join(filter(None, (script, f"part {k + 1} of {count}"))) + inside
            return ExportPage(QRectF(source.left(), top, source.width(), bottom - top), text, legend, colors,
                              whole.width)

        # what the caption and legend take (with a unit of graph): on the first page, and on the
        # others at their tallest, whichever box a page begins inside ("part 10 of 10": the widest)
        first = page(0, 10, source.top(), source.top() + 1).height - 1
        later = max(page(9, 10, source.top(), source.top() + 1, f" · inside {name}").height - 1
                    for name in {""} | {name for name, _ in boxes})
        gaps = _gaps(scene)
        choices = []
        for landscape in (False, True):
            scale, cuts = self._cuts(gaps, source, (first, later), landscape, self._fit_width(whole, landscape))
            choices.append((landscape, scale, cuts))
        landscape, scale, cuts = min(choices, key=lambda c: (len(c[2]), -c[1], c[0]))
        return (landscape, scale, len(cuts) - 1), (page, cuts, boxes)

    @cached_property
    def pages(self) -> list[ExportPage]:
        """Each page's picture, made when first asked for (the count needs only where the cuts are)."""
        page, cuts, boxes = self._parts
        return [page(k, self.count, top, bottom, _inside(boxes, top))
                for k, (top, bottom) in enumerate(zip(cuts, cuts[1:]))]

    def _cuts(self, gaps: list[float], source: QRectF, around: tuple[float, float], landscape: bool,
              widest: float) -> tuple[float, list[float]]:
        """(scale, cuts) on paper turned ``landscape``: the largest scale from ``widest`` (the
        paper's width) down by SHRINK_MAX at most that needs the fewest pages (cut only between
        rows, at the paper's width a picture can need a page more for its last rows: the MLP
        sample's loss alone on a third page), and where its parts begin and end, for a first page
        whose caption and legend take ``around[0]`` scene units and later pages ``around[1]``."""
        best: tuple[float, list[float]] | None = None
        for k in range(SHRINK_STEPS + 1):
            scale = widest * (1 - SHRINK_MAX * k / SHRINK_STEPS)
            if k and scale < MIN_SCALE:
                break
            room = (self.paper(landscape)[1] - 2 * PAPER_MARGIN) / scale  # a page's height in scene units
            bands = [max(room - taken, 2 * GRAPH_MARGIN) for taken in around]
            cuts = _balanced(gaps, source, bands, _cuts(gaps, source, bands))
            if best is None or len(cuts) < len(best[1]):
                best = (scale, cuts)
        return best

    def paper(self, landscape: bool | None = None) -> tuple[float, float]:
        landscape = self.landscape if landscape is None else landscape
        return (PAPER[1], PAPER[0]) if landscape else PAPER

    def _one_page(self, whole: ExportPage) -> tuple[bool, float, ExportPage]:
        """The orientation that prints the whole picture largest on one page, that scale (at most 1),
        and the page: as wide as the paper holds at that scale, so that its caption and legend
        run across the paper (as wide as the graph, the MLP sample's caption took three lines and
        its legend three rows, and the page printed smaller)."""
        choices = [(landscape, *self._widest(whole, landscape)) for landscape in (False, True)]
        return max(choices, key=lambda choice: (round(choice[1], 3), not choice[0]))

    def _widest(self, whole: ExportPage, landscape: bool) -> tuple[float, ExportPage]:
        """(scale, page) for ``whole`` on one page turned ``landscape``: the largest scale at which
        the page as wide as the paper holds at it fits the paper's height (found by halving)."""
        width, height = (side - 2 * PAPER_MARGIN for side in self.paper(landscape))

        def fit(page: ExportPage) -> float:
            return min(1.0, width / page.width, height / page.height)

        low, page = fit(whole), whole
        high = min(1.0, width / whole.width)  # a page no narrower than the graph
        for _ in range(WIDEN_STEPS):
            middle = (low + high) / 2
            wider = ExportPage(whole.source, whole.caption, bool(whole.cells), whole.colors, width / middle)
            if fit(wider) >= middle * (1 - 1e-9):  # its width is the paper's at ``middle``
                low, page = middle, wider
            else:
                high = middle
        return fit(page), page

    def _fit_width(self, page: ExportPage, landscape: bool) -> float:
        width, _ = self.paper(landscape)
        return min(1.0, (width - 2 * PAPER_MARGIN) / page.width)

    def paint(self, writer: QPdfWriter, painter: QPainter, dpi: int) -> None:
        paper_w, paper_h = self.paper()
        for k, page in enumerate(self.pages):
            if k:
                writer.newPage()
            painter.save()
            painter.scale(dpi / 72, dpi / 72)  # points
            painter.fillRect(QRectF(0, 0, paper_w, paper_h), page.colors.q("background"))
            left = (paper_w - page.width * self.scale) / 2
            painter.translate(left, PAPER_MARGIN)
            painter.scale(self.scale, self.scale)
            page.paint(painter, self.scene)
            painter.restore()


def _gaps(scene: GraphScene) -> list[float]:
    """The middles of the gaps between rows (scene y), where a page may end."""
    spans = sorted((rect.top(), rect.bottom()) for rect in _uncut(scene))
    gaps = []
    reach = None
    for top, bottom in spans:
        if reach is not None and top > reach:
            gaps.append((reach + top) / 2)
        reach = bottom if reach is None else max(reach, bottom)
    return gaps


def _cuts(gaps: list[float], source: QRectF, bands: list[float]) -> list[float]:
    """Where the parts of a tall picture begin and end (scene y), the first at most ``bands[0]``
    tall and the others ``bands[1]``: in a gap between two rows (``gaps``, ascending), never
    through a node, a shut box or an open box's name."""
    cuts = [source.top()]
    while source.bottom() - cuts[-1] > (band := bands[min(len(cuts) - 1, 1)]):
        limit = cuts[-1] + band
        last = bisect_right(gaps, limit) - 1  # the last gap within the band
        fits = last >= 0 and gaps[last] > cuts[-1] + LAYER_HEIGHT / 2
        cuts.append(gaps[last] if fits else limit)
    cuts.append(source.bottom())
    return cuts


#: the halvings that find the shortest parts a picture can be cut in, in as many pages
BALANCE_STEPS = 12


def _balanced(gaps: list[float], source: QRectF, bands: list[float], cuts: list[float]) -> list[float]:
    """``cuts`` (as :func:`_cuts` makes them for ``bands``) moved so that the parts are as even as
    the gaps between rows allow, in as many pages: each page filled in turn had left the last one
    a few rows (GPT-2 at --depth 1: 2,041 units of graph on the first page, its last 4 nodes, 409
    units, on the second). The shortest bands, in the same proportion, that still need as many
    pages, found by halving; cut only where ``cuts`` were (between rows, or through one where a
    row is taller than a page)."""
    count = len(cuts)
    in_gaps = set(gaps)
    through = sum(cut not in in_gaps for cut in cuts[1:-1])
    low, high = 0.0, 1.0
    for _ in range(BALANCE_STEPS):
        middle = (low + high) / 2
        trial = _cuts(gaps, source, [band * middle for band in bands])
        if len(trial) == count and sum(cut not in in_gaps for cut in trial[1:-1]) <= through:
            high, cuts = middle, trial
        else:
            low = middle
    return cuts


def _open_boxes(scene: GraphScene) -> list[tuple[str, QRectF]]:
    """The open module boxes drawn: each one's name and its frame (scene units)."""
    return [(item.label(), item.mapRectToScene(item.rect)) for item in scene.items()
            if isinstance(item, GroupItem) and item.isVisible() and not item.collapsed]


def _inside(boxes: list[tuple[str, QRectF]], y: float) -> str:
    """" · inside NAME": the innermost open box a page beginning at scene ``y`` continues (its
    frame ran on from the page before, its name left there), as the page's caption says it."""
    around = [(frame.width(), name) for name, frame in boxes if frame.top() < y < frame.bottom()]
    return f" · inside {min(around)[1]}" if around else ""


def _uncut(scene: GraphScene):
    """The scene rects a page's edge must not cross: nodes, shut boxes' cards, and the names open
    boxes carry on their top border (between two rows, where a cut would halve them)."""
    for item in scene.items():
        if solid(item):
            yield item.sceneBoundingRect()
        elif isinstance(item, GroupItem) and item.isVisible():
            yield item.mapRectToScene(item.label_rect())


def _pdf(page: ExportPage, scene: GraphScene, buffer: QBuffer, path: str, scale: float) -> int:
    """A4 pages (:class:`PaperPages`), a scene unit to a point at most (vector: ``scale`` does not
    apply). Returns the number of pages."""
    dpi = round(font_dpi())
    pages = PaperPages(scene, page.source, page.caption, bool(page.cells), page.colors)
    writer = QPdfWriter(buffer)
    writer.setTitle(TITLE)
    writer.setCreator("graphview")
    writer.setResolution(dpi)
    paper_w, paper_h = pages.paper()
    writer.setPageSize(QPageSize(QSizeF(min(paper_w, paper_h), max(paper_w, paper_h)), QPageSize.Point, PAPER_NAME))
    writer.setPageOrientation(QPageLayout.Landscape if pages.landscape else QPageLayout.Portrait)
    writer.setPageMargins(QMarginsF(0, 0, 0, 0), QPageLayout.Point)
    painter = QPainter(writer)
    _begin(painter, path)
    pages.paint(writer, painter, dpi)
    painter.end()
    del painter, writer  # the PDF is complete once its writer is gone
    return len(pages.pages)


#: each format's painter: (page, scene, buffer, path, scale) -> the scale a PNG was drawn at, or None
_WRITERS = {".png": _png, ".svg": _svg, ".pdf": _pdf}


def render_scene(scene: GraphScene, path: str, scale: float = 1.0, caption: str = "", legend: bool = True,
                 theme: str | None = None) -> float | int | None:
    """Write every visible element of ``scene`` to ``path`` (format from the suffix), with
    ``caption`` above it (none when empty) and the legend below it (when ``legend``), all in one
    theme: the canvas's (``theme`` None), or ``"light"`` whatever the canvas's is.

    Returns the scale a PNG was drawn at (``scale``, or less where the image would have been
    larger than ``MAX_PIXELS`` on a side), the number of pages of a PDF; None for SVG."""
    if theme not in THEMES:
        raise ExportError(f"an export is drawn in the window's theme or in 'light', not {theme!r}")
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in IMAGE_FORMATS:
        raise ExportError(f"cannot tell the image format from {path!r}: use .png, .svg or .pdf")
    if not scale > 0:
        raise ExportError(f"the scale must be greater than 0, not {scale}")
    check_writable(path)
    with _whole(scene), canvas_colors(scene, style.LIGHT if theme == "light" else None) as colors:
        return _render(scene, path, suffix, scale, caption, legend, colors)


@contextmanager
def _whole(scene: GraphScene):
    """Every item of ``scene`` at its place for the duration of an export: a box opening or
    shutting glides (the picture shows every node where it ends), and a big scene makes items
    near its view only (the picture has them all)."""
    scene.boxes.settle()
    region = scene.region
    if region is not None:
        scene.set_region(None)
    try:
        yield
    finally:
        if region is not None:
            scene.set_region(region)


def pdf_page_count(scene: GraphScene, caption: str = "", legend: bool = True) -> int:
    """The pages a PDF of ``scene`` as it is drawn now has (:class:`PaperPages`), without writing it."""
    with _whole(scene), _without_ligatures():
        return PaperPages(scene, content_rect(scene), caption, legend, style.colors()).count


@contextmanager
def canvas_colors(scene: GraphScene, colors: CanvasColors | None):
    """The canvas drawn in ``colors`` for the duration of an export (None: in those it has)."""
    if colors is None or colors is style.colors():
        yield style.colors()
        return
    try:
        with style.painted_in(colors):
            scene.apply_theme()
            yield colors
    finally:
        scene.apply_theme()


def _render(scene: GraphScene, path: str, suffix: str, scale: float, caption: str, legend: bool,
            colors: CanvasColors) -> float | int | None:
    selected = scene.selectedItems()
    scene.clearSelection()
    page = ExportPage(content_rect(scene), caption, legend, colors)
    # drawn into memory, then written by graphview: a full disk is reported with the OS's reason,
    # and the file appears complete or not at all
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.WriteOnly)
    try:
        with _without_ligatures():
            used = _WRITERS[suffix](page, scene, buffer, path, scale)
    finally:
        for item in selected:
            item.setSelected(True)
    buffer.close()
    if data.isEmpty():
        raise ExportError(f"cannot write {path}: nothing was drawn")
    content = bytes(data)
    if suffix == ".svg":
        content = svg_text(content).encode("utf-8")
    save(path, content)
    return used


def svg_text(data: bytes) -> str:
    """The SVG a :class:`QSvgGenerator` wrote, as well-formed XML. The generator escapes ``<`` and
    ``&`` in the text it draws but writes control characters as they are: a node labelled with a
    name that holds ``\x1b`` or ``\x00`` (a trace can hold any string) made the whole file
    unreadable. Those characters are written visibly (``\x1b``, :func:`graphview.core.text.xml_text`)."""
    return xml_text(data.decode("utf-8", "replace"))




def render_run(run: Run, path: str, at: int | None = None, scale: float = 1.0, caption: bool = True,
               legend: bool = True, depth: int | str | None = None, notes: list[str] | None = None,
               theme: str | None = None) -> float | int | None:
    """Headless: draw ``run`` as of event ``at`` and write it to ``path``.

    By default the state just before the last backward: the last graph complete, with its saved
    tensors (at the very end of a run autograd has freed most of what it built). ``depth``: module
    boxes open down to that level, deeper ones shut; :data:`ALL_OPEN`: every box open; None: open
    down to the deepest level at which the graph fits two paper pages readably
    (:func:`~graphview.core.export.default_fits`). A PDF too tall for one page gets a page per part.
    ``notes`` gets what a user should know of the picture (:func:`_picture_notes`). Returns what
    :func:`render_scene` returns."""
    scene = GraphScene()
    scene.set_run(run)
    index = timeline.overview(run) if at is None else at
    if not 0 <= index < len(run.events):
        raise ExportError(f"--at {at} is outside the run (it has events 0 to {len(run.events) - 1})")
    scene.set_cursor(index)
    shut = None
    if depth is None:
        level, rows = scene.boxes.shut_to_fit(default_fits)
        shut = (level, rows) if level is not None else None
    elif depth != ALL_OPEN:
        scene.boxes.show_down_to(depth)
    text = caption_of(run, index) if caption else ""
    used = render_scene(scene, path, scale, text, legend, theme)
    if notes is not None:
        pages = used if path.lower().endswith(".pdf") else None
        notes.extend(_picture_notes(scene, shut, pages, text, legend))
    return used


def _picture_notes(scene: GraphScene, shut: tuple[int, int] | None, pages: int | None, caption: str,
                   legend: bool) -> list[str]:
    """What a user should know of a picture just written from ``scene``: the level its module boxes
    were shut at and why (``shut``: that level and the rows the graph takes with every box open;
    None where none was shut to fit), and of a PDF the pages it has (``pages``, None for PNG and
    SVG) and, where boxes were shut, the pages it would have with every box open. Leaves every box
    of ``scene`` open when it counts those."""
    written = "" if not pages else (f"the PDF has {pages} page" if pages == 1 else
                                    f"the PDF has {pages} pages, a part of the graph each")
    if shut is None:
        return [f"the graph does not fit one {PAPER_NAME} page readably: {written}"] if pages and pages > 1 else []
    level, rows = shut
    layout = scene.boxes.layout
    size = layout.size() if layout is not None else (rows, 1)
    why = (f"to keep the graph within {DEFAULT_PAGES} {PAPER_NAME} pages" if default_fits(*size) else
           f"the fewest rows it can take ({size[0]}: even with every module shut it does not fit "
           f"{DEFAULT_PAGES} {PAPER_NAME} pages)")
    opened = f"every box open: {rows} rows, {rows * LAYER_HEIGHT:,.0f} pt tall"
    if pages:
        scene.boxes.set_all(set())
        opened += f", on {pdf_page_count(scene, caption, legend)} pages"
    return [f"drawn as --depth {level}: modules at level {level} and deeper are shut, one box each, {why}"
            + (f"; {written}" if written else "") + f" ({opened}); --depth all opens every box"]


def save_png(pixmap, path: str) -> None:
    """Write a widget's picture (``QWidget.grab()``) as a PNG, safely."""
    check_writable(path)
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.WriteOnly)
    if not pixmap.save(buffer, "PNG"):
        raise ExportError(f"cannot write {path}: the image could not be encoded")
    buffer.close()
    save(path, bytes(data))
