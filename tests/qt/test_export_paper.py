"""Exports a person can print or paste: A4 pages (several for a graph too tall for one), module
names that never overlap, one theme per picture, captions that name the notebook."""

from __future__ import annotations

import itertools
import shutil
import subprocess

import pypdf
import pytest
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import QApplication

from graphview.core.export import MIN_SCALE, PAPER, page_fits
from graphview.core.options import RunOptions
from graphview.qt import theme as themes
from graphview.qt.canvas import GraphScene, GroupItem
from graphview.qt.canvas.style import DARK, LIGHT
from graphview.qt.export import content_rect, render_run, render_scene
from graphview.qt.export_page import ExportPage
from tests.conftest import model

WHISPER = '''
import torch
from transformers import WhisperConfig, WhisperForConditionalGeneration

torch.manual_seed(0)
model = WhisperForConditionalGeneration(WhisperConfig(
    vocab_size=60, num_mel_bins=8, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
    decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, d_model=16, max_source_positions=8,
    max_target_positions=16, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
    use_cache=False))
features = torch.randn(1, 8, 16)
labels = torch.randint(3, 60, (1, 5))


def step():
    return model(input_features=features, labels=labels).loss
'''


@pytest.fixture(scope="module")
def transformer():
    from graphview.capture.script import run_script
    from graphview.core.run import Run

    events: list[dict] = []
    run_script(model("transformer_block"), events.append, RunOptions())
    return Run(events)


def a4(page) -> bool:
    size = sorted((round(float(page.mediabox.width)), round(float(page.mediabox.height))))
    return size == [round(PAPER[0]), round(PAPER[1])]


def test_the_transformer_sample_prints_on_one_a4_page_by_default(qapp, transformer, tmp_path):
    """It was one PDF page 712 x 6,545 pt (2.3 m) and a PNG 1424 x 13,090 px: by default a picture
    opens its boxes down to the deepest level that fits two A4 pages at a readable scale (its
    top-level modules, which fit one)."""
    pdf, png = tmp_path / "t.pdf", tmp_path / "t.png"
    notes: list[str] = []
    pages = render_run(transformer, str(pdf), notes=notes)
    reader = pypdf.PdfReader(str(pdf))
    assert pages == len(reader.pages) == 1 and a4(reader.pages[0])
    # the note says what was written (it said "so the graph fits 2 A4 pages at most" over a
    # one-page PDF), and the pages the PDF would have with every box open, as --depth all writes it
    opened = len(pypdf.PdfReader(str(render_all(transformer, tmp_path))).pages)
    assert opened > 2
    assert notes == [f"drawn as --depth 0: modules at level 0 and deeper are shut, one box each, to keep the graph "
                     f"within 2 A4 pages; the PDF has 1 page (every box open: 66 rows, 6,336 pt tall, on {opened} "
                     "pages); --depth all opens every box"]
    picture: list[str] = []  # a PNG has no pages to speak of
    render_run(transformer, str(png), scale=2.0, notes=picture)
    assert picture == ["drawn as --depth 0: modules at level 0 and deeper are shut, one box each, to keep the graph "
                       "within 2 A4 pages (every box open: 66 rows, 6,336 pt tall); --depth all opens every box"]
    image = QImage(str(png))
    assert image.height() <= 2 * (PAPER[1] / MIN_SCALE) and image.width() <= 2 * (PAPER[1] / MIN_SCALE)
    if shutil.which("pdfinfo"):  # poppler reads it as a printer would
        info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
        assert "Pages:           1" in info and "(A4)" in info


def render_all(run, folder):
    """The PDF of ``run`` with every module box open (``--depth all``)."""
    path = folder / "every_box_open.pdf"
    render_run(run, str(path), depth="all")
    return path


def test_a_graph_too_tall_for_a_page_gets_a_page_per_part(qapp, transformer, tmp_path):
    """Every box open, the transformer takes 66 rows: A4 pages at one readable scale, cut between
    rows of nodes, each with the caption (which says the part) and the legend."""
    pdf = tmp_path / "all.pdf"
    notes: list[str] = []
    count = render_run(transformer, str(pdf), depth="all", notes=notes)
    reader = pypdf.PdfReader(str(pdf))
    assert count == len(reader.pages) > 1
    assert any(f"the PDF has {count} pages" in note for note in notes)
    texts = [" ".join(page.extract_text().split()) for page in reader.pages]
    for k, (page, text) in enumerate(zip(reader.pages, texts)):
        assert a4(page)
        assert f"part {k + 1} of {count}" in text
        assert "forward data flow" in text  # the legend
    # the moment in full on the first page; the others name the script, the part, and the open
    # box they begin inside (its frame ran down the page unnamed: a new user's complaint)
    assert "holds" in texts[0] and not any("holds" in text for text in texts[1:])
    assert all(f"transformer_block.py · part {k + 2} of {count}" in text for k, text in enumerate(texts[1:]))
    assert any(" · inside encoder.layers.0" in text for text in texts[1:])
    # every node is on some page, whole: its title appears
    for title in ("embed.weight", "NllLossBackward0", "EmbeddingBackward0", "AddmmBackward0"):
        assert any(title in text for text in texts), title
    # a node's title (9 pt on the canvas: 12 px at 96 dpi) prints no smaller than MIN_SCALE of it
    sizes = []
    reader.pages[0].extract_text(visitor_text=lambda t, cm, tm, font, size: sizes.append(size * abs(cm[3] * tm[3]))
                                 if " ".join(t.split()) == "embed.weight" else None)
    assert sizes and min(sizes) >= 12 * MIN_SCALE - 0.1, sizes
    if shutil.which("pdfinfo"):
        info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
        assert f"Pages:           {count}" in info


def test_the_window_exports_a_tall_graph_as_pages_too(window, transformer, tmp_path):
    window.begin_run(transformer.start["script"], RunOptions(), transformer)
    window.set_cursor(window.overview_index())
    window.view.change_level(None)  # every box open
    path = tmp_path / "window.pdf"
    window.export_image(str(path))
    reader = pypdf.PdfReader(str(path))
    assert len(reader.pages) > 1 and all(a4(page) for page in reader.pages)


def label_overlaps(scene: GraphScene) -> list[tuple[str, str]]:
    groups = [g for g in scene.items() if isinstance(g, GroupItem) and g.isVisible() and not g.collapsed]
    rects = [(g.path, g.label_rect()) for g in groups]
    return [(a, b) for (a, ra), (b, rb) in itertools.combinations(rects, 2) if ra.intersects(rb)]


def test_a_nested_box_name_prints_on_a_line_of_its_own(qapp, record, tmp_path):
    """The MLP sample's PDF printed ``model.0 · Linear`` 6 pt right of ``model · Sequential``
    and 2.4 pt lower, as if one line: it prints under it, a line apart."""
    pdf = tmp_path / "mlp.pdf"
    render_run(record(model("mlp_optimizer"), steps=1), str(pdf))
    found: dict[str, tuple[float, float, float]] = {}

    def note(text, cm, tm, font, size):  # where each box name's text starts, in points, and its size
        words = " ".join(text.split())
        if words.startswith(("model · ", "model.0 · ")):
            x, y = tm[4] * cm[0] + tm[5] * cm[2] + cm[4], tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
            found[words.split(" ")[0]] = (x, y, size * abs(cm[3] * tm[3]))

    pypdf.PdfReader(str(pdf)).pages[0].extract_text(visitor_text=note)
    (outer_x, outer_y, size), (inner_x, inner_y, _) = found["model"], found["model.0"]
    assert outer_y - inner_y >= 1.2 * size  # a line below (PDF y grows upwards)
    assert abs(inner_x - outer_x) < 2 * size  # under it, not beside it


def test_nested_module_names_never_overlap(qapp, record, write_script):
    """Whisper's ``model · WhisperModel``, ``model.encoder · WhisperEncoder`` and
    ``model.encoder.conv1 · Conv1d`` start on one row: each name goes right of the others, at every
    depth, and again when a comparison makes the names longer."""
    pytest.importorskip("transformers")
    from graphview.core import timeline

    run = record(write_script(WHISPER, "whisper_tiny.py"), steps=1)
    scene = GraphScene()
    scene.set_run(run)
    scene.set_cursor(timeline.overview(run))
    deepest = max(box.level for box in scene.boxes.boxes)
    for depth in list(range(deepest + 1)) + ["all"]:
        if depth == "all":
            scene.boxes.set_all(set())
        else:
            scene.boxes.show_down_to(depth)
        scene.boxes.settle()
        assert label_overlaps(scene) == [], depth
    first = {g.path: g.label_rect() for g in scene.boxes.groups.values() if g.isVisible() and not g.collapsed}
    assert {"model", "model.encoder", "model.encoder.conv1"} <= set(first)
    assert first["model"].top() - first["model.encoder.conv1"].top() <= 12  # one row: the case that overlapped
    # the bytes in both runs lengthen every name
    scene.boxes.set_compared({path: (123_456_789, 98_765_432) for path in first})
    assert label_overlaps(scene) == []


@pytest.fixture
def dark():
    app = QApplication.instance()
    original = QPalette(app.palette())
    themes.apply("dark")
    yield
    app.setPalette(original)
    themes.apply("light")
    themes.apply("system")


def band_colours(image: QImage, page: ExportPage) -> tuple[QColor, QColor, QColor]:
    """The colour at the caption band's right end, the graph's corner and the legend band's right end."""
    caption = QColor(image.pixel(int(page.width) - 4, 4))
    graph = QColor(image.pixel(int(page.graph_rect.left()) + 3, int(page.graph_rect.top()) + 3))
    legend = QColor(image.pixel(int(page.width) - 4, int(page.height) - 4))
    return caption, graph, legend


def test_a_dark_theme_export_is_dark_from_caption_to_legend(window, record, dark, tmp_path):
    """File > Export in the dark theme gave a dark graph between a white caption band and a white
    legend band: the bands take the graph's background; "light" draws all of it light."""
    from graphview.core.captions import caption
    from tests.conftest import lesson

    run = record(lesson("chain_rule"))
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(window.overview_index())
    text = caption(run, window.cursor)
    path = tmp_path / "dark.png"
    render_scene(window.scene, str(path), 1.0, caption=text, legend=True)
    page = ExportPage(content_rect(window.scene), text, True, DARK)
    image = QImage(str(path))
    assert (image.width(), image.height()) == (int(page.width), int(page.height))
    assert band_colours(image, page) == (QColor(DARK.background),) * 3
    light = tmp_path / "light.png"
    render_scene(window.scene, str(light), 1.0, caption=text, legend=True, theme="light")
    assert band_colours(QImage(str(light)), page) == (QColor(LIGHT.background),) * 3
    # the window's canvas is dark again after a light export
    assert window.scene.backgroundBrush().color() == QColor(DARK.background)
    # the dialog remembers the choice
    window.settings.setValue("export/light", True)
    again = tmp_path / "again.png"
    window.export_image(str(again))
    assert band_colours(QImage(str(again)), page)[0] == QColor(LIGHT.background)


def test_page_fits_matches_what_a_page_holds():
    from graphview.core.export import default_fits

    assert page_fits(10, 4) and not page_fits(66, 3)
    assert page_fits(6, 6)  # a wide, short graph: landscape
    assert not page_fits(12, 8)
    assert default_fits(16, 3) and not page_fits(16, 3)  # a three-layer MLP stays open, on two pages
    assert not default_fits(27, 2)  # the transformer with its layer open


def test_a_graph_cut_into_one_part_says_no_part_in_its_caption(tmp_path):
    """Whisper's graph is too tall for its whole picture to print readable on one page, and its cut
    at the paper's width fits one page: the caption names no "part 1 of 1"."""
    from graphview.app import cli
    from tests.conftest import zoo

    pytest.importorskip("transformers")
    pdf = tmp_path / "whisper.pdf"
    assert cli.main(["export", zoo("whisper_asr"), "-o", str(pdf), "--steps", "1"]) == 0
    reader = pypdf.PdfReader(str(pdf))
    text = " ".join(reader.pages[0].extract_text().split())
    assert len(reader.pages) == 1 and "whisper_asr.py · step 1 of 1" in text
    assert "part 1 of" not in text


def test_the_mlp_sample_prints_whole_on_one_page_readably(tmp_path, capsys):
    """The bundled MLP (15 rows, 1,513 units tall) was two pages, cut through model.2's box, its
    caption in three lines: too tall to print whole at MIN_SCALE of a 96-dpi unit. Whole on one page
    its smallest text prints at SMALLEST_TEXT_PT * MIN_SCALE points or more (4.8 pt, its names at
    NAME_PT * MIN_SCALE: 5.4 pt; the word in the legend's badge too), the caption above every node
    and the legend below them."""
    from graphview.app import cli
    from graphview.qt.canvas.style import NAME_PT, SMALLEST_TEXT_PT
    from graphview.qt.widgets.legend import legend_entries

    pdf = tmp_path / "mlp.pdf"
    assert cli.main(["export", model("mlp_optimizer"), "-o", str(pdf)]) == 0
    assert "does not fit" not in capsys.readouterr().err
    reader = pypdf.PdfReader(str(pdf))
    assert len(reader.pages) == 1 and a4(reader.pages[0])
    runs = []  # (text, size in points, baseline from the page's top)

    def seen(text, cm, tm, font, size):
        if text.strip():
            height = float(reader.pages[0].mediabox.height)
            runs.append((" ".join(text.split()), size * abs(cm[3] * tm[3]), height - (cm[5] + cm[3] * tm[5])))

    reader.pages[0].extract_text(visitor_text=seen)
    texts = runs
    assert min(size for _, size, _ in texts) >= SMALLEST_TEXT_PT * MIN_SCALE - 0.01, sorted(r[1] for r in texts)[:3]
    # the word in the legend's badge swatch ("saved") too: it printed at 3.8 pt, the graph's smallest text at 5.2
    badge = [size for text, size, _ in texts if text == "saved"]
    assert len(badge) == 1 and badge[0] >= min(size for text, size, _ in texts if text != "saved") - 0.01, badge
    names = [size for text, size, _ in texts if text in ("model.0.weight", "AddmmBackward0", "loss")]
    assert len(names) >= 3 and min(names) >= NAME_PT * MIN_SCALE - 0.01
    legend = {entry.text for entry in legend_entries()} - {"AccumulateGrad"}  # that one names nodes too
    caption = [y for text, _, y in texts if text.startswith("mlp_optimizer.py · step")]
    graph = [y for text, size, y in texts if text in ("model.0.weight", "loss", "targets", "inputs")]
    below = [y - size for text, size, y in texts if text in legend]
    assert caption and len(graph) == 4 and len(below) == len(legend)
    assert max(caption) < min(graph) and max(graph) < min(below)


GPT2 = '''
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=32)
model = GPT2LMHeadModel(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(0, 128, (2, 16))

for step in range(2):
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    optimizer.step()
    optimizer.zero_grad()
'''


def node_titles(page) -> list[str]:
    """The node titles a PDF page holds (the grad_fn nodes' and the tensors' 'output of ...')."""
    texts: list[str] = []
    page.extract_text(visitor_text=lambda t, *_: texts.append(" ".join(t.split())))
    return [t for t in texts if t.endswith("Backward0") or t.startswith("output of ")]


def test_a_small_gpt2s_pdf_pages_are_filled_evenly(qapp, record, write_script, tmp_path, monkeypatch):
    """A newcomer's two-layer GPT-2: at --depth 1 its second page held its last 4 nodes below
    2,041 units of graph on the first (each page filled in turn), and at the default depth its one
    page was portrait, at the paper's width, its lower half empty, where landscape prints it
    larger. The parts are now as even as the rows allow, and the one page is landscape."""
    from graphview.qt import export

    made: list = []
    real_init = export.PaperPages.__init__

    def keep(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(export.PaperPages, "__init__", keep)
    run = record(write_script(GPT2))
    deep = tmp_path / "d1.pdf"
    assert render_run(run, str(deep), depth=1) == 2
    parts = [page.source.height() for page in made[-1].pages]
    assert min(parts) >= 0.8 * max(parts), parts  # (before: 2,041 and 409 units)
    titles = [node_titles(page) for page in pypdf.PdfReader(str(deep)).pages]
    assert "output of cross_entropy" in titles[1] and "NllLossBackward0" in titles[1]
    shallow = tmp_path / "d0.pdf"
    assert render_run(run, str(shallow)) == 1
    [page] = pypdf.PdfReader(str(shallow)).pages
    assert float(page.mediabox.width) > float(page.mediabox.height)  # landscape
    assert "NllLossBackward0" in node_titles(page)
