"""Starting graphview's own processes so that nothing in the folder they start in is imported.

``python -m graphview.app.cli`` puts the current folder first on ``sys.path``: started from a
notebook's kernel, an ``argparse.py`` beside the notebook would run in place of the standard
library's. Every process graphview starts (the runner, the CLI that draws a notebook's graph or
opens the app, the reference run of ``check --fidelity``) boots with :func:`boot_code` instead:

- the entry Python adds for ``-c`` (the current folder) is dropped before anything is imported,
  as ``python -P`` does (and ``-P`` is passed too where Python has it);
- graphview itself is loaded from the very folder this process loaded it from, without putting
  that folder on ``sys.path`` (it may be the current folder: a notebook in a checkout).

Everything else stays as Python sets it (``PYTHONPATH``, the user's site-packages), since that is
where torch may be installed; ``python -I`` would drop both. A script graphview runs still gets the
``sys.path`` that ``python script.py`` gives it (its own folder first: the runner sets that).
"""

from __future__ import annotations

import os
import sys

#: the ``graphview`` package folder this process runs
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: ``-P`` (3.11+): Python adds no entry for the current folder or the script's
SAFE_PATH = ["-P"] if sys.version_info >= (3, 11) else []


def boot_code(then: str, package_dir: str = PACKAGE_DIR) -> str:
    """Python source for ``python -c``: drop the current folder from ``sys.path``, load graphview
    from ``package_dir``, then run ``then``."""
    return ("import sys\n"
            "if not getattr(sys.flags, 'safe_path', False): del sys.path[0]\n"
            "import importlib.util\n"
            f"_spec = importlib.util.spec_from_file_location('graphview', {os.path.join(package_dir, '__init__.py')!r}, "
            f"submodule_search_locations=[{package_dir!r}])\n"
            "_graphview = importlib.util.module_from_spec(_spec)\n"
            "sys.modules['graphview'] = _graphview\n"
            "_spec.loader.exec_module(_graphview)\n"
            "del _spec, _graphview\n"
            f"{then}\n")


def graphview_command(module: str, *args: str) -> list[str]:
    """The command that runs graphview's ``module`` as ``python -m module ARGS`` would, isolated
    from the current folder (see the module's docstring)."""
    code = boot_code(f"import runpy\nrunpy.run_module({module!r}, run_name='__main__', alter_sys=True)")
    return [sys.executable, *SAFE_PATH, "-c", code, *args]
