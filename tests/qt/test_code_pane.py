"""The code pane wraps a long line at the pane's width after a dot, a bracket or a comma, never
inside a name; what a user copies, and the pane's text, are the source as it is."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from graphview.qt.panels.code import CodeView

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
