"""A hostile trace: a real recording whose strings were rewritten to hold markup and terminal escapes.

A script cannot name a variable ``<img src=...>``, so a small script with modules, a parameter that
gets no gradient (a finding naming it), output and an error is recorded, and then every string a
view or the command line shows (tensor names, module paths and types, op and node names, dtypes,
devices, saved attributes, error type, message and traceback, stdout, stderr, the run's end message)
is prefixed with :data:`HOSTILE`. Used by tests/app/test_text_safety.py and tests/qt/test_plain_text.py.
"""

from __future__ import annotations

import json
from pathlib import Path

#: markup Qt would load or render, a terminal escape that clears the screen and retitles the window,
#: characters XML forbids, and a lone surrogate
HOSTILE = "<img src=file:///etc/passwd><font size=7>BIG</font>\x1b[2J\x1b]0;pwned\x07\x00\x01\x0b\ud800"

SCRIPT = """\
import sys
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
spare = torch.tensor(2.0, requires_grad=True)
side = spare * 5
x = torch.randn(2, 3)
loss = model(x).sum()
loss.backward()
print("the script speaks", spare.grad)
print("and complains", file=sys.stderr)
raise ValueError("boom")
"""

ACCUMULATE = "torch::autograd::AccumulateGrad"


def _h(value):
    return HOSTILE + value if isinstance(value, str) else value


def hostile_events(events: list[dict]) -> list[dict]:
    """``events`` with every string a user sees prefixed with :data:`HOSTILE` (consistently: a
    module path is rewritten the same way wherever it appears)."""
    out = []
    for ev in events:
        ev = json.loads(json.dumps(ev))
        kind = ev.get("ev")
        if kind == "name":
            ev["name"] = _h(ev["name"])
            if "also" in ev:
                ev["also"] = [_h(a) for a in ev["also"]]
        elif kind == "tensor":
            for key in ("name", "dtype", "device"):
                ev[key] = _h(ev.get(key))
        elif kind == "op":
            for key in ("op", "module", "module_type"):
                if key in ev:
                    ev[key] = _h(ev[key])
        elif kind == "node":
            if ev["name"] != ACCUMULATE:
                ev["name"] = _h(ev["name"])
            ev["module"] = _h(ev.get("module"))
        elif kind == "saved":
            for key in ("dtype", "device", "attr"):
                ev[key] = _h(ev.get(key))
        elif kind == "own":
            ev["attr"] = _h(ev.get("attr"))
        elif kind in ("module_enter", "module_exit"):
            ev["path"] = _h(ev["path"])
            if "type" in ev:
                ev["type"] = _h(ev["type"])
        elif kind == "error":
            ev["type"], ev["message"] = _h(ev["type"]), _h(ev["message"])
            for frame in ev.get("traceback") or ():
                frame["func"], frame["text"] = _h(frame["func"]), _h(frame.get("text"))
        elif kind in ("stdout", "stderr"):
            ev["text"] = _h(ev["text"])
        elif kind == "run_end":
            ev["message"] = _h(ev.get("message"))
        elif kind == "run_start":
            ev["devices"] = [_h(d) for d in ev.get("devices") or []]
            ev["torch"] = _h(ev.get("torch"))
        elif kind == "alloc":
            ev["device"] = _h(ev["device"])
        out.append(ev)
    return out


def write_hostile_trace(folder: Path) -> Path:
    """Record :data:`SCRIPT` in this process, rewrite its strings and write ``folder/hostile.gvtrace``
    (each line JSON with ``\\u`` escapes, as any writer may produce them)."""
    from graphview.capture.script import run_script
    from graphview.core.options import RunOptions
    from graphview.core.trace import make_header

    script = folder / "hostile.py"
    script.write_text(SCRIPT, encoding="utf-8")
    events: list[dict] = []
    run_script(str(script), events.append, RunOptions())
    header = make_header(script=str(script), options=RunOptions().to_dict(), argv=[str(script), _h("--arg")])
    path = folder / "hostile.gvtrace"
    with open(path, "w", encoding="ascii") as f:
        for item in [header, *hostile_events(events)]:
            f.write(json.dumps(item) + "\n")
    return path
