"""The traces of a distributed job in the app: each says its rank, and the window switches ranks."""

from __future__ import annotations

import time

import pytest
import torch
from torch import nn

import graphview

pytestmark = pytest.mark.e2e


def _record_rank(folder, rank: int, monkeypatch) -> str:
    """One process of a 2-rank job as torchrun starts it (RANK, WORLD_SIZE): rank 1 skips ``aux``."""
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("WORLD_SIZE", "2")
    torch.manual_seed(0)
    net = Net()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(6, 3)
    with graphview.record(folder / "job.gvtrace") as rec:
        net(x, use_aux=rank == 0).pow(2).mean().backward()
        optimizer.step()
    return rec.path


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.head, self.aux = nn.Linear(3, 4), nn.Linear(4, 1), nn.Linear(4, 1)

    def forward(self, x, use_aux):
        h = self.body(x).relu()
        return self.head(h) + self.aux(h) if use_aux else self.head(h)


@pytest.fixture
def app(app):
    """The app at the size of a small laptop screen."""
    app.window.resize(1366, 768)
    return app


def test_a_rank_trace_says_its_rank_and_the_window_switches_to_another(app, tmp_path, monkeypatch):
    paths = [_record_rank(tmp_path, rank, monkeypatch) for rank in (0, 1)]
    assert [p.rsplit("/", 1)[1] for p in paths] == ["job.rank0.gvtrace", "job.rank1.gvtrace"]
    window = app.window
    assert app.open(paths[0])
    assert "rank 0 of 2" in window.windowTitle()
    switcher = window.rank_switcher
    assert switcher.isVisible() and switcher.ranks() == ["0 of 2", "1 of 2"]
    assert switcher.combo.currentText() == "0 of 2"
    assert window.diagnostics.findings == [] or all(f.code != "ddp-unused-parameter" for f in window.diagnostics.findings)
    titles = [item.node.title for item in window.scene.node_items.values()]
    assert "aux.weight" in titles and titles.count("AccumulateGrad") == 6  # every parameter gets a gradient

    switcher.pick(1)
    assert window.run.start["rank"] == 1 and "job.rank1.gvtrace" in window.windowTitle()
    assert "rank 1 of 2" in window.windowTitle() and switcher.combo.currentText() == "1 of 2"
    titles = [item.node.title for item in window.scene.node_items.values()]
    assert titles.count("AccumulateGrad") == 4  # aux.weight and aux.bias get none on rank 1
    codes = [f.code for f in window.diagnostics.findings]
    assert "ddp-unused-parameter" in codes
    finding = next(f for f in window.diagnostics.findings if f.code == "ddp-unused-parameter")
    assert finding.title == "aux gets no gradient on rank 1"

    plain = tmp_path / "plain.py"  # a script run in the window has no ranks to switch
    plain.write_text("import torch\n(torch.ones(2, requires_grad=True) * 2).sum().backward()\n")
    assert app.open(str(plain)) and app.wait_idle(90)
    assert not switcher.isVisible()


def test_rec_open_starts_the_app_on_the_trace(tmp_path, monkeypatch):
    path = _record_rank(tmp_path, 0, monkeypatch)
    monkeypatch.delenv("RANK")
    with graphview.record(tmp_path / "solo.gvtrace") as rec:
        (torch.ones(2, requires_grad=True) * 3).sum().backward()
    assert rec.path.endswith("solo.gvtrace") and path.endswith("job.rank0.gvtrace")
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    process = rec.open()
    try:
        time.sleep(6)
        assert process.poll() is None  # the window is up, on the trace (a bad trace exits at once)
        assert process.args[-1] == rec.path
    finally:
        process.terminate()
        process.wait(timeout=10)
