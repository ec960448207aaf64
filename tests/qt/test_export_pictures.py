"""Exported pictures: real text in PDFs, the caption and the legend in PNG, SVG and PDF."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pypdf
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage

from graphview.core.captions import caption
from graphview.core.drawing import Drawing
from graphview.core.hierarchy import Layout, collapsed_at_level, module_boxes
from graphview.core.options import RunOptions
from graphview.qt.canvas import FILL, NODE_H, NODE_W, GroupItem
from graphview.qt.canvas.groups import solid
from graphview.qt.export import content_rect, render_scene
from graphview.qt.export_page import ExportPage
from graphview.qt.widgets.legend import LEGEND
from tests.conftest import lesson, model


def words(text: str) -> str:
    return " ".join(text.split())


def show(window, run, index=None):
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(window.overview_index() if index is None else index)
    return window


def visible_nodes(window):
    return [item for item in window.scene.node_items.values() if item.isVisible()]


@pytest.fixture(scope="module")
def transformer(request):
    from graphview.capture.script import run_script
    from graphview.core.run import Run

    events: list[dict] = []
    run_script(model("transformer_block"), events.append, RunOptions())
    return Run(events)


def pdf_runs(path) -> list[tuple[str, float, float, float]]:
    """Each piece of text in the PDF: (text, font size on the page, x, y from the top of the page)."""
    page = pypdf.PdfReader(str(path)).pages[0]
    height = float(page.mediabox.height)
    pieces = []

    def visit(text, cm, tm, font, size):
        if text.strip():
            scale = abs(cm[3] * tm[3])
            x = cm[0] * tm[4] + cm[4]
            y = cm[3] * tm[5] + cm[5]
            pieces.append((text, size * scale, x, height - y))

    page.extract_text(visitor_text=visit)
    return pieces


def test_a_shut_module_box_is_exported_as_its_card(window, transformer, tmp_path):
    show(window, transformer)
    window.view.change_level(-1)  # shut the outermost boxes
    shut = [g for g in window.scene.boxes.groups.values() if g.collapsed and g.isVisible()]
    assert {g.path for g in shut} >= {"embed", "encoder.layers.0", "head"}
    path = tmp_path / "shut.pdf"
    window.export_image(str(path))
    text = words(pypdf.PdfReader(str(path)).pages[0].extract_text())
    for group in shut:  # its path, type and what it holds, as on the canvas
        assert f"{group.path} {group.box.type}" in text and group.summary() in text, group.path
    assert all(content_rect(window.scene).contains(g.sceneBoundingRect()) for g in shut)  # inside the picture


def test_pdf_labels_are_text_at_the_canvas_size_inside_their_boxes(window, transformer, tmp_path):
    """Every box open the graph takes several A4 pages (one scale for all): each label is text,
    at the canvas's size times that scale, where the canvas draws it."""
    from graphview.core.export import PAPER_MARGIN
    from graphview.qt.export import PaperPages

    show(window, transformer)
    window.view.change_level(None)  # every module box open: every node drawn
    path = tmp_path / "graph.pdf"
    window.export_image(str(path))
    reader = pypdf.PdfReader(str(path))
    text = words(" ".join(page.extract_text() for page in reader.pages))
    nodes = visible_nodes(window)
    assert len(nodes) > 40
    for item in nodes:
        title = item.node.title
        if len(title) <= 20:  # short enough never to be elided
            assert title in text, title
        else:  # elided at the start (dotted names) or the middle (op names): the end is kept
            assert title[-8:] in text, title
    assert "100×32 float32" in text  # a subtitle, and no ligature in "float32"
    # the text is drawn at the canvas's size (times the pages' scale), inside its node's box
    pages = PaperPages(window.scene, content_rect(window.scene), caption(transformer, window.cursor), True,
                       ExportPage(QRectF()).colors)
    assert len(pages.pages) == len(reader.pages) > 1
    part, s = pages.pages[0], pages.scale
    item = next(i for i in nodes if i.node.title == "embed.weight")
    centre = item.scenePos() - part.source.topLeft() + part.graph_rect.topLeft()
    paper_w = pages.paper()[0]
    expected = ((paper_w - part.width * s) / 2 + centre.x() * s, PAPER_MARGIN + centre.y() * s)
    size, x, y = next((size, x, y) for t, size, x, y in pdf_runs(path) if t.strip() == "embed.weight")
    assert 6 * s < size < NODE_H / 3 * s
    assert abs(x - expected[0]) < NODE_W / 2 * s and abs(y - expected[1]) < NODE_H / 2 * s


def test_pdf_holds_the_caption_and_the_legend(window, transformer, tmp_path):
    show(window, transformer)
    path = tmp_path / "graph.pdf"
    window.export_image(str(path))
    text = words(pypdf.PdfReader(str(path)).pages[0].extract_text())
    expected = caption(transformer, window.cursor)
    assert expected.startswith("transformer_block.py · step 1 of 1 · event ")
    assert words(expected) in text
    for entry in LEGEND:
        assert entry.text in text, entry.text


def test_svg_holds_the_caption_and_every_legend_entry(window, record, tmp_path):
    run = record(lesson("prediction"))
    show(window, run)
    path = tmp_path / "graph.svg"
    window.export_image(str(path))
    texts = [t.text for t in ET.parse(path).iter("{http://www.w3.org/2000/svg}text") if t.text]
    joined = words(" ".join(texts))
    assert words(caption(run, window.cursor)) in joined
    assert joined.startswith("prediction.py · event ")  # a plain script: no step
    for entry in LEGEND:
        assert entry.text in texts, entry.text
    titles = {i.node.title for i in visible_nodes(window)}
    assert titles and titles <= set(texts)


def test_a_png_grows_by_the_legend_and_shows_its_swatches(window, record, tmp_path):
    run = record(lesson("prediction"))
    show(window, run)
    scale = 2.0
    bare, full = tmp_path / "bare.png", tmp_path / "full.png"
    render_scene(window.scene, str(bare), scale, caption="", legend=False)
    render_scene(window.scene, str(full), scale, caption="", legend=True)
    page = ExportPage(content_rect(window.scene), "", legend=True)
    bare_image, full_image = QImage(str(bare)), QImage(str(full))
    assert bare_image.width() == int(content_rect(window.scene).width() * scale)
    assert page.legend_height > 30
    assert abs(full_image.height() - bare_image.height() - page.legend_height * scale) <= 1
    first = page.cells[0]  # the first node kind's swatch, in its fill colour
    assert first.entry.fill == FILL["param"]
    centre = first.swatch.center() * scale
    assert QColor(full_image.pixel(int(centre.x()), int(centre.y()))) == FILL["param"]


def test_the_caption_goes_on_top_and_pushes_the_graph_down(window, record, tmp_path):
    run = record(lesson("prediction"))
    show(window, run)
    text = caption(run, window.cursor)
    plain, captioned = tmp_path / "plain.png", tmp_path / "captioned.png"
    render_scene(window.scene, str(plain), 1.0, caption="", legend=False)
    render_scene(window.scene, str(captioned), 1.0, caption=text, legend=False)
    page = ExportPage(content_rect(window.scene), text, legend=False)
    assert page.caption_height > 10
    assert abs(QImage(str(captioned)).height() - QImage(str(plain)).height() - page.caption_height) <= 1
    # dark caption text in the band above the graph, nothing but white in a plain export there
    image = QImage(str(captioned))
    band = page.caption_rect.toRect()
    dark = [(x, y) for x in range(band.left(), band.right(), 2) for y in range(band.top(), band.bottom(), 2)
            if QColor(image.pixel(x, y)).lightness() < 100]
    assert len(dark) > 20


def test_a_picture_exported_with_a_depth_draws_deeper_modules_shut(qapp, transformer, tmp_path):
    from graphview.qt.export import render_run

    def text_of(depth):
        path = tmp_path / f"depth{depth}.pdf"
        render_run(transformer, str(path), depth=depth)
        return words(" ".join(page.extract_text() for page in pypdf.PdfReader(str(path)).pages))

    everything, top, inner = text_of("all"), text_of(0), text_of(1)
    assert "AddmmBackward0" not in text_of(None)  # by default: shut to fit one A4 page
    # the head's addmm and the attention's inside are drawn when open; shut, their modules are one box each
    assert "AddmmBackward0" in everything and "AddmmBackward0" not in top
    assert "NllLossBackward0" in top  # the loss is outside every module
    for box in ("embed", "encoder.layers.0", "head"):
        assert box in top
    assert "encoder.layers.0.self_attn" in inner and "encoder.layers.0.self_attn" in everything
    assert len(top) < len(inner) < len(everything)


def test_a_real_models_picture_is_drawn_shut_to_fit_and_says_so(qapp, record, tmp_path):
    """GPT-2's PDF with every box open was one page 6.6 m tall (197 rows): by default its deeper
    modules are drawn shut down to the deepest level at which it fits two A4 pages (or, if none
    does, every module shut), and a note says how to open them; ``all`` opens every box on more
    A4 pages, a depth draws to it, and neither needs a note on the depth."""
    pytest.importorskip("transformers")
    from graphview.core.export import default_fits
    from graphview.qt.export import render_run
    from tests.conftest import zoo

    gpt2 = record(zoo("gpt2_lm"))

    def pdf(depth, notes):
        path = tmp_path / f"{depth}.pdf"
        render_run(gpt2, str(path), depth=depth, notes=notes)
        return pypdf.PdfReader(str(path)).pages

    notes: list[str] = []
    fitted = pdf(None, notes)
    note = notes[0]
    level = int(note.removeprefix("drawn as --depth ").split(":")[0])
    assert "--depth all opens every box" in note
    everything: list[str] = []
    opened = pdf("all", everything)
    assert not any(n.startswith("drawn as") for n in everything)
    assert len(opened) > len(fitted)
    # the pages written, and those every box open takes, as read back from both PDFs
    page_s = "page" if len(fitted) == 1 else "pages, a part of the graph each"
    assert f"; the PDF has {len(fitted)} {page_s} (every box open: " in note
    assert f" pt tall, on {len(opened)} pages); " in note and len(notes) == 1
    for page in list(fitted) + list(opened):  # A4, either way up
        assert sorted((round(float(page.mediabox.width)), round(float(page.mediabox.height)))) == [595, 842]
    same: list[str] = []
    assert len(pdf(level, same)) == len(fitted) and not any(n.startswith("drawn as") for n in same)
    # the deepest level that fits: one level deeper would not
    drawing = Drawing(gpt2)
    drawing.update(final=True)
    boxes = module_boxes(drawing)
    shut = Layout(drawing, boxes, collapsed_at_level(boxes, level)).size()
    assert default_fits(*shut) or level == 0
    assert not default_fits(*Layout(drawing, boxes, collapsed_at_level(boxes, level + 1)).size())
    assert f"every box open: {Layout(drawing, boxes, set()).size()[0]} rows" in note


def test_a_graph_too_tall_even_shut_says_so(qapp, record, write_script, tmp_path):
    """Forty layers with a tanh between them, outside every module: shut to level 0 the graph
    still does not fit a page; the note does not claim it fits, and the PDF has a page per part."""
    from graphview.qt.export import render_run

    run = record(write_script(
        "import torch\n"
        "layers = [torch.nn.Linear(4, 4) for _ in range(40)]\n"
        "h = torch.randn(2, 4)\n"
        "for layer in layers:\n"
        "    h = torch.tanh(layer(h))\n"
        "h.sum().backward()\n"))
    notes: list[str] = []
    pages = render_run(run, str(tmp_path / "tall.pdf"), notes=notes)
    assert pages == len(pypdf.PdfReader(str(tmp_path / "tall.pdf")).pages) > 1
    render_run(run, str(tmp_path / "open.pdf"), depth="all")
    opened = len(pypdf.PdfReader(str(tmp_path / "open.pdf")).pages)
    assert opened > pages
    [note] = notes
    assert note.startswith("drawn as --depth 0") and "does not fit 2 A4 pages" in note and "to keep the graph" not in note
    assert f"; the PDF has {pages} pages, a part of the graph each (every box open: " in note
    assert f" pt tall, on {opened} pages); --depth all opens every box" in note


@pytest.mark.parametrize("sample, level", [("gradient_penalty", "as shown"), ("transformer_block", None),
                                           ("transformer_block", 1)])
def test_pdf_pages_are_cut_where_no_node_box_card_or_box_name_is(window, record, sample, level):
    """A tall picture is cut into pages between rows: never through a node, a shut box's card, or
    an open box's name on its top border (the MLP sample's PDF, two pages before it printed whole
    on one, had half of "model.2 · Linear" at the foot of its first page and half at the head of its
    second)."""
    from graphview.qt.export import PaperPages

    run = record(model(sample))
    show(window, run)
    if level != "as shown":
        window.view.change_level(level)
    pages = PaperPages(window.scene, content_rect(window.scene), caption(run, window.cursor), True,
                       ExportPage(QRectF()).colors)
    cuts = [page.source.bottom() for page in pages.pages[:-1]]
    assert cuts, "one page: nothing to check"
    blocks = [item.sceneBoundingRect() for item in window.scene.items() if solid(item)]
    names = [g.mapRectToScene(g.label_rect()) for g in window.scene.items()
             if isinstance(g, GroupItem) and g.isVisible() and not g.collapsed]
    assert names
    for y in cuts:
        assert not [r for r in blocks if r.top() < y < r.bottom()], y
        assert not [r for r in names if r.top() < y < r.bottom()], y
