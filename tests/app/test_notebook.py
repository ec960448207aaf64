"""graphview.record() in a real Jupyter kernel (nbclient): the recording, the graph shown inline."""

from __future__ import annotations

import html

import pytest
import torch

from graphview.core.run import Run
from graphview.core.trace import read_trace

pytestmark = pytest.mark.e2e

SETUP = """\
import torch
from torch import nn
import graphview

def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    return model, torch.optim.SGD(model.parameters(), lr=0.1), torch.randn(5, 3)

def results(model, loss):
    return [loss.detach()] + [p.grad.clone() for p in model.parameters()] + [p.detach().clone() for p in model.parameters()]

def train_plain(steps):
    model, optimizer, x = make()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
    return results(model, loss)
"""
RECORD = """\
model, optimizer, x = make()
with graphview.record("nb.gvtrace", start_step=2) as rec:
    for _ in range(3):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
rec
"""
SAVE = """\
torch.save({"plain": train_plain(3), "recorded": results(model, loss)}, "results.pt")
print(rec.path)
"""


def test_a_notebook_records_itself_and_shows_the_graph_inline(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(code) for code in (SETUP, RECORD, SAVE, "rec.player()")]
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()

    shown = notebook.cells[1].outputs[0]["data"]
    svg = shown["image/svg+xml"]  # the drawing graphview export writes
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for label in (">AddmmBackward0<", ">TanhBackward0<", ">MeanBackward0<", ">model.0.weight<"):
        assert label in svg
    assert "graphview recording" in shown["text/plain"] and "nb.gvtrace (done)" in shown["text/plain"]

    results = torch.load(tmp_path / "results.pt", weights_only=False)
    assert len(results["plain"]) == 9
    for plain, recorded in zip(results["plain"], results["recorded"]):
        assert torch.equal(plain.view(torch.int32), recorded.view(torch.int32))  # bit for bit

    trace = read_trace(tmp_path / "nb.gvtrace")
    run = Run(trace.events)
    assert run.mode == "inprocess" and run.status == "ok"
    assert [s["step"] for s in run.steps] == [2, 3] and len(run.backwards) == 2
    assert "argv" not in run.start  # a kernel's argv is not the notebook's
    assert "graphview.record(" in run.start["source"]  # the cell that recorded, shown in the code pane
    backward_line = RECORD.splitlines().index("        loss.backward()") + 1
    assert run.backwards[min(run.backwards)].line == backward_line  # the cell's line that ran it
    assert notebook.cells[2].outputs[0]["text"].strip() == str(tmp_path / "nb.gvtrace")

    # the player inline: the web page in a sandboxed frame (its script runs apart from the notebook)
    frame = notebook.cells[3].outputs[0]["data"]["text/html"]
    assert frame.startswith('<iframe sandbox="allow-scripts" srcdoc="&lt;!DOCTYPE html&gt;')
    page = html.unescape(frame.split('srcdoc="', 1)[1].split('" style=', 1)[0])
    assert "AddmmBackward0" in page and "default-src 'none'" in page
