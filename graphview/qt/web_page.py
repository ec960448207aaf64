"""One self-contained HTML file anyone can step through: the graph as SVG, a timeline slider and
the window's stepping keys, the running node lit, freed parts greyed, ``.grad`` on the leaves,
saved bytes on the autograd nodes, the memory chart with its cursor.

Nothing is fetched (no network, no CDN) and nothing from the trace is ever markup: every string
the run holds goes into one JSON block (with ``<``, ``>`` and ``&`` escaped as ``\\u003c`` ...) and
reaches the page through ``textContent`` alone. The page holds the graph once and, for each node,
the few moments its look changes (born, running, freed, destroyed, a new ``.grad``), so a run's
states stream compactly: the player works them out for the moment shown. Step and Back pass over
the moments where the window draws nothing, as its → and ← do: the page holds where they go from
each moment where that is not the next or the previous one (:mod:`graphview.qt.web_page_stops`).
"""

from __future__ import annotations

import json
import os

from graphview.qt.web_page_assets import PAGE
from graphview.core import timeline
from graphview.core.captions import script_name
from graphview.core.drawing import LAYER_HEIGHT, SLOT_WIDTH, Drawing
from graphview.core.event_words import describe
from graphview.core.export import ExportError
from graphview.core.files import write_file
from graphview.core.held import busiest_device, held_at, held_by_nodes
from graphview.core.run import Run
from graphview.core.text import label_text
from graphview.qt.formatting import human_bytes, short_value
from graphview.qt.web_page_stops import moment_skips

#: moments (the events Step forward stops at) a page holds at most; more are sampled evenly
MAX_MOMENTS = 5000
#: points of the memory chart
CHART_POINTS = 600
WEB_SUFFIXES = (".html", ".htm")


def page_data(run: Run, max_moments: int = MAX_MOMENTS) -> dict:
    """Everything the player shows, as plain data (see the module's docstring). Needs a
    QApplication (the window's canvas says where Step and Back go)."""
    if not run.events:
        raise ExportError("the run has no events: nothing to show")
    drawing = Drawing(run)
    drawing.update(final=True)
    placed = [drawing.nodes[node_id] for node_id in drawing.order if drawing.nodes[node_id].placed]
    number = {node.id: k for k, node in enumerate(placed)}
    nodes = []
    for node in placed:
        dead = drawing.dead_index(node)
        entry = {"id": node.id, "kind": node.kind, "title": node.title, "subtitle": node.subtitle,
                 "x": round(node.slot * SLOT_WIDTH), "y": round(node.layer * LAYER_HEIGHT), "born": node.born,
                 "dead": -1 if dead is None else dead}
        if node.kind in ("op", "accumulate"):
            op = run.op_nodes.get(node.ref)
            entry["freed"] = op.freed if op is not None and op.freed is not None and node.kind == "op" else -1
            saved = held_by_nodes(run, {node.ref}, node.born).total
            if saved:
                entry["saved"] = human_bytes(saved)
        else:
            grads = [[g.index, short_value(g.value)] for g in run.grads.get(node.ref, ()) if g.index >= node.born]
            if grads:
                entry["grads"] = grads
        nodes.append(entry)
    edges = [[number[e.source], number[e.target], e.kind, e.born, label_text(e.label)]  # (cut as the window's)
             for e in drawing.edges if e.source in number and e.target in number]
    moments = timeline.stops_between(run, 0, len(run.events) - 1, max_moments)
    return {
        "script": script_name(run) or "graphview run",
        "events": len(run.events),
        "nodes": nodes,
        "edges": edges,
        "moments": [_moment(run, index, number) for index in moments],
        "skips": moment_skips(run, moments, nodes),
        "memory": _memory(run),
    }


def _moment(run: Run, index: int, number: dict[str, int]) -> dict:
    """One moment: its event, what happened in words, what backward holds, the node it is about
    (the running node in backward) and where it stands among the run's backward calls and steps."""
    ev = run.events[index]
    kind = ev.get("ev")
    focus = None
    if kind in ("bw_node", "bw_node_done", "accumulate") and ev.get("vid") is not None:
        focus = f"op{ev['vid']}"
    elif kind == "op":
        focus = run.node_made_by(ev)
    held = held_at(run, index)
    return {"at": index, "kind": kind, "text": describe(run, index),
            "held": held.text() if held.total else "", "focus": number.get(focus, -1),
            "running": kind in ("bw_node", "bw_node_done", "accumulate")}


def _memory(run: Run) -> dict:
    """The activations autograd holds after each event on the device where they peak, binned."""
    device = busiest_device(run)
    arrays = run.memory_arrays(device)
    if arrays.n == 0:
        return {"device": device, "x": [], "y": []}
    x, y = arrays.peaks("total", CHART_POINTS)
    return {"device": device, "x": [int(v) for v in x], "y": [int(v) for v in y]}


def page_html(data: dict) -> str:
    """The page: the template with ``data`` as JSON that no string in it can break out of."""
    payload = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return PAGE.replace("/*DATA*/", payload, 1)


def write_web_page(run: Run, path: str) -> int:
    """Write ``run``'s player to ``path``; returns the number of moments it steps through."""
    if os.path.splitext(path)[1].lower() not in WEB_SUFFIXES:
        raise ExportError(f"a web page is written to a .html file, not {path!r}")
    data = page_data(run)
    write_file(path, page_html(data))
    return len(data["moments"])
