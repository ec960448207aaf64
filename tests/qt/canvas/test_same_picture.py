"""The canvas draws the same picture every time: items that overlap (two edges into one node)
are stacked by what they draw, not by the order they came into the scene, which follows a set
of names and so Python's string hashing (PYTHONHASHSEED)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from graphview.core import timeline
from tests.conftest import model

#: draws the run in ``events.json`` at its first backward, offscreen, and prints its pixels' digest
_DRAW = """
import hashlib, json, sys
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QApplication
from graphview.core import timeline
from graphview.core.run import Run
from graphview.qt.canvas import GraphScene, GraphView
app = QApplication([])
run = Run(json.load(open(sys.argv[1])))
scene = GraphScene(); view = GraphView(scene); view.resize(1000, 700); view.show()
index = timeline.next_backward(run, 0)
scene.set_run(run); view.set_run(run)
for cursor in (0, index):  # (as a user steps there from the run's start: what the step touched)
    scene.set_cursor(cursor); view.set_cursor(cursor)
for _ in range(20):
    app.processEvents()
image = QImage(1000, 700, QImage.Format_ARGB32); image.fill(0xFFFFFFFF)
painter = QPainter(image); painter.setRenderHint(QPainter.Antialiasing); scene.render(painter); painter.end()
print(hashlib.sha256(bytes(image.constBits())).hexdigest())
"""


def test_the_picture_is_the_same_whatever_the_string_hashing(tmp_path, record):
    run = record(model("mlp_optimizer"), steps=1)
    assert timeline.next_backward(run, 0) is not None
    events = tmp_path / "events.json"
    events.write_text(json.dumps(list(run.events)))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    digests = set()
    for seed in ("1", "2", "3"):  # (seeds that stacked the MLP's edges differently)
        env = {**os.environ, "PYTHONHASHSEED": seed, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": root}
        done = subprocess.run([sys.executable, "-c", _DRAW, str(events)], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        digests.add(done.stdout.split()[-1])
    assert len(digests) == 1
