"""The paths graphview gives a script's modules (``encoder.layers.0``, ``model.1``, ``blocks.2``).

The recorder names every module of a root module the first time the root is called; the
``--checkpoint`` option finds its modules by the same names, with or without the recorder.
"""

from __future__ import annotations

import sys

import torch


def variable_holding(obj, script: str, extra_scopes: list[dict], depth: int = 1) -> str | None:
    """The variable of ``script`` bound to ``obj``: in the script's frames on the stack (outermost
    first), then in ``extra_scopes`` (its module globals). An item of a list is ``layers[3]``, a
    child of an ``nn.ModuleList``/``nn.Sequential``/``nn.ModuleDict`` ``blocks.2``."""
    scopes = list(extra_scopes)
    f = sys._getframe(depth)
    frames = []
    while f is not None:
        if f.f_code.co_filename == script:
            frames.append(f)
        f = f.f_back
    for frame in reversed(frames):
        try:
            scopes.append(frame.f_locals)
        except Exception:  # noqa: BLE001 - exotic frames
            pass
    direct = None
    for scope in scopes:
        for name, value in list(scope.items()):
            if name.startswith("_"):
                continue
            if isinstance(value, (list, tuple)) and len(value) < 10000:
                for i, item in enumerate(value):
                    if item is obj:  # layers = [nn.Linear(...) ...]: layers[3], not the loop variable
                        return f"{name}[{i}]"
            if isinstance(value, (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict)):
                for child_name, child in value.named_children():
                    if child is obj:  # blocks = nn.ModuleList(...), called in a loop: blocks.2
                        return f"{name}.{child_name}"
            if value is obj and direct is None:
                direct = name
    return direct


def root_prefix(root: torch.nn.Module, variable: str | None) -> str:
    """What a called root module's names start with, so they say which module they are.

    A model in a variable keeps torch's own names (``encoder.layers.0.linear1.weight``, as
    ``named_parameters`` and ``state_dict`` give them). The script's variable comes first
    where torch's names would not tell the module apart: a bare layer (``fc1 = nn.Linear``:
    ``fc1.weight``, not ``weight``), a container whose parts are numbered (``model =
    nn.Sequential(...)``: ``model.0.weight``, not ``0.weight``), and a module that is one
    item of a list or ``nn.ModuleList`` called in a loop (``blocks.2.fc.weight``)."""
    if not variable:
        return ""
    children = [name for name, _ in root.named_children()]
    if "." in variable or "[" in variable or not children or all(name.isdigit() for name in children):
        return variable + "."
    return ""


def module_paths(root: torch.nn.Module, prefix: str):
    """``(path, module)`` for ``root`` and every module inside it, named as the recorder names them."""
    for qual, m in root.named_modules():
        yield ((prefix + qual) if qual else prefix.rstrip(".")), m
