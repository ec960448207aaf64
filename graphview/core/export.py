"""Graph data exports: JSON, DOT and GraphML (the schema is in docs/graph-json.md).

``graph_data(run)`` is every graph built during the run, parts already freed marked as freed;
``graph_data(run, at=i)`` is the graph as it existed after event ``i``: elements born later are
absent, saved tensors already released are gone, nodes consumed by a backward are marked freed.
"""

from __future__ import annotations

import json
import os
from typing import Iterable, Iterator

import networkx as nx

from graphview.core.events import summary_text
from graphview.core import files
from graphview.core.files import OutputError, WriteError, write_file
from graphview.core.drawing import LAYER_HEIGHT, SLOT_WIDTH
from graphview.core.run import Run
from graphview.core.queries.names import node_title
from graphview.core.text import visible, xml_text

#: the paper a PDF is printed on: A4, in points (portrait; a page may be turned landscape)
PAPER = (595.0, 842.0)
PAPER_NAME = "A4"
#: the margin left blank around each side of a paper page, in points
PAPER_MARGIN = 28.0
#: the smallest scale a graph is printed at: its 9 pt labels print at 5.4 pt, still readable
MIN_SCALE = 0.6
#: room a page keeps for the caption above the graph and the legend below it, in scene units
PAGE_BANDS = 150.0
#: the margin around the graph in a picture (:func:`graphview.qt.export.content_rect`), in scene units
GRAPH_MARGIN = 30.0


def page_room(landscape: bool = False) -> tuple[float, float]:
    """Width and height, in scene units, that a paper page holds for the graph at :data:`MIN_SCALE`
    (its caption and legend bands left out)."""
    width, height = (PAPER[1], PAPER[0]) if landscape else PAPER
    return ((width - 2 * PAPER_MARGIN) / MIN_SCALE - 2 * GRAPH_MARGIN,
            (height - 2 * PAPER_MARGIN) / MIN_SCALE - PAGE_BANDS - 2 * GRAPH_MARGIN)


#: by default a picture opens its module boxes down to the deepest level at which its graph fits
#: this many paper pages (:func:`default_fits`): a three-layer MLP stays open, the bundled
#: transformer (66 rows open: one PDF page 6,545 pt tall, 2.3 m) shows its top-level modules
DEFAULT_PAGES = 2


def page_fits(rows: int, columns: int, pages: int = 1) -> bool:
    """Whether a graph ``rows`` by ``columns`` (its layout's size) fits ``pages`` paper pages
    readably (at :data:`MIN_SCALE`), one above the other, portrait or landscape."""
    return any(columns * SLOT_WIDTH <= width and rows * LAYER_HEIGHT <= pages * height
               for width, height in (page_room(False), page_room(True)))


def default_fits(rows: int, columns: int) -> bool:
    """The default depth's test: the graph fits :data:`DEFAULT_PAGES` pages (:func:`page_fits`)."""
    return page_fits(rows, columns, DEFAULT_PAGES)

#: the picture's ``depth`` that draws every box open, however tall
ALL_OPEN = "all"

GRAPH_SCHEMA = "graphview-graph"
GRAPH_SCHEMA_VERSION = 1
FORMATS = {".json": "json", ".dot": "dot", ".gv": "dot", ".graphml": "graphml"}


class ExportError(Exception):
    """An export that cannot be written. The message is meant for the user."""


class ExportWriteError(ExportError, WriteError):
    """An export that failed while being written (a full disk): nothing was written to it."""


def check_writable(path: str) -> None:
    """Raise :class:`ExportError` (one line) if ``path`` is no place to write an export
    (:func:`graphview.core.files.check_writable`), so that a bad path is refused before anything is
    recorded or drawn."""
    try:
        files.check_writable(path)
    except OutputError as exc:
        raise ExportError(str(exc)) from None


def save(path: str, data: bytes | str | Iterable[str]) -> None:
    """Write an export safely (:func:`graphview.core.files.write_file`); ``ExportError`` on failure."""
    try:
        write_file(path, data)
    except WriteError as exc:
        raise ExportWriteError(str(exc)) from None
    except OutputError as exc:
        raise ExportError(str(exc)) from None


def graph_data(run: Run, at: int | None = None) -> dict:
    """Nodes and edges of the run's autograd graph, as plain data."""
    if at is not None and not 0 <= at < len(run.events):
        raise ExportError(f"--at {at} is outside the run (it has events 0 to {len(run.events) - 1})")
    limit = len(run.events) if at is None else at + 1
    nodes = _tensor_nodes(run, at, limit) + _op_nodes(run, at, limit) + _saved_nodes(run, at, limit)
    present = {node["id"] for node in nodes}
    edges = []
    for edge in run.edges:
        if edge.born >= limit or edge.source not in present or edge.target not in present:
            continue
        item = {"source": edge.source, "target": edge.target, "kind": edge.kind}
        item.update(edge.attrs)
        edges.append(item)

    start = run.start or {}
    return {
        "schema": GRAPH_SCHEMA,
        "version": GRAPH_SCHEMA_VERSION,
        "script": start.get("script"),
        "options": start.get("options", {}),
        "at": at,
        "events": len(run.events),
        "nodes": nodes,
        "edges": edges,
    }


def _tensor_nodes(run: Run, at: int | None, limit: int) -> list[dict]:
    nodes = []
    for tnode in run.tensor_nodes.values():
        if tnode.born >= limit:
            continue
        info = tnode.info
        is_leaf = tnode.grad_fn is None
        node = {
            "id": tnode.id,
            "kind": "leaf" if is_leaf else "intermediate",
            "tid": tnode.tid,
            "version": tnode.version,
            "name": run.tensor_name(tnode.tid),
            "tensor_kind": info.get("kind"),
            "shape": info.get("shape"),
            "dtype": info.get("dtype"),
            "device": info.get("device"),
            "requires_grad": info.get("requires_grad"),
            "is_leaf": is_leaf,
            "grad_fn": f"op{tnode.grad_fn}" if tnode.grad_fn is not None else None,
            "line": info.get("line"),
            "born": tnode.born,
            "dead": run.tensor_dead.get(tnode.tid, limit) < limit,
        }
        if tnode.tid in run.aliases:  # a tied weight: the model's other names for it
            node["also"] = run.aliases[tnode.tid]
        _put_values(node, "value", info)
        entry = run.grad_at(tnode.tid, None if at is None else at)
        node["grad"] = entry.value if entry is not None else None
        nodes.append(node)
    return nodes


def _op_nodes(run: Run, at: int | None, limit: int) -> list[dict]:
    nodes = []
    # with --at: can the backward running then, or the next one, reach each node?
    call = run.backward_around(limit - 1) if at is not None else None
    for op in run.op_nodes.values():
        if op.born >= limit:
            continue
        freed = op.freed is not None and op.freed < limit
        dead = op.dead is not None and op.dead < limit
        node = {
            "id": op.id,
            "kind": "op",
            "op": node_title(op.name),
            "vid": op.vid,
            "seq": op.seq,
            "module": op.module,
            "module_type": run.module_types.get(op.module) if op.module else None,
            "line": op.line,
            "source_op": op.op,
            "custom": op.custom,
            "freed": freed,
            "dead": dead,
            "executed": sum(1 for _, i in op.executed if i < limit),
            "born": op.born,
            "reachable": None,
        }
        if call is not None and op.born < call.start and not freed and not dead:
            node["reachable"] = op.vid in run.reachable_by_call(call)
            if not node["reachable"]:
                node["unreachable_reason"] = run.unreachable_reason(op.vid, limit - 1)
        if op.leaf is not None:
            node["variable"] = _tensor_node_id(run, op.leaf, limit)
        nodes.append(node)
    return nodes


def _saved_nodes(run: Run, at: int | None, limit: int) -> list[dict]:
    nodes = []
    for saved in run.saved.values():
        if saved.born >= limit:
            continue
        released = saved.released is not None and saved.released < limit
        if at is not None and released:
            continue
        nodes.append({
            "id": saved.id, "kind": "saved", "sid": saved.sid, "bytes": saved.bytes, "device": saved.device,
            "saved_kind": saved.kind, "shape": saved.shape, "dtype": saved.dtype,
            "owner": f"op{saved.owner}" if saved.owner is not None else None, "attr": saved.attr,
            "storage": saved.storage, "released": released, "born": saved.born,
        })
    return nodes


def _tensor_node_id(run: Run, tid: int, limit: int) -> str | None:
    best = None
    for tnode in run.tensor_nodes.values():
        if tnode.tid == tid and tnode.born < limit:
            best = tnode.id
    return best


def _put_values(node: dict, key: str, info: dict) -> None:
    if "values" in info:
        node[key] = {"shape": info.get("shape"), "values": info["values"]}
    elif "stats" in info:
        node[key] = {"shape": info.get("shape"), "stats": info["stats"]}
    else:
        node[key] = None


def to_networkx(data: dict) -> nx.MultiDiGraph:
    graph = nx.MultiDiGraph()
    for node in data["nodes"]:
        graph.add_node(node["id"], **{k: v for k, v in node.items() if k != "id"})
    for edge in data["edges"]:
        graph.add_edge(edge["source"], edge["target"], **{k: v for k, v in edge.items() if k not in ("source", "target")})
    return graph


def node_label(node: dict) -> str:
    kind = node["kind"]
    if kind == "op":
        return node["op"]
    if kind == "saved":
        return f"saved {node.get('attr') or ''} {_bytes(node['bytes'])}".strip()
    name = node.get("name") or node["id"]
    shape = "×".join(str(d) for d in node.get("shape") or []) or "scalar"
    label = f"{name}\n{shape}"
    if node.get("grad") is not None:
        label += f"\ngrad {summary_text(node['grad'])}"
    return label


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


_DOT_STYLE = {
    "op": 'shape=box, style="rounded,filled", fillcolor="#dbe9f6"',
    "leaf": 'shape=ellipse, style=filled, fillcolor="#cfeccf"',
    "intermediate": 'shape=ellipse, style=filled, fillcolor="#f5f5f5"',
    "saved": 'shape=note, style=filled, fillcolor="#fff1c4", fontsize=9',
}


def to_dot(data: dict) -> str:
    lines = ["digraph autograd {", "  rankdir=BT;", '  node [fontname="Helvetica", fontsize=11];']
    for node in data["nodes"]:
        style = _DOT_STYLE[node["kind"]]
        if node.get("freed") or node.get("released"):
            style += ', color="#999999", fontcolor="#999999"'
        label = visible(node_label(node), newlines=True).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        lines.append(f'  "{node["id"]}" [label="{label}", {style}];')
    for edge in data["edges"]:
        attrs = f'label="{_dot_text(edge["kind"])}"' if edge["kind"] not in ("next", "grad_fn") else ""
        if edge["kind"] in ("saved", "detach", "view", "no_grad_op", "input"):
            attrs += (", " if attrs else "") + "style=dashed"
        lines.append(f'  "{edge["source"]}" -> "{edge["target"]}"' + (f" [{attrs}]" if attrs else "") + ";")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_text(value: object) -> str:
    """A string inside a DOT double-quoted string: control characters visible, quotes escaped."""
    return visible(value).replace("\\", "\\\\").replace('"', '\\"')


def to_graphml(data: dict) -> str:
    """The graph as GraphML. Every string (a name, an op, a module path from the trace) has the
    characters XML forbids escaped (:func:`graphview.core.text.xml_text`): the file always parses."""
    graph = to_networkx(data)
    flat = nx.MultiDiGraph()
    for node, attrs in graph.nodes(data=True):
        flat.add_node(node, **{k: _graphml_value(v) for k, v in attrs.items() if v is not None})
    for u, v, attrs in graph.edges(data=True):
        flat.add_edge(u, v, **{k: _graphml_value(val) for k, val in attrs.items() if val is not None})
    return "\n".join(nx.generate_graphml(flat)) + "\n"


def _graphml_value(value: object) -> object:
    if isinstance(value, str):
        return xml_text(value)
    if isinstance(value, (bool, int, float)):
        return value
    return xml_text(json.dumps(value))


def _json_chunks(data: dict) -> Iterator[str]:
    """The JSON document in pieces, written as they are encoded (never one string of it all)."""
    yield from json.JSONEncoder(indent=1).iterencode(data)
    yield "\n"


def export_graph(run: Run, path: str | os.PathLike, at: int | None = None) -> str:
    """Write the graph to ``path`` in the format its suffix names; returns the format."""
    path = os.fspath(path)
    suffix = os.path.splitext(path)[1].lower()
    fmt = FORMATS.get(suffix)
    if fmt is None:
        known = ", ".join(sorted(FORMATS))
        raise ExportError(f"cannot tell the export format from {path!r}: use one of {known}")
    data = graph_data(run, at)
    text = {"json": lambda: _json_chunks(data), "dot": lambda: to_dot(data),
            "graphml": lambda: to_graphml(data)}[fmt]()
    save(path, text)
    return fmt
