"""The bundled folders are found in a checkout (and an editable install of it): the samples the
start page lists and the README names, and the themes' stylesheets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from graphview.core import bundled
from tests.conftest import ROOT, SAMPLES


def test_a_checkout_lists_its_own_sample_models_folder():
    samples = bundled.bundled_samples()
    assert samples == sorted(str(p) for p in SAMPLES.glob("*/*.py"))
    assert str(SAMPLES / "models" / "mlp_optimizer.py") in samples  # the README's first command
    assert str(SAMPLES / "lessons" / "chain_rule.py") in samples
    assert {Path(p).parent.name for p in samples} == {"lessons", "models", "pitfalls"}


def test_a_checkout_finds_the_themes_in_its_resources_folder():
    for name in ("light", "dark"):
        path = bundled.resource("themes", f"{name}.qss")
        assert path == str(ROOT / "resources" / "themes" / f"{name}.qss")
        assert "#legend QLabel" in Path(path).read_text(encoding="utf-8")
    assert bundled.resource("themes", "no-such-theme.qss") is None


def test_the_installed_command_lists_the_checkout_samples():
    graphview = Path(sys.executable).parent / "graphview"  # the editable install setup.sh makes
    done = subprocess.run([str(graphview), "samples"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == bundled.bundled_samples()
