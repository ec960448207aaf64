"""The code pane wraps a long line at the pane's width after a dot, a bracket or a comma, never
inside a name; what a user copies, and the pane's text, are the source as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from graphview.qt import theme as themes
from graphview.qt.panels.code import CodeView
from tests.conftest import model

SOURCE = ("import torch\n"
          "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
          "model = GPT2LMHeadModel(GPT2Config(n_layer=6, n_embd=64, n_head=4, vocab_size=100))\n")


def _visual_lines(view: CodeView, number: int) -> list[str]:
    block = view.document().findBlockByNumber(number)
    layout, text = block.layout(), block.text()
    return [text[layout.lineAt(i).textStart():layout.lineAt(i).textStart() + layout.lineAt(i).textLength()]
            for i in range(layout.lineCount())]


def _in_name(char: str) -> bool:
    return char.isalnum() or char == "_"


def test_a_long_line_wraps_between_names_and_copies_as_it_is(qtbot):
    view = CodeView()
    qtbot.addWidget(view)
    view.resize(300, 300)  # the narrowest the pane gets
    view.show()
    view.set_source(SOURCE)
    qtbot.waitExposed(view)
    for number in (1, 2):
        lines = _visual_lines(view, number)
        assert len(lines) > 1  # the pane is narrower than the line
        for line, after in zip(lines, lines[1:]):
            end, start = line.replace("\u200b", "")[-1], after.replace("\u200b", "")[0]
            assert not (_in_name(end) and _in_name(start)), (line, after)  # never inside a name
    assert view.toPlainText() == SOURCE.rstrip("\n") or view.toPlainText() == SOURCE
    view.selectAll()
    view.copy()
    assert QApplication.clipboard().text() in (SOURCE, SOURCE.rstrip("\n"))


def _row_centres(view: CodeView, number: int) -> list[int]:
    """The viewport's y of the middle of each visual row of line ``number`` (1-based)."""
    block = view.document().findBlockByNumber(number - 1)
    top = view.blockBoundingGeometry(block).translated(view.contentOffset()).top()
    layout = block.layout()
    return [round(top + layout.lineAt(i).y() + layout.lineAt(i).height() / 2) for i in range(layout.lineCount())]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_cursor_line_is_marked_on_every_row_it_wraps_to_and_numbered_once(qtbot, restore_theme, theme):
    """At 1366x768 the MLP sample's loss line wraps into two rows in the pane: only its first row,
    'loss = nn.functional.', was marked."""
    t = themes.apply(theme)
    source = Path(model("mlp_optimizer")).read_text(encoding="utf-8")
    number = source.splitlines().index("    loss = nn.functional.cross_entropy(logits, targets)") + 1
    view = CodeView()
    qtbot.addWidget(view)
    view.resize(314, 400)  # the pane's width in the window at 1366x768
    view.show()
    view.set_source(source)
    qtbot.waitExposed(view)
    view.highlight(number)
    qtbot.wait(20)
    rows = _row_centres(view, number)
    assert len(rows) >= 2  # the line wraps
    text = view.viewport().grab().toImage()
    mark = QColor(t.code_current).rgb()

    def marked(y: int) -> float:  # the share of the row's pixels in the mark's colour (the rest: its text)
        return sum(text.pixelColor(x, y).rgb() == mark for x in range(text.width())) / text.width()

    assert [marked(y) > 0.5 for y in rows] == [True] * len(rows), [marked(y) for y in rows]
    # each row to the pane's right edge, its last too (past the end of its text)
    assert [text.pixelColor(text.width() - 5, y).rgb() == mark for y in rows] == [True] * len(rows)
    # the rows of the lines around it are not marked
    for other in (number - 1, number + 1):
        assert marked(_row_centres(view, other)[0]) == 0
    # its number is drawn once, beside its first row; the gutter beside the other rows is bare
    gutter = view._numbers.grab().toImage()
    bare = QColor(t.gutter).rgb()
    block = view.document().findBlockByNumber(number - 1)
    layout = block.layout()
    top = view.blockBoundingGeometry(block).translated(view.contentOffset()).top()
    first = range(round(top), round(top + layout.lineAt(0).height()))
    rest = range(round(top + layout.lineAt(1).y()), round(top + layout.lineAt(layout.lineCount() - 1).y()
                                                        + layout.lineAt(layout.lineCount() - 1).height()))
    assert any(gutter.pixelColor(x, y).rgb() != bare for x in range(gutter.width()) for y in first)
    assert all(gutter.pixelColor(x, y).rgb() == bare for x in range(gutter.width()) for y in rest)
