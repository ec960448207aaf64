"""The layer contracts of the design, checked at run time as well as by import-linter."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_core_imports_neither_torch_nor_qt():
    code = (
        "import sys, graphview.core.run, graphview.core.trace, graphview.core.export, graphview.core.options\n"
        "bad = [m for m in ('torch', 'PySide6', 'pyqtgraph', 'graphview.capture') if m in sys.modules]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_cli_help_without_starting_torch():
    code = "import sys\nfrom graphview.app import cli\nprint('torch' in sys.modules)\n"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.stdout.strip() == "False"
