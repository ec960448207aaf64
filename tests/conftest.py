"""Shared fixtures: in-process recording (fast) and paths of the bundled samples."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# settings (recent files) of every window a test opens, in this process and in the processes
# it starts, go to a throwaway folder, never into the user's own ~/.config/graphview
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="graphview-test-config-")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_models"
LESSONS = SAMPLES / "lessons"
MODELS = SAMPLES / "models"


def lesson(name: str) -> str:
    return str(LESSONS / f"{name}.py")


def model(name: str) -> str:
    return str(MODELS / f"{name}.py")


def zoo(name: str) -> str:
    """A real architecture or autograd pattern of the test zoo (tests/zoo), by name."""
    return str(ROOT / "tests" / "zoo" / f"{name}.py")


def tiny_gpt2(layers: int = 2) -> str:
    """A step script of Hugging Face GPT-2 from a tiny random config (nothing downloaded): its
    ``lm_head`` reads the embedding's weight (tied)."""
    return ("import torch\n"
            "from transformers import GPT2Config, GPT2LMHeadModel\n"
            "torch.manual_seed(0)\n"
            f"model = GPT2LMHeadModel(GPT2Config(n_layer={layers}, n_embd=64, n_head=4, vocab_size=100))\n"
            "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
            "ids = torch.randint(0, 100, (2, 8))\n"
            "def step():\n"
            "    return model(input_ids=ids, labels=ids).loss\n")


#: a script that only builds a model: its constructor's ops (several stops) never draw anything
ONLY_BUILDS_A_MODEL = ("import torch\n"
                       "class Positions(torch.nn.Module):\n"
                       "    def __init__(self):\n"
                       "        super().__init__()\n"
                       "        for _ in range(4):\n"
                       "            torch.zeros(8).add_(1).mul_(2)  # scratch a constructor throws away\n"
                       "        self.table = torch.nn.Embedding(8, 2)\n"
                       "model = Positions()\n")


def record_each(scripts, steps: int = 2) -> dict[str, list[dict]]:
    """Each script's events, recorded in-process (what a runner sends); each run must end ok."""
    from graphview.capture.script import run_script
    from graphview.core.options import RunOptions

    found = {}
    for script in scripts:
        events: list[dict] = []
        run_script(script, events.append, RunOptions(steps=steps))
        assert events[-1]["ev"] == "run_end" and events[-1]["status"] == "ok", script
        found[script] = events
    return found


@pytest.fixture
def record():
    """``record(path, **options)`` runs a script in-process under the recorder: (Run, globals)."""
    from graphview.capture.script import run_script
    from graphview.core.options import RunOptions
    from graphview.core.run import Run

    def _record(path: str, keep: dict | None = None, **options):
        events: list[dict] = []
        run_script(str(path), events.append, RunOptions(**options), keep_globals=keep)
        return Run(events)

    return _record


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    """A main window (offscreen) with its settings kept in a temporary folder."""
    from PySide6.QtCore import QSettings

    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(tmp_path / "settings"))
    # QSettings("graphview", "graphview") is the native format, whatever the default format is
    QSettings.setPath(QSettings.NativeFormat, QSettings.UserScope, str(tmp_path / "settings"))
    QSettings.setDefaultFormat(QSettings.IniFormat)
    from graphview.qt.main_window import MainWindow

    win = MainWindow(samples=[])
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    return win


@pytest.fixture
def write_script(tmp_path):
    """``write_script(text)`` writes a script file and returns its path."""
    counter = iter(range(1000))

    def _write(text: str, name: str | None = None) -> str:
        path = tmp_path / (name or f"script_{next(counter)}.py")
        path.write_text(text, encoding="utf-8")
        return str(path)

    return _write


@pytest.fixture
def app(qtbot, tmp_path):
    """The whole app (window, runner client) offscreen, its settings in a temporary folder."""
    from PySide6.QtCore import QSettings

    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(tmp_path / "settings"))
    QSettings.setDefaultFormat(QSettings.IniFormat)
    from graphview.app.gui import App

    application = App()
    qtbot.addWidget(application.window)
    application.window.show()
    yield application
    application.stop()
    application.timer.stop()



def app_for_mutated_traces(tmp_path_factory):
    """A generator for a module's fixture: the app with its window shown (settings in a temporary
    folder); afterwards stopped and closed, and deleted with the module's other windows."""
    from PySide6.QtCore import QSettings

    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(tmp_path_factory.mktemp("settings")))
    from graphview.app.gui import App

    application = App()
    application.window.show()
    yield application
    application.stop()
    application.timer.stop()
    application.window.close()


@pytest.fixture(autouse=True, scope="module")
def windows_deleted_after_each_module():
    """Every main window a test module opened is deleted at its end, as a user's closed window is
    (those that opened the fuzz suite's mutated traces too): a window that crashes when it is
    destroyed crashes here, in the module that made it, rather than whenever the garbage collector
    happens to collect it in a later test."""
    yield
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication
    from shiboken6 import isValid

    from graphview.qt.main_window import MainWindow

    app = QApplication.instance()
    if app is None:
        return
    for widget in app.topLevelWidgets():
        if isValid(widget) and isinstance(widget, MainWindow):
            widget.close()
            widget.deleteLater()
    app.sendPostedEvents(None, QEvent.DeferredDelete)
    app.processEvents()
