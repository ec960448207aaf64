"""The start page at 1366x768: each bundled sample with the whole first sentence of its docstring,
a row too long for the list elided with "…" (never cut at the list's edge), only whole rows shown
at any scroll; recent files by name and short folder, the whole path in the tooltip."""

from __future__ import annotations

import ast
import os

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication

from graphview.core.bundled import bundled_samples
from graphview.qt.main_window import MainWindow
from graphview.qt.plain import text_tip
from graphview.qt.recent_files import KEY
from graphview.qt.start_page import WholeRows
from tests.conftest import model


@pytest.fixture
def page(qtbot, tmp_path):
    """The start page of a 1366x768 window with the bundled samples and four recent files, two of
    them train.py in folders whose last two parts are the same."""
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(tmp_path / "settings"))
    QSettings.setPath(QSettings.NativeFormat, QSettings.UserScope, str(tmp_path / "settings"))
    QSettings.setDefaultFormat(QSettings.IniFormat)
    files = [tmp_path / "runs" / "2024" / "march" / "train.py", tmp_path / "old" / "2024" / "march" / "train.py",
             tmp_path / "old" / "2023" / "march" / "train.py"]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    QSettings("graphview", "graphview").setValue(KEY, [*map(str, files), model("mlp_optimizer")])
    window = MainWindow(samples=bundled_samples())
    qtbot.addWidget(window)
    window.resize(1366, 768)
    window.show()
    QApplication.processEvents()
    recent, samples = window.start_page.findChildren(WholeRows)
    return recent, samples


def rows(widget) -> list[tuple[str, str, str]]:
    """(text, tooltip, path) of each row."""
    return [(widget.item(i).text(), widget.item(i).toolTip(), widget.item(i).data(Qt.UserRole))
            for i in range(widget.count())]


def test_each_sample_shows_the_whole_first_sentence_of_its_docstring(page):
    _, samples = page
    over_a_line = 0
    for text, tooltip, path in rows(samples):
        with open(path, encoding="utf-8") as f:
            doc = ast.get_docstring(ast.parse(f.read()))
        words = " ".join(doc.split())
        about = text.split("  —  ", 1)[1]
        assert words.startswith(about) and words[len(about):][:1] in ("", "."), (path, about)  # a whole sentence
        assert tooltip == text_tip(f"{about}\n{path}")
        over_a_line += len(about) > len(doc.strip().splitlines()[0])
    assert over_a_line >= 3  # sentences that run over the docstring's first line (they were cut there)
    checkpoint = next(t for t, _, p in rows(samples) if p.endswith("checkpoint_batchnorm.py"))
    assert checkpoint.endswith("runs the block's forward again in backward, BatchNorm with it")


def test_no_row_is_wider_than_its_list_so_long_ones_are_elided(page):
    for widget in page:
        assert widget.textElideMode() == Qt.ElideRight
        assert widget.horizontalScrollBar().maximum() == 0
        width = widget.viewport().width()
        assert all(widget.visualItemRect(widget.item(i)).width() <= width for i in range(widget.count()))
    _, samples = page
    wide = [t for t, _, _ in rows(samples) if samples.fontMetrics().horizontalAdvance(t) > samples.viewport().width()]
    assert wide  # at 1366x768 some descriptions are longer than the list is wide: those are elided


def test_only_whole_rows_show_at_the_top_and_scrolled_to_the_end(page):
    _, samples = page
    row = samples.sizeHintForRow(0)
    height = samples.viewport().height()
    assert samples.count() * row > height  # the samples scroll
    assert height % row == 0
    for scroll in (samples.verticalScrollBar().minimum(), samples.verticalScrollBar().maximum()):
        samples.verticalScrollBar().setValue(scroll)
        QApplication.processEvents()
        shown = [samples.visualItemRect(samples.item(i)) for i in range(samples.count())]
        shown = [r for r in shown if r.bottom() >= 0 and r.top() < height]
        assert all(r.top() >= 0 and r.bottom() < height for r in shown), scroll
    assert samples.visualItemRect(samples.item(samples.count() - 1)).bottom() == height - 1


def test_recent_files_by_name_and_short_folder_with_the_path_in_the_tooltip(page):
    recent, _ = page
    labels = [text for text, _, _ in rows(recent)]
    assert labels == ["train.py  —  " + os.path.join("…", "runs", "2024", "march"),  # two would read alike
                      "train.py  —  " + os.path.join("…", "old", "2024", "march"),
                      "train.py  —  " + os.path.join("…", "2023", "march"),
                      "mlp_optimizer.py  —  " + os.path.join("…", "sample_models", "models")]
    assert all(tip == text_tip(path) for _, tip, path in rows(recent))
