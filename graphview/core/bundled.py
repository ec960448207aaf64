"""Where graphview's bundled folders are: the sample scripts and the resources (stylesheets, icons).

An installed wheel holds them inside the package (``graphview/sample_models``,
``graphview/resources``: ``setup.py`` puts them there); a checkout, and an editable install of
one, keeps them at the top level beside ``graphview/``, where the README's commands name them.
"""

from __future__ import annotations

import glob
import os

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../graphview
CHECKOUT = os.path.dirname(PACKAGE)


def folder(name: str) -> str | None:
    """The bundled folder ``name`` (``"sample_models"``, ``"resources"``): the installed copy, else
    the checkout's; None when neither exists."""
    for path in (os.path.join(PACKAGE, name), os.path.join(CHECKOUT, name)):
        if os.path.isdir(path):
            return path
    return None


def bundled_samples() -> list[str]:
    """Every sample script (``sample_models/<group>/<name>.py``), sorted."""
    root = folder("sample_models")
    return sorted(glob.glob(os.path.join(root, "*", "*.py"))) if root else []


def resource(*parts: str) -> str | None:
    """The path of a file in ``resources/`` (``resource("themes", "dark.qss")``), or None if it is missing."""
    root = folder("resources")
    path = os.path.join(root, *parts) if root else None
    return path if path and os.path.isfile(path) else None
