"""The web page player: one HTML file, nothing fetched, nothing from the trace ever markup; it
steps through the run as the window does (checked in a real headless browser where Chromium and
its driver are installed, as the test set-up installs them)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
import urllib.request

import pytest

from graphview.core import timeline
from graphview.core.export import ExportError
from graphview.core.options import RunOptions
from graphview.core.run import Run
from graphview.qt.web_page import page_data, page_html, write_web_page
from tests.conftest import LESSONS, ONLY_BUILDS_A_MODEL, lesson, model, record_each, zoo

pytestmark = pytest.mark.usefixtures("qapp")  # the window's canvas says where Step and Back go


def _data(html: str) -> dict:
    block = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    return json.loads(block.group(1))


def test_the_page_holds_the_runs_grads_and_moments(record, tmp_path):
    run = record(lesson("accumulate_without_clearing"))
    path = tmp_path / "lesson.html"
    moments = write_web_page(run, str(path))
    html = path.read_text()
    data = _data(html)
    assert len(data["moments"]) == moments and data["moments"][0]["at"] == 0
    assert data["moments"][-1]["at"] == len(run.events) - 1
    w = next(n for n in data["nodes"] if n["title"] == "w")
    tid = run.tensor_by_name("w")
    assert [value for _, value in w["grads"]] == ["-8", "-16"]  # the lesson's numbers, from torch
    assert [index for index, _ in w["grads"]] == [entry.index for entry in run.grads[tid]]
    # the running node of every backward moment is the node the engine ran
    ids = [n["id"] for n in data["nodes"]]
    for m in data["moments"]:
        if m["kind"] == "bw_node":
            assert ids[m["focus"]] == f"op{run.events[m['at']]['vid']}" and m["running"]
    assert len(html) < 1 << 20


def test_nothing_from_the_run_is_markup_and_nothing_is_fetched(record, write_script):
    hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
    script = write_script("import torch\n"
                          "model = torch.nn.Sequential()\n"
                          f"model.add_module({hostile!r}, torch.nn.Linear(2, 1))\n"
                          "model(torch.ones(1, 2)).sum().backward()\n")
    html = page_html(page_data(record(script)))
    assert html.count("<script") == 2 and "<img" not in html and "onerror=alert(2)>" not in html
    assert any(hostile in n["title"] or hostile in n["subtitle"] for n in _data(html)["nodes"]) or \
        hostile in json.dumps(_data(html))
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", html)  # no address to fetch from
    assert "default-src 'none'" in html


def test_an_html_name_is_asked_for(record, tmp_path):
    with pytest.raises(ExportError, match=".html"):
        write_web_page(record(lesson("chain_rule")), str(tmp_path / "x.txt"))


@pytest.mark.parametrize("name", sorted(p.stem for p in LESSONS.glob("*.py")))
def test_every_lesson_exports_as_a_page_under_a_megabyte(record, tmp_path, name):
    path = tmp_path / "x.html"
    assert write_web_page(record(lesson(name)), str(path)) >= 1
    assert path.stat().st_size < 1 << 20


@pytest.fixture(scope="module")
def gpt2() -> Run:
    """The test zoo's GPT-2 (a random config), one step: the window draws nothing for its
    constructor's ops (their tensors wait in the model's shut box), the page draws them flat."""
    return Run(record_each([zoo("gpt2_lm")], steps=1)[zoo("gpt2_lm")])


def page_goes(data: dict, k: int, name: str) -> int:
    """The event the page's Step (``"step"``) or Back (``"back"``) shows from moment ``k``."""
    way = 1 if name == "step" else -1
    to = {start: end for start, end in data["skips"][name]}.get(k, min(max(k + way, 0), len(data["moments"]) - 1))
    return data["moments"][to]["at"]


def window_goes(window, at: int, name: str) -> int:
    """The event the window's → (``"step"``) or ← (``"back"``) goes to from event ``at``."""
    window.set_cursor(at)
    window.actions[name].trigger()
    return window.cursor


def test_step_and_back_pass_over_what_the_window_draws_nothing_at_as_the_window_does(window, gpt2):
    run = gpt2
    data = page_data(run)
    at = [m["at"] for m in data["moments"]]
    window.begin_run(run.start["script"], RunOptions(), run)
    landed = window_goes(window, 0, "step")  # the first op drawn, past the constructor's ops
    assert timeline.step_forward(run, timeline.step_forward(run, 0)) < landed < timeline.next_backward(run, 0)
    assert page_goes(data, 0, "step") == landed
    k = at.index(landed)
    inside = k // 2  # a moment among the constructor's, where the page draws its parameters
    assert any(n["born"] <= at[inside] and n["kind"] == "param" for n in data["nodes"])
    for moment in (0, 1, inside, k - 1, k, k + 1, len(at) - 1):
        for name in ("step", "back"):
            assert page_goes(data, moment, name) == window_goes(window, at[moment], name), (moment, name)
    assert page_goes(data, k, "back") == 0 and page_goes(data, k + 1, "back") == landed  # then op by op


#: a model whose constructor runs 14 throwaway ops, and fails at its end where ``fail`` is true
SCRATCH_CONSTRUCTOR = ("import torch\n"
                       "class Net(torch.nn.Module):\n"
                       "    def __init__(self, fail):\n"
                       "        super().__init__()\n"
                       "        for _ in range(14):\n"
                       "            torch.ones(3).mul_(3)  # scratch\n"
                       "        self.lin = torch.nn.Linear(3, 1)\n"
                       "        if fail:\n"
                       "            self.lin.weight.data.copy_(torch.ones(2, 2))\n")


@pytest.mark.parametrize("then", ["Net(fail=True)\n", "net = Net(fail=False)\nnet(torch.randn(2, 3)).sum().backward()\n"],
                         ids=["fails", "trains"])
def test_from_every_moment_step_and_back_go_where_the_window_goes(window, record, write_script, monkeypatch, then):
    """Where the script failed is a moment to land on, and past more moments that draw nothing than
    the window looks through (here 10) a press lands on the last it looked at: the page as the window."""
    from graphview.qt.canvas import first_drawn

    monkeypatch.setattr(first_drawn, "PROBED_STOPS", 10)
    run = record(write_script(SCRATCH_CONSTRUCTOR + then))
    data = page_data(run)
    assert data["skips"]["step"] and data["skips"]["back"]
    window.begin_run(run.start["script"], RunOptions(), run)
    for k, moment in enumerate(data["moments"]):
        for name in ("step", "back"):
            assert page_goes(data, k, name) == window_goes(window, moment["at"], name), (k, name)


def test_a_run_with_no_autograd_node_is_not_looked_at_in_the_windows_canvas(window, record, write_script, monkeypatch):
    """No autograd node, so no box hides the tensors in it: the window draws what the page draws,
    and no canvas is moved moment by moment to say so (in a no-grad loop of 969 ops each move cost
    ~0.3 s: the page took minutes to write)."""
    from graphview.qt import web_page_stops

    def no_canvas(run):
        raise AssertionError("the window's canvas was made")

    run = record(write_script("import torch\n"
                              "model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))\n"
                              "x = torch.randn(3, 4)\n"
                              "with torch.no_grad():\n"
                              "    for _ in range(3):\n"
                              "        x = model(x).tanh().repeat(1, 2)\n"))
    monkeypatch.setattr(web_page_stops, "_scene", no_canvas)
    data = page_data(run)
    assert not any(n["kind"] == "op" for n in data["nodes"]) and len(data["nodes"]) > 10
    window.begin_run(run.start["script"], RunOptions(), run)
    for k, moment in enumerate(data["moments"]):
        for name in ("step", "back"):
            assert page_goes(data, k, name) == window_goes(window, moment["at"], name), (k, name)


def test_a_run_too_big_to_draw_whole_steps_moment_by_moment_as_in_the_window(gpt2, monkeypatch):
    """Where the window draws only what is near its view (more nodes than it draws whole: here a
    smaller limit), its → steps one stop at a time, and so does the page's Step."""
    from graphview.qt.canvas import region

    assert page_data(gpt2)["skips"]["step"]
    monkeypatch.setattr(region, "VIRTUAL_ABOVE", 100)
    data = page_data(gpt2)
    assert len(data["nodes"]) > 100 and data["skips"] == {"step": [], "back": []}
    assert page_goes(data, 0, "step") == timeline.step_forward(gpt2, 0)


def test_where_the_first_op_draws_step_and_back_go_moment_by_moment(record):
    run = record(model("mlp_optimizer"), steps=1)
    data = page_data(run)
    assert data["skips"] == {"step": [], "back": []}
    assert page_goes(data, 0, "step") == timeline.step_forward(run, 0)
    assert page_goes(data, 1, "back") == 0


def test_where_nothing_is_ever_drawn_step_goes_to_the_end_and_back_to_the_start(window, record, write_script):
    run = record(write_script(ONLY_BUILDS_A_MODEL))
    data = page_data(run)
    last = len(data["moments"]) - 1
    assert last >= 3 and page_goes(data, 0, "step") == timeline.last(run) and page_goes(data, last, "back") == 0
    window.begin_run(run.start["script"], RunOptions(), run)
    assert window_goes(window, 0, "step") == timeline.last(run) and window_goes(window, timeline.last(run), "back") == 0


# ------------------------------------------------------------------ in a real browser
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
browser = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="Chromium and chromedriver are not installed")


class Browser:
    """A headless Chromium driven over the WebDriver protocol (plain HTTP: no client library)."""

    def __init__(self, tmp_path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.driver = subprocess.Popen([DRIVER, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                self._call("GET", "/status")
                break
            except OSError:
                time.sleep(0.1)
        caps = {"browserName": "chrome", "goog:chromeOptions": {
            "binary": CHROMIUM, "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1366,768",
                                         f"--user-data-dir={tmp_path / 'profile'}"]}}
        self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": caps}})["sessionId"]

    def _call(self, method: str, path: str, body: dict | None = None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())["value"]

    def do(self, method: str, path: str, body: dict | None = None):
        return self._call(method, f"/session/{self.session}{path}", body)

    def js(self, script: str):
        return self.do("POST", "/execute/sync", {"script": script, "args": []})

    def key(self, key: str) -> None:
        key = {"Home": "\ue011", "End": "\ue010", "ArrowLeft": "\ue012", "ArrowRight": "\ue014"}.get(key, key)
        self.do("POST", "/actions", {"actions": [{"type": "key", "id": "keyboard", "actions": [
            {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}]}]})

    def close(self) -> None:
        try:
            self.do("DELETE", "")
        finally:
            self.driver.terminate()
            self.driver.wait(10)


@browser
def test_a_student_steps_through_the_second_backward_offline(record, tmp_path):
    run = record(lesson("accumulate_without_clearing"))
    path = tmp_path / "lesson.html"
    write_web_page(run, str(path))
    data = _data(path.read_text())
    chrome = Browser(tmp_path)
    try:
        chrome.do("POST", "/url", {"url": path.as_uri()})
        assert chrome.js("return document.getElementById('caption').textContent").startswith("event 0 of")
        chrome.key("b")
        chrome.key("b")  # the second backward
        second = sorted(run.backwards.values(), key=lambda call: call.start)[1]
        assert chrome.js("return document.getElementById('caption').textContent").startswith(f"event {second.start} of")
        chrome.key("n")
        running = chrome.js("return [...document.querySelectorAll('.node.running .title')].map(e => e.textContent)")
        first_node = next(i for i in range(second.start, len(run.events)) if run.events[i]["ev"] == "bw_node")
        name = run.op_nodes[run.events[first_node]["vid"]].name
        assert running == [name]
        chrome.key("e")
        grads = chrome.js("return [...document.querySelectorAll('.badge.grad text')]"
                          ".filter(e => e.closest('.badge').style.display !== 'none').map(e => e.textContent)")
        assert grads == ["grad -16"]
        chrome.key("Home")
        assert chrome.js("return document.getElementById('slider').value") == "0"
        shot = chrome.do("GET", "/screenshot")
        assert len(shot) > 1000
        (tmp_path / "page.png").write_bytes(__import__("base64").b64decode(shot))
        chrome.key("ArrowRight")
        assert chrome.js("return document.getElementById('slider').value") == "1"
        assert chrome.js("return document.getElementById('where').textContent") == f"moment 2 of {len(data['moments'])}"
    finally:
        chrome.close()


@browser
def test_a_student_steps_past_a_models_constructor_in_one_press_as_in_the_window(window, gpt2, tmp_path):
    run = gpt2
    window.begin_run(run.start["script"], RunOptions(), run)
    landed = window_goes(window, 0, "step")
    path = tmp_path / "gpt2.html"
    write_web_page(run, str(path))
    caption = "return document.getElementById('caption').textContent"
    chrome = Browser(tmp_path)
    try:
        chrome.do("POST", "/url", {"url": path.as_uri()})
        chrome.key("ArrowRight")
        assert chrome.js(caption).startswith(f"event {landed} of")
        chrome.key("ArrowRight")  # something is drawn: op by op
        assert chrome.js(caption).startswith(f"event {timeline.step_forward(run, landed)} of")
        chrome.key("ArrowLeft")
        chrome.key("ArrowLeft")
        assert chrome.js(caption).startswith("event 0 of")
    finally:
        chrome.close()


def test_edge_labels_from_a_trace_with_long_op_names_are_cut_as_the_window_cuts_them(record, write_script):
    """An op's name is a trace's string, up to 4,096 characters of any text: the page's edge labels
    say at most LABEL_CHARS characters of it, on one line, as the window's do (a label of the whole
    name was thousands of pixels wide)."""
    from graphview.core.text import LABEL_CHARS

    events = [dict(event) for event in record(write_script(
        "import torch\n"
        "x = torch.randn(4)\n"
        "y = (x * 2).relu()\n"
        "z = y.detach() + 1\n")).events]
    for event in events:
        if event["ev"] == "op":
            event["op"] = f"{event['op']}\n<b>{'x' * 4000}</b>"
    labels = [edge[4] for edge in page_data(Run(events))["edges"] if edge[4]]
    assert any(label.endswith("…") for label in labels)  # (an op's, cut; "detach" is the page's own word)
    for label in labels:
        assert len(label) <= LABEL_CHARS and label.isprintable(), label


@browser
@pytest.mark.parametrize("name", ["mlp_optimizer", "teacher_student_detach", "lstm_variable_steps"])
def test_a_saved_badge_sits_beside_the_arrows_into_the_node_not_over_them(record, tmp_path, name):
    """The page drew a node's saved badge centred on its top, over the arrowhead of every edge into
    it; it goes beside the top centre, as in the window: right of it, left where the arrows shown
    come in from the right alone (the MLP's last AddmmBackward0 and NllLossBackward0 before
    backward), past the nearer arrows where they come from both sides (the distillation's
    MseLossBackward0, the LSTM's gate products); an arrowhead's length clear of the arrowheads."""
    run = record(model(name), steps=1)
    path = tmp_path / "mlp.html"
    write_web_page(run, str(path))
    chrome = Browser(tmp_path)
    try:
        chrome.do("POST", "/url", {"url": path.as_uri()})
        chrome.key("b")  # to the backward: the forward's badges are all shown
        assert chrome.js("return document.getElementById('caption').textContent").startswith(
            f"event {timeline.next_backward(run, 0)} of")
        # each shown badge's pill, and points along the shown edges into its node, in the page's units
        found = chrome.js("""
          const out = [];
          for (const g of document.querySelectorAll('.node')) {
            const badge = g.querySelector('.badge.saved');
            if (g.style.display === 'none' || !badge || badge.style.display === 'none') continue;
            const box = badge.querySelector('rect').getBBox(), m = g.transform.baseVal[0].matrix;
            out.push({title: g.querySelector('.title').textContent, x: m.e, y: m.f,
                      pill: [box.x + m.e, box.y + m.f, box.width, box.height]});
          }
          const lines = [];
          for (const p of document.querySelectorAll('path.edge')) {
            if (p.style.display === 'none') continue;
            const length = p.getTotalLength(), points = [];
            for (let k = 0; k <= 200; k++) { const q = p.getPointAtLength(length * k / 200); points.push([q.x, q.y]); }
            lines.push(points);
          }
          return [out, lines];""")
    finally:
        chrome.close()
    badges, lines = found
    assert len(badges) >= 4

    def meets(pill, points) -> bool:
        x, y, w, h = pill
        return any(x - 0.7 <= px <= x + w + 0.7 and y - 0.7 <= py <= y + h + 0.7 for px, py in points)

    left, both = set(), set()
    for badge in badges:
        x, y, w, h = badge["pill"]
        ending = [points for points in lines if abs(points[-1][0] - badge["x"]) < 1 and abs(points[-1][1] - badge["y"] + 26) < 3]
        assert ending, badge["title"]  # (the arrows into this node end at its top centre)
        assert not x < badge["x"] < x + w, badge["title"]  # not over the arrowheads
        # and an arrowhead's length (8) clear of their heads, 4.6 wide each side (it was 3.5 units)
        assert min(abs(x - badge["x"]), abs(x + w - badge["x"])) - 4.55 >= 8 - 0.05, (badge["title"], badge["pill"])
        assert not any(meets(badge["pill"], points) for points in ending), badge["title"]
        if x + w < badge["x"]:
            left.add(badge["title"])
        sides = {(points[len(points) // 2][0] > badge["x"]) for points in ending if abs(points[0][0] - badge["x"]) > 4}
        if len(sides) == 2:
            both.add(badge["title"])
    if name == "mlp_optimizer":
        assert {"AddmmBackward0", "NllLossBackward0"} <= left
    else:
        assert both  # (arrows on both sides of some node's top)
