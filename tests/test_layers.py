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


def test_the_architecture_page_names_only_what_exists():
    """docs/architecture.md, the page a newcomer reads first, names the module of each step: each
    path it names is in the tree (a module moved or renamed must take the page with it)."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    paths = set(re.findall(r"`((?:graphview|tests|docs)/[\w/.]*)`", text))
    # a short name is the one in the folder named just before it (``hooks/saved.py`` under capture/)
    short = set(re.findall(r"`(hooks/\w+\.py)`", text))
    assert len(paths) > 30
    missing = [p for p in sorted(paths) if not (ROOT / p).exists()]
    missing += [p for p in sorted(short) if not (ROOT / "graphview" / "capture" / p).exists()]
    assert missing == []
    # and each class it names (``Placement``, ``CursorState.touched``) is defined, with that attribute
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "graphview").rglob("*.py"))
    names = set(re.findall(r"`([A-Z][a-z]\w*)(?:\.(\w+))?(?:\(\))?`", text)) - {("TorchFunctionMode", "")}
    assert len(names) > 15
    unknown = [f"{cls}.{attr}" if attr else cls for cls, attr in sorted(names)
               if not re.search(rf"^class {cls}\b", source, re.M)
               or attr and not re.search(rf"(def {attr}\b|self\.{attr}\s*[:=]|^\s+{attr}\s*[:=])", source, re.M)]
    assert unknown == []
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/architecture.md)" in readme.partition("## Where to go next")[2]
