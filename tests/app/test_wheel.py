"""A wheel of graphview is complete: installed into a fresh environment (no checkout on its path)
it lists and runs its bundled samples and finds its stylesheets."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.e2e

SKIP = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
                              "*.gvtrace", "out")

# Run inside the fresh environment: the start page's sample list, then a click on one sample
OPEN_FROM_START_PAGE = r"""
import json, sys
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QListWidget
import graphview
from graphview.app.gui import App

app = App()
window = app.window
window.resize(1366, 768)
window.show()
lists = window.start_page.findChildren(QListWidget)
samples = next(w for w in lists if any(w.item(i).data(Qt.UserRole) and "sample_models" in w.item(i).data(Qt.UserRole)
                                      for i in range(w.count())))
paths = [samples.item(i).data(Qt.UserRole) for i in range(samples.count())]
row = next(i for i, p in enumerate(paths) if p.endswith("chain_rule.py"))
item = samples.item(row)
samples.scrollToItem(item)
app.qt.processEvents()
QTest.mouseClick(samples.viewport(), Qt.LeftButton, pos=samples.visualItemRect(item).center())
app.wait_idle(120)
print(json.dumps({"package": graphview.__file__, "paths": paths, "labels": [samples.item(i).text() for i in range(samples.count())],
                  "status": window.run.status if window.run else None,
                  "titles": sorted({i.node.title for i in window.scene.node_items.values()}),
                  "code": window.code.toPlainText()[:40]}))
"""


def _pip_wheel(source: Path, out: Path) -> Path:
    """``pip wheel . --no-deps`` of a copy of the checkout; the environment's own setuptools builds
    it when it has a recent one (no package index needed), else pip fetches one as usual."""
    try:
        import setuptools

        local = int(setuptools.__version__.split(".")[0]) >= 64
    except ImportError:
        local = False
    cmd = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-w", str(out), "-q"]
    subprocess.run(cmd + (["--no-build-isolation"] if local else []), check=True, timeout=300)
    (wheel,) = out.glob("graphview-*.whl")
    return wheel


def _fresh_venv(where: Path, wheel: Path) -> Path:
    """A new environment with only the wheel installed; the test environment's site-packages
    (torch, PySide6, ...) reach it through a .pth file, its editable graphview does not (a .pth
    inside a folder named by a .pth line is never read)."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "test_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "-q", str(wheel)], check=True, timeout=300)
    return where


def test_a_wheel_ships_the_samples_and_resources_and_runs_them_installed(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=SKIP)
    wheel = _pip_wheel(source, tmp_path / "wheels")
    names = set(zipfile.ZipFile(wheel).namelist())
    checkout_samples = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "sample_models").glob("*/*.py"))
    assert len(checkout_samples) > 40
    assert {f"graphview/{p}" for p in checkout_samples} <= names
    resources = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "resources").rglob("*") if p.is_file())
    assert "resources/themes/dark.qss" in resources and "resources/themes/light.qss" in resources
    assert {f"graphview/{p}" for p in resources} <= names

    venv = _fresh_venv(tmp_path / "venv", wheel)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DISPLAY", "WAYLAND_DISPLAY")}
    env["QT_QPA_PLATFORM"] = "offscreen"
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")  # a new user's settings: no recent files
    work = tmp_path / "elsewhere"  # not the checkout: nothing is found from the working directory
    work.mkdir()
    graphview = str(venv / "bin" / "graphview")
    listed = subprocess.run([graphview, "samples"], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    installed = listed.stdout.split()
    package = venv.resolve() / "lib"
    assert len(installed) == len(checkout_samples)
    assert all(Path(p).resolve().is_relative_to(package) and Path(p).is_file() for p in installed)
    assert [p.split("sample_models/")[1] for p in installed] == [p.split("sample_models/")[1] for p in checkout_samples]

    sample = next(p for p in installed if p.endswith("lessons/chain_rule.py"))
    record = subprocess.run([graphview, "record", sample, "-o", "x.gvtrace", "-q"], cwd=work, env=env,
                            capture_output=True, text=True, timeout=180)
    assert record.returncode == 0, record.stderr
    info = subprocess.run([graphview, "info", "x.gvtrace", "--json"], cwd=work, env=env, capture_output=True,
                          text=True, timeout=120)
    assert info.returncode == 0, info.stderr
    summary = json.loads(info.stdout)
    assert summary["status"] == "ok" and Path(summary["script"]).resolve() == Path(sample).resolve()
    assert summary["backward_calls"] == 1 and summary["ops"] >= 3

    styles = subprocess.run([str(venv / "bin" / "python"), "-c",
                             "from graphview.core.bundled import resource; print(resource('themes', 'dark.qss'))"],
                            cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert Path(styles.stdout.strip()).resolve().is_relative_to(package)

    opened = subprocess.run([str(venv / "bin" / "python"), "-c", OPEN_FROM_START_PAGE], cwd=work, env=env,
                            capture_output=True, text=True, timeout=240)
    assert opened.returncode == 0, opened.stderr[-3000:]
    shown = json.loads(opened.stdout.strip().splitlines()[-1])
    assert Path(shown["package"]).resolve().is_relative_to(package)  # the installed graphview, not the checkout
    assert [Path(p).resolve() for p in shown["paths"]] == [Path(p).resolve() for p in installed]
    assert any(label.startswith("lessons/chain_rule.py  —  Chain rule") for label in shown["labels"])
    assert shown["status"] == "ok"
    assert {"x", "MulBackward0", "AddBackward0", "PowBackward0"} <= set(shown["titles"])
    assert shown["code"].startswith('"""Chain rule')
