"""Text stays text on the terminal and in XML (docs/safety.md): what graphview prints from a trace or a
script never holds a terminal escape (ESC, BEL: clear the screen, retitle the window, recolour a
line), and an SVG or GraphML export always parses, whatever the names in the trace hold."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from graphview.app.cli import main
from graphview.app.inputs import shown, shown_lines
from graphview.core.export import graph_data, to_dot, to_graphml
from graphview.core.run import Run
from graphview.core.text import visible, xml_text
from graphview.core.trace import read_trace
from tests.hostile import HOSTILE, write_hostile_trace

#: the control characters no line graphview prints may hold
RAW = ("\x1b", "\x07", "\x00", "\x01", "\x0b", "\ud800")
#: what they are printed as instead
ESCAPED = "\\x1b[2J\\x1b]0;pwned\\x07\\x00\\x01\\x0b\\ud800"
#: the same, of a string read from a trace: the reader has replaced the lone surrogate by U+FFFD
#: (docs/safety.md, "A trace holds no limits of its own"), which is printable
FROM_TRACE = ESCAPED.replace("\\ud800", "\ufffd")


def assert_clean(text: str) -> None:
    for c in RAW:
        assert c not in text, (c, text)


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert_clean(out)
    assert_clean(err)
    return code, out, err


@pytest.fixture(scope="module")
def hostile_trace(tmp_path_factory):
    return write_hostile_trace(tmp_path_factory.mktemp("hostile"))


def test_visible_and_xml_text():
    assert visible("plain name é 名") == "plain name é 名"
    assert visible("a\x1b[2Jb\x07\n\u202e\ud800") == "a\\x1b[2Jb\\x07\\n\\u202e\\ud800"
    assert visible("one\ntwo\x1b", newlines=True) == "one\ntwo\\x1b"
    assert shown(HOSTILE).endswith(ESCAPED) and shown_lines("a\nb") == "a\nb"
    assert xml_text("a<&\t\n\x00\x1b\ud800\uffff") == "a<&\t\n\\x00\\x1b\\ud800\\uffff"


def test_info_prints_every_string_of_the_trace_escaped(capsys, hostile_trace):
    code, out, err = cli(capsys, "info", hostile_trace)
    assert code == 0
    assert f"error:           line 14: <img src=file:///etc/passwd><font size=7>BIG</font>{FROM_TRACE}ValueError" in out
    assert f"torch:           <img src=file:///etc/passwd><font size=7>BIG</font>{FROM_TRACE}2.13" in out
    assert f"grad <img src=file:///etc/passwd><font size=7>BIG</font>{FROM_TRACE}model.0.weight" in out
    code, out, _ = cli(capsys, "info", hostile_trace, "--json")
    assert code == 0 and "\\u001b" in out


def test_check_prints_its_findings_escaped(capsys, hostile_trace):
    code, out, err = cli(capsys, "check", hostile_trace)
    assert code == 1
    assert f"{FROM_TRACE}spare.grad is None" in out and "[grad-none-unused]" in out
    assert f"No backward reached <img src=file:///etc/passwd><font size=7>BIG</font>{FROM_TRACE}spare" in out
    assert "graphview: the script failed (<img src=file:///etc/passwd>" in err


def test_diff_prints_op_names_and_module_paths_escaped(capsys, hostile_trace, tmp_path):
    plain = tmp_path / "plain.gvtrace"
    with open(hostile_trace, encoding="ascii") as f, open(plain, "w", encoding="utf-8") as g:
        g.write(f.read().replace('\\u001b', "").replace("\\u0007", ""))
    code, out, err = cli(capsys, "diff", hostile_trace, plain)
    assert code == 1  # (both scripts failed)
    assert f"- <img src=file:///etc/passwd><font size=7>BIG</font>{FROM_TRACE}AddmmBackward0" in out
    assert f"in <img src=file:///etc/passwd><font size=7>BIG</font>{FROM_TRACE}model.0)" in out


def test_exports_parse_as_xml_and_say_nothing_raw(capsys, hostile_trace, tmp_path):
    for suffix in (".svg", ".graphml", ".dot", ".json"):
        out = tmp_path / f"graph{suffix}"
        code, _, err = cli(capsys, "export", hostile_trace, "-o", out)
        assert code == 1 and f"wrote the {suffix[1:].upper()} graph" in err  # the script failed: what was recorded
        assert "\\x1b" in err
    svg = ET.parse(tmp_path / "graph.svg").getroot()
    texts = " ".join(t.text or "" for t in svg.iter())
    assert "<img src=file:///etc/passwd><font size=7>BIG</font>\\x1b[2J" in texts  # the caption, as text
    graphml = ET.parse(tmp_path / "graph.graphml").getroot()
    values = [d.text or "" for d in graphml.iter() if d.tag.endswith("data")]
    assert any(v.startswith("<img src=file:///etc/passwd><font size=7>BIG</font>" + FROM_TRACE) for v in values)
    dot = (tmp_path / "graph.dot").read_text(encoding="utf-8")
    assert_clean(dot)


def test_graphml_and_dot_of_any_string_are_well_formed(hostile_trace):
    data = graph_data(Run(read_trace(hostile_trace).events))
    ET.fromstring(to_graphml(data))
    assert_clean(to_dot(data))


def test_the_notebook_svg_is_well_formed(hostile_trace):
    from graphview.capture.showing import export_svg

    ET.fromstring(export_svg(str(hostile_trace)))


SCRIPT = (
    "import sys\n"
    "import torch\n"
    "x = torch.ones(2, requires_grad=True)\n"
    f"print({HOSTILE!r})\n"
    f"raise RuntimeError({HOSTILE!r})\n"
)


@pytest.mark.e2e
def test_record_and_gradcheck_escape_the_scripts_error(capsys, tmp_path):
    script = tmp_path / "hostile_script.py"
    script.write_text(SCRIPT, encoding="utf-8")
    code = main(["record", str(script), "-o", str(tmp_path / "run.gvtrace")])
    out, err = capsys.readouterr()
    assert code == 1
    # the script's own output is echoed as `python script.py` would show it; what graphview says is escaped
    assert "<img src=file:///etc/passwd><font size=7>BIG</font>\x1b[2J" in out
    assert_clean(err)
    assert f"RuntimeError: <img src=file:///etc/passwd><font size=7>BIG</font>{ESCAPED}" in err  # the traceback
    assert "graphview: the script raised RuntimeError at line 5: <img src=file:///etc/passwd>" in err
    code, out, err = cli(capsys, "gradcheck", script, "--tensor", "x")
    assert code == 2 and "gradient check failed" in err and "\\x1b[2J" in err
