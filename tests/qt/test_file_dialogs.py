"""File dialogs: the name they suggest, and the folder they remember across windows."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from graphview.core.captions import caption
from graphview.core.options import RunOptions
from graphview.qt.widgets.legend import LEGEND
from tests.conftest import LESSONS, lesson, model


def show(window, run, index=None):
    window.begin_run(run.start["script"], RunOptions(), run)
    window.set_cursor(window.overview_index() if index is None else index)
    return window


@pytest.fixture
def new_window(qtbot):
    """Another window, as a later start of graphview would open (same settings)."""
    from graphview.qt.main_window import MainWindow

    def _new():
        win = MainWindow(samples=[])
        qtbot.addWidget(win)
        win.show()
        return win

    return _new


class FakeDialog:
    """Stands in for the platform's file dialog: records where it was asked to start, answers ``answer``."""

    def __init__(self, monkeypatch, method: str) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.answer = ""
        monkeypatch.setattr(QFileDialog, method, staticmethod(self))

    def __call__(self, parent, title, start, pattern, *rest):
        self.calls.append((title, start, pattern))
        return self.answer, pattern.split(";;")[0]


def svg_texts(path) -> list[str]:
    return [t.text for t in ET.parse(path).iter("{http://www.w3.org/2000/svg}text") if t.text]


def test_names_are_made_from_the_script_the_step_and_the_event(window, record):
    run = record(model("mlp_optimizer"), steps=2)
    show(window, run)
    step = next(s for s in run.steps if s["start"] <= window.cursor <= s["end"])["step"]
    assert step == 2  # the last backward, of the second step
    exports = window.exports
    assert exports.suggested_name(".svg") == f"mlp_optimizer-step2-event{window.cursor}.svg"
    assert exports.suggested_name(".gvtrace", at_cursor=False) == "mlp_optimizer.gvtrace"
    plain = record(lesson("prediction"))  # a plain script has no steps
    show(window, plain, 10)
    assert exports.suggested_name(".json") == "prediction-event10.json"


def test_the_image_dialog_suggests_a_name_exports_as_chosen_and_is_remembered(window, record, tmp_path, qtbot,
                                                                               new_window):
    run = record(lesson("prediction"))
    show(window, run)
    name = f"prediction-event{window.cursor}"
    window.export_image()
    dialog = window.exports.image_dialog
    assert dialog.isVisible()
    assert dialog.file.text() == os.path.join(os.getcwd(), name + ".png")  # nothing saved yet: the working directory
    assert dialog.with_legend() and dialog.with_caption()  # on by default
    assert dialog.caption_text.text() == caption(run, window.cursor)
    folder = tmp_path / "pictures"
    folder.mkdir()
    dialog.file.setText(str(folder / (name + ".png")))
    dialog.format.setCurrentIndex(dialog.format.findText("SVG"))
    assert dialog.file.text() == str(folder / (name + ".svg"))  # the format sets the suffix
    dialog.legend.setChecked(False)
    qtbot.mouseClick(dialog.export_button, Qt.LeftButton)
    written = folder / (name + ".svg")
    texts = svg_texts(written)
    assert caption(run, window.cursor).split(":")[0] in " ".join(texts)
    assert not {e.text for e in LEGEND if e.text != "AccumulateGrad"} & set(texts)
    assert f"wrote {written}" in window.statusBar().message()
    # a new window starts where this one left off: the folder, the format and the legend choice
    later = show(new_window(), run)
    later.export_image()
    again = later.exports.image_dialog
    assert again.file.text() == str(folder / (name + ".svg"))
    assert not again.with_legend() and again.with_caption()
    again.reject()


def test_save_dialogs_suggest_a_name_and_remember_the_folder(window, record, tmp_path, monkeypatch, new_window):
    dialog = FakeDialog(monkeypatch, "getSaveFileName")
    run = record(model("mlp_optimizer"))
    show(window, run)
    folder = tmp_path / "runs"
    folder.mkdir()
    dialog.answer = str(folder / "first")  # typed without a suffix
    window.export_trace()
    title, start, pattern = dialog.calls[-1]
    assert title == "Save run as trace" and start == os.path.join(os.getcwd(), "mlp_optimizer.gvtrace")
    assert (folder / "first.gvtrace").stat().st_size > 0  # the suffix of the file type was added
    dialog.answer = str(folder / "g.json")
    window.export_data()
    assert os.path.basename(dialog.calls[-1][1]) == f"mlp_optimizer-step1-event{window.cursor}.json"
    assert dialog.calls[-1][1].startswith(str(folder))
    later = show(new_window(), run)
    dialog.answer = ""  # cancelled: nothing written, nothing remembered
    later.export_chart_csv()
    assert dialog.calls[-1][1] == str(folder / "mlp_optimizer-memory.csv")
    later.export_trace()
    assert dialog.calls[-1][1] == str(folder / "mlp_optimizer.gvtrace")


def test_the_open_dialog_starts_in_the_folder_last_opened_from(window, monkeypatch, new_window, qtbot):
    dialog = FakeDialog(monkeypatch, "getOpenFileName")
    dialog.answer = lesson("chain_rule")
    with qtbot.waitSignal(window.sigOpenRequested) as opened:
        window.open_dialog()
    assert opened.args == [lesson("chain_rule")]
    assert dialog.calls[-1][1] == os.getcwd()
    dialog.answer = ""
    new_window().open_dialog()
    assert dialog.calls[-1][1] == str(LESSONS)


def test_an_unwritable_choice_is_reported_and_not_remembered(window, record, tmp_path, monkeypatch):
    dialog = FakeDialog(monkeypatch, "getSaveFileName")
    show(window, record(lesson("prediction")))
    dialog.answer = str(tmp_path / "missing" / "run.gvtrace")
    window.export_trace()
    assert "does not exist" in window.statusBar().message()
    window.export_trace()
    assert dialog.calls[-1][1] == os.path.join(os.getcwd(), "prediction.gvtrace")


def test_browse_starts_at_the_field_and_a_cancelled_dialog_writes_nothing(window, record, tmp_path, monkeypatch):
    show(window, record(lesson("prediction")))
    window.export_image()
    dialog = window.exports.image_dialog
    files = FakeDialog(monkeypatch, "getSaveFileName")
    files.answer = str(tmp_path / "chosen.pdf")
    suggested = dialog.path()
    assert suggested.endswith(f"prediction-event{window.cursor}.png")
    dialog.browse()
    assert files.calls[-1][1] == suggested
    assert dialog.file.text() == str(tmp_path / "chosen.pdf") and dialog.format.currentText() == "PDF"
    dialog.file.setText(str(tmp_path / "typed"))  # no suffix: the format's is added
    assert dialog.path() == str(tmp_path / "typed.pdf")
    dialog.reject()
    assert window.exports.image_dialog is None and list(tmp_path.iterdir()) == []
