"""Text stays text (docs/safety.md): a trace whose names, module paths, op names, dtypes, devices,
error messages and output hold markup shows that markup as literal text in every tooltip, label,
panel and message box, and no resource it names (``<img src=file:///...>``) is ever requested."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import Qt
from PySide6 import QtGui
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QMessageBox

from graphview.core import timeline
from graphview.core.captions import caption as caption_of
from graphview.core.whatif import compare_runs
from graphview.qt.canvas import GroupItem, NodeItem
from graphview.qt.plain import esc, message_box, text_tip
from tests.hostile import HOSTILE, write_hostile_trace

IMG = "<img src=file:///etc/passwd>"
FONT = "<font size=7>BIG</font>"


class _Watched(QTextDocument):
    """A document that notes every resource (an image) its layout asks for."""

    def __init__(self) -> None:
        super().__init__()
        self.requested: list[str] = []

    def loadResource(self, kind, url):
        self.requested.append(url.toString())
        return super().loadResource(kind, url)


def rendered(text: str, fmt=Qt.AutoText) -> tuple[str, list[str]]:
    """What Qt shows for ``text`` in a widget of text format ``fmt`` (a tooltip is ``AutoText``): the
    text a user reads, and the resources its layout requested."""
    rich = fmt == Qt.RichText or (fmt == Qt.AutoText and QtGui.Qt.mightBeRichText(text))
    if not rich:
        return text, []
    doc = _Watched()
    doc.setHtml(text)
    doc.size()  # lays it out: images are requested then
    return doc.toPlainText(), doc.requested


def assert_literal(text: str, fmt=Qt.AutoText) -> str:
    shown, requested = rendered(text, fmt)
    assert IMG in shown and FONT in shown, shown
    assert requested == [], requested
    return shown


def assert_no_markup_from_trace(text: str, fmt=Qt.AutoText) -> None:
    """Whatever of the hostile strings ``text`` holds (a node label may hold none), none is markup."""
    shown, requested = rendered(text, fmt)
    assert requested == [], requested
    if "BIG" in shown:
        assert FONT in shown, shown


@pytest.fixture(scope="module")
def hostile_trace(tmp_path_factory):
    return write_hostile_trace(tmp_path_factory.mktemp("hostile"))


@pytest.fixture
def opened(app, hostile_trace, qtbot):
    """The app with the hostile trace open, its cursor where the graph is whole, its findings listed."""
    window = app.window
    assert app.open(str(hostile_trace))
    qtbot.waitUntil(lambda: window.run is not None and window.run.end is not None, timeout=20000)
    qtbot.waitUntil(lambda: bool(window.diagnostics.findings), timeout=20000)
    window.set_cursor(timeline.overview(window.run))
    return window


def test_the_plain_text_helpers(qapp):
    assert esc("<a href='x'>&") == "&lt;a href=&#x27;x&#x27;&gt;&amp;"
    tip = text_tip(f"{IMG}\nsecond line {FONT}")
    shown, requested = rendered(tip)
    assert shown == f"{IMG}\nsecond line {FONT}" and requested == []
    # escaped text alone, with no tag before its first line break, would show "&lt;" itself
    assert rendered(text_tip("first\n&lt; is not <"))[0] == "first\n&lt; is not <"
    assert text_tip("") == ""
    box = message_box(None, QMessageBox.Warning, "Cannot open", HOSTILE)
    assert box.textFormat() == Qt.PlainText
    assert_literal(box.text(), box.textFormat())


def test_node_and_module_box_tooltips_show_the_names_as_text(opened):
    scene = opened.scene
    nodes = [item for item in scene.items() if isinstance(item, NodeItem)]
    boxes = [item for item in scene.items() if isinstance(item, GroupItem)]
    assert nodes and boxes
    for item in nodes + boxes:
        assert_no_markup_from_trace(item.toolTip())
    # an autograd node named by the trace, in a module the trace named; a module box
    op = next(i for i in nodes if i.node.kind == "op" and i.node.module)  # (not an AccumulateGrad)
    shown = assert_literal(op.toolTip())
    assert "AddmmBackward0" in shown or "TBackward0" in shown or "ReluBackward0" in shown
    assert shown.count(IMG) >= 2  # the op's name and its module path
    assert_literal(boxes[0].toolTip())


def test_the_inspector_shows_names_dtypes_and_devices_as_text(opened, monkeypatch):
    inspector = opened.inspector
    requested: list[str] = []
    plain_load = inspector.loadResource

    def load(kind, url):
        requested.append(url.toString())
        return plain_load(kind, url)

    monkeypatch.setattr(inspector, "loadResource", load)
    run = opened.run
    index = timeline.overview(run)
    op = next(o for o in run.op_nodes.values() if o.module and o.born <= index and run.saved_by_owner.get(o.vid))
    tensor = next(t for t in run.tensor_nodes.values() if t.born <= index and run.tensor_name(t.tid))
    for node_id in (op.id, tensor.id):
        inspector.show_node(run, node_id, index)
        inspector.document().size()
        inspector.grab()  # painted: any image the HTML named would be loaded now
        text = inspector.toPlainText()
        assert IMG in text and FONT in text, text
        assert not [u for u in requested if not u.startswith("hist:")], requested
    # the tensor's rows: its dtype and device, each the trace's string shown whole
    assert re.search(re.escape(IMG + FONT) + r"[^\n]*float32", text), text
    assert re.search(re.escape(IMG + FONT) + r"[^\n]*cpu", text), text
    inspector.show_gradcheck({"tensor": HOSTILE, "max_rel_error": 0.0, "autograd": [1.0], "numeric": [1.0],
                              "eps": 1e-6})
    inspector.grab()
    assert IMG in inspector.toPlainText() and not [u for u in requested if not u.startswith("hist:")]


def test_diagnostics_console_and_status_show_the_trace_as_text(opened, qtbot):
    diagnostics = opened.diagnostics
    finding = diagnostics.list.topLevelItem(0)
    assert_literal(finding.toolTip(0))  # "spare.grad is None: <img ...>spare was not used"
    diagnostics.list.setCurrentItem(finding)
    diagnostics._show_detail(finding)
    assert IMG in diagnostics.detail.toPlainText()
    # the console: the script's stdout and stderr, its error and traceback, the run's end message
    opened.set_cursor(len(opened.run.events) - 1)
    console = opened.console.toPlainText()
    assert console.count(IMG) >= 4 and FONT in console  # stdout, stderr, traceback, error, run end
    # the labels that quote the trace are plain text; the tooltip of a long status message too
    for label in (opened.status_label, opened.timeline_bar.position_label, opened.progress.label):
        assert label.textFormat() == Qt.PlainText
    opened.timeline_bar.position_label.setText(HOSTILE)
    assert_literal(opened.timeline_bar.position_label.text(), opened.timeline_bar.position_label.textFormat())
    op = next(e for e in range(len(opened.run.events)) if opened.run.events[e].get("ev") == "op")
    opened.set_cursor(op)
    assert_literal(opened.timeline_bar.position_label.toolTip())
    opened.statusBar().showMessage("x" * 400 + HOSTILE)
    assert_literal(opened.statusBar().toolTip())


def test_the_memory_chart_and_what_if_summary_escape_devices_and_module_paths(opened):
    run = opened.run
    device = next(iter(run.saved.values())).device  # the trace's own device string
    opened.memory.show_run(run, device)
    title = opened.memory.getPlotItem().titleLabel.text
    assert rendered(title, Qt.RichText)[1] == []
    # the whole title (a narrow chart shows a shorter form of it), and the tooltip that says all of it
    whole, requested = rendered(opened.memory._title_text, Qt.RichText)
    assert requested == [] and IMG in whole
    assert_literal(opened.memory.toolTip())
    summary = opened.whatif
    summary.show_comparison(compare_runs(run, run), HOSTILE, HOSTILE)
    assert_literal(summary.text(), summary.textFormat())


def test_the_image_export_dialog_shows_the_caption_as_text(opened):
    from graphview.qt.image_export_dialog import ImageExportDialog

    run = opened.run
    dialog = ImageExportDialog(opened, "/tmp/graph.png", caption_of(run, len(run.events) - 1))
    assert dialog.caption_text.textFormat() == Qt.PlainText
    assert IMG in dialog.caption_text.text()
    dialog.deleteLater()


def test_message_boxes_show_a_refusal_as_text(opened, monkeypatch):
    shown: list[QMessageBox] = []
    monkeypatch.setattr(QMessageBox, "exec", lambda box: shown.append(box) or 0)
    for static in ("warning", "information", "critical"):  # AutoText: a message that looks like HTML is HTML
        monkeypatch.setattr(QMessageBox, static, lambda *args: pytest.fail("a message box in Qt.AutoText"))
    monkeypatch.setattr(opened, "_interactive", lambda: True)
    opened.show_error("Cannot open trace", f"refused: {HOSTILE}")
    opened.show_warning("Trace partly refused", f"{HOSTILE}\n\nthe events before it are shown")
    opened.show_gradcheck(None, {"message": HOSTILE})  # a gradient check that failed, quoting the script's error
    assert len(shown) == 3
    for box in shown:
        assert box.textFormat() == Qt.PlainText
        assert_literal(box.text(), box.textFormat())
