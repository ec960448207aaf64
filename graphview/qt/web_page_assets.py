"""The web page's template: its markup, style and player script (see :mod:`graphview.qt.web_page`).

The run's data replaces ``/*DATA*/`` inside a ``<script type="application/json">`` block; the
script reads it with ``JSON.parse`` and puts every string on the page with ``textContent``. Step
and Back look up where they go in the data's ``skips`` (:mod:`graphview.qt.web_page_stops`). The
Content-Security-Policy forbids anything from outside the file.
"""

PAGE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
      content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>graphview</title>
<style>
  :root { --bg: #fbfbfc; --ink: #1b1b1b; --muted: #454b54; --line: #7d8590; --panel: #f1f3f6; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px "DejaVu Sans", system-ui, sans-serif; color: var(--ink); background: var(--bg);
         display: flex; flex-direction: column; height: 100vh; }
  header { padding: 8px 12px 4px; border-bottom: 1px solid #d0d4da; }
  h1 { font-size: 16px; margin: 0 0 4px; }
  #caption { min-height: 2.6em; color: var(--muted); }
  #controls { display: flex; gap: 6px; align-items: center; padding: 6px 12px; background: var(--panel);
              flex-wrap: wrap; }
  #controls button { font: inherit; padding: 3px 9px; border: 1px solid #b8bec7; border-radius: 5px;
                     background: #fff; cursor: pointer; }
  #controls button:hover { background: #e8eef8; }
  #slider { flex: 1; min-width: 160px; }
  #where { color: var(--muted); min-width: 11em; text-align: right; }
  main { flex: 1; display: flex; min-height: 0; }
  #graph { flex: 1; overflow: auto; position: relative; }
  aside { width: 320px; padding: 10px; border-left: 1px solid #d0d4da; overflow: auto; }
  aside h2 { font-size: 13px; margin: 0 0 4px; }
  .keys { color: var(--muted); font-size: 12px; line-height: 1.6; }
  kbd { border: 1px solid #b8bec7; border-radius: 3px; padding: 0 4px; background: #fff; font-size: 11px; }
  .node rect { stroke-width: 1.3; }
  .node .title { font-weight: bold; font-size: 12px; text-anchor: middle; fill: #1b1b1b; }
  .node .sub { font-size: 10.5px; text-anchor: middle; fill: #454b54; }
  .badge rect { stroke-width: 1; }
  .badge text { font-size: 10px; text-anchor: middle; }
  .saved rect { fill: #fff1c4; stroke: #b8860b; } .saved text { fill: #8d6708; }
  .grad rect { fill: #e8f5e9; stroke: #2e7d32; } .grad text { fill: #236026; }
  .edge { fill: none; stroke: var(--line); stroke-width: 1.3; }
  .edge.accumulate { stroke: #6a4bb0; }
  .edge.nograd { stroke-dasharray: 5 4; }
  .freed rect.body { fill: #f1f1f1 !important; stroke: #bdbdbd !important; stroke-dasharray: 4 3; }
  .freed text { fill: #a0a0a0 !important; }
  .edge.freed { stroke: #d0d0d0; }
  .running rect.body { fill: #ffd59e !important; stroke: #ff8c00 !important; stroke-width: 3.2; }
  .focus rect.body { stroke: #0b57d0; stroke-width: 2.6; }
  #chart { width: 300px; height: 130px; background: #fff; border: 1px solid #d0d4da; }
  #chart .area { fill: #c9dcf5; stroke: #1f5fa8; stroke-width: 1; }
  #chart .cursor { stroke: #c62828; stroke-width: 1.5; }
  #chart text { font-size: 10px; fill: #454b54; }
  #legend span { display: inline-block; margin: 0 8px 4px 0; font-size: 12px; }
  #legend i { display: inline-block; width: 12px; height: 10px; border: 1px solid; margin-right: 4px;
              vertical-align: -1px; border-radius: 3px; }
</style>
</head>
<body>
<header><h1 id="title"></h1><div id="caption" aria-live="polite"></div></header>
<div id="controls">
  <button id="first" title="Start (Home)">Start</button>
  <button id="back" title="Back (←)">◀ Back</button>
  <button id="step" title="Step (→)">Step ▶</button>
  <button id="to-backward" title="To backward (b)">To backward</button>
  <button id="backward-node" title="Backward node (n)">Backward node</button>
  <button id="end-of-step" title="End of step (e)">End of step</button>
  <button id="last" title="End (End)">End</button>
  <input id="slider" type="range" min="0" value="0" aria-label="timeline">
  <span id="where"></span>
</div>
<main>
  <div id="graph"><svg id="svg" xmlns="http://www.w3.org/2000/svg"></svg></div>
  <aside>
    <h2>Saved activations</h2>
    <svg id="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 300 130"></svg>
    <p id="chart-note" class="keys"></p>
    <h2>Keys</h2>
    <p class="keys"><kbd>→</kbd> step · <kbd>←</kbd> back (moments the window draws nothing at, such as a
      model's constructor, go by in one press) · <kbd>b</kbd> to the next backward ·
      <kbd>n</kbd> next backward node · <kbd>e</kbd> end of the step · <kbd>Home</kbd> / <kbd>End</kbd>.
      Hover a node for its details.</p>
    <h2>Legend</h2>
    <div id="legend"></div>
  </aside>
</main>
<script type="application/json" id="data">/*DATA*/</script>
<script>
(() => {
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const NS = "http://www.w3.org/2000/svg";
const W = 172, H = 48;
const COLORS = {
  param: ["#b7e4b9", "#2e7d32"], input_grad: ["#ffe08a", "#b8860b"], input: ["#e3e6ea", "#8a8f96"],
  intermediate: ["#ffffff", "#6b7280"], output: ["#f7b4ae", "#c62828"], op: ["#c9dcf5", "#1f5fa8"],
  accumulate: ["#dccff2", "#6a4bb0"], detached: ["#eeeeee", "#888888"]};
const NAMES = {param: "leaf parameter", input_grad: "leaf input that requires grad", input: "input (no grad)",
  intermediate: "intermediate tensor", output: "output / loss", op: "grad_fn node", accumulate: "AccumulateGrad",
  detached: "detached / no-grad tensor"};

function make(name, attrs, parent, text) {
  const e = document.createElementNS(NS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

document.getElementById("title").textContent = D.script + " · autograd, step by step";
document.title = D.script + " · graphview";
const svg = document.getElementById("svg");
let minX = 0, minY = 0, maxX = 0, maxY = 0;
D.nodes.forEach((n, k) => {
  if (k === 0 || n.x < minX) minX = n.x; if (k === 0 || n.y < minY) minY = n.y;
  if (k === 0 || n.x > maxX) maxX = n.x; if (k === 0 || n.y > maxY) maxY = n.y;
});
const originX = minX - W, originY = minY - H, width = maxX - minX + 2 * W, height = maxY - minY + 2 * H;
svg.setAttribute("viewBox", `${originX} ${originY} ${width} ${height}`);
svg.setAttribute("width", width); svg.setAttribute("height", height);
const defs = make("defs", {}, svg);
const marker = make("marker", {id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
                               markerHeight: 7, orient: "auto-start-reverse"}, defs);
make("path", {d: "M 0 0 L 10 5 L 0 10 z", fill: "#7d8590"}, marker);
const edgeLayer = make("g", {}, svg), nodeLayer = make("g", {}, svg);

const edges = D.edges.map(([s, t, kind, born, label]) => {
  const a = D.nodes[s], b = D.nodes[t];
  const y1 = a.y + H / 2, y2 = b.y - H / 2 - 2;
  const bend = Math.max(30, Math.abs(y2 - y1) / 3);
  const d = `M ${a.x} ${y1} C ${a.x} ${y1 + bend}, ${b.x} ${y2 - bend}, ${b.x} ${y2}`;
  // its second half, a unit or less apart: where it passes the saved badge of the node it goes into
  const last = [];
  for (let k = 0; k < 32; k++) {
    const t = 0.5 + k / 64, u = 1 - t;
    last.push([u * u * u * a.x + 3 * u * u * t * a.x + 3 * u * t * t * b.x + t * t * t * b.x,
               u * u * u * y1 + 3 * u * u * t * (y1 + bend) + 3 * u * t * t * (y2 - bend) + t * t * t * y2]);
  }
  const nograd = kind === "detach" || kind === "no_grad_op" || kind === "input";
  const path = make("path", {d: d, class: "edge " + kind + (nograd ? " nograd" : ""), "marker-end": "url(#arrow)"},
                    edgeLayer);
  return {s: s, t: t, born: born, path: path, last: last};
});
const into = D.nodes.map(() => []);  // node -> the edges into it
edges.forEach(e => into[e.t].push(e));

function badge(parent, cls, y) {
  const g = make("g", {class: "badge " + cls}, parent);
  const rect = make("rect", {x: -40, y: y - 8, width: 80, height: 16, rx: 8}, g);
  const text = make("text", {x: 0, y: y + 4}, g);
  g.style.display = "none";
  return {g: g, rect: rect, text: text};
}

const nodes = D.nodes.map((n, k) => {
  const g = make("g", {class: "node", transform: `translate(${n.x} ${n.y})`}, nodeLayer);
  const [fill, stroke] = COLORS[n.kind] || COLORS.intermediate;
  const tensor = n.kind !== "op" && n.kind !== "accumulate";
  make("rect", {class: "body", x: -W / 2, y: -H / 2, width: W, height: H, rx: tensor ? H / 2 : 6,
                fill: fill, stroke: stroke}, g);
  for (const text of [make("text", {class: "title", x: 0, y: -3}, g, n.title.length > 30 ? n.title.slice(0, 29) + "…" : n.title),
                      make("text", {class: "sub", x: 0, y: 13}, g, n.subtitle.length > 34 ? n.subtitle.slice(0, 33) + "…" : n.subtitle)]) {
    if (text.getComputedTextLength() > W - 12) {  // squeezed into the box rather than over its edges
      text.setAttribute("textLength", W - 12);
      text.setAttribute("lengthAdjust", "spacingAndGlyphs");
    }
  }
  const tip = make("title", {}, g);
  return {n: n, g: g, tip: tip, saved: n.saved ? badge(g, "saved", -H / 2 - 2) : null,
          grad: n.grads ? badge(g, "grad", H / 2 + 13) : null, k: k};
});

// the least distance of a saved badge's nearer end from the top centre, where the arrows end in
// heads 4.6 units wide each side (the marker: 7 stroke widths of 1.3): an arrowhead's length (8)
// clear of them, as in the window
const BADGE_NEAR = 13;

// spot: null centred (below the node), else [side, near]: right (1) or left (-1) of the top centre
// where arrows end, its nearer end near from it (BADGE_NEAR, or past arrows where it has the room)
function setBadge(b, text, spot) {
  if (!text) { b.g.style.display = "none"; return; }
  b.text.textContent = text;
  b.g.style.display = "";
  const w = Math.max(40, b.text.getComputedTextLength() + 14);
  const near = spot && spot[1] + w <= W / 2 + 24 ? spot[1] : BADGE_NEAR;
  const x = !spot ? -w / 2 : spot[0] > 0 ? near : -near - w;
  b.rect.setAttribute("x", x); b.rect.setAttribute("width", w);
  b.text.setAttribute("x", x + w / 2);
}

// where a node's saved badge goes (as the window puts it): right of the top centre, or left of it
// where the arrows shown come in from the right alone; with arrows on both sides, on the side
// where they pass nearer the centre, past them
function savedSpot(k, visible, i) {
  const n = D.nodes[k];
  let left = 0, right = 0;
  for (const e of into[k]) {
    if (!(visible[e.s] && e.born <= i)) continue;
    for (const [x, y] of e.last) {
      if (y < n.y - H / 2 - 12 || y > n.y - H / 2 + 6) continue;
      if (x - n.x > 4) right = Math.max(right, x - n.x);
      else if (x - n.x < -4) left = Math.max(left, n.x - x);
    }
  }
  if (!left || !right) return [right ? -1 : 1, BADGE_NEAR];
  return [left < right ? -1 : 1, Math.max(BADGE_NEAR, Math.min(left, right) + 3)];
}

function gradAt(n, i) {
  let text = null;
  for (const [at, value] of n.grads || []) { if (at <= i) text = value; else break; }
  return text;
}

// the memory chart
const chart = document.getElementById("chart");
const CW = 300, CH = 130, PAD = 16;
const last = Math.max(1, D.events - 1);
const most = Math.max(1, ...D.memory.y);
const cx = x => PAD + (CW - 2 * PAD) * x / last, cy = y => CH - PAD - (CH - 2 * PAD) * y / most;
if (D.memory.x.length) {
  let pts = `${cx(D.memory.x[0])},${cy(0)} `;
  D.memory.x.forEach((x, k) => { pts += `${cx(x)},${cy(D.memory.y[k])} `; });
  pts += `${cx(D.memory.x[D.memory.x.length - 1])},${cy(0)}`;
  make("polygon", {class: "area", points: pts}, chart);
}
make("line", {x1: PAD, y1: CH - PAD, x2: CW - PAD, y2: CH - PAD, stroke: "#9ca3af"}, chart);
make("text", {x: PAD, y: 11}, chart, "peak " + human(most));
const cursor = make("line", {class: "cursor", x1: PAD, y1: PAD - 4, x2: PAD, y2: CH - PAD}, chart);
document.getElementById("chart-note").textContent =
  "bytes autograd holds for backward on " + D.memory.device + " after each event; the red line is now";

function human(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n, u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
}

const legend = document.getElementById("legend");
for (const kind in NAMES) {
  const span = document.createElement("span");
  const swatch = document.createElement("i");
  swatch.style.background = COLORS[kind][0]; swatch.style.borderColor = COLORS[kind][1];
  span.appendChild(swatch);
  span.appendChild(document.createTextNode(NAMES[kind]));
  legend.appendChild(span);
}

const slider = document.getElementById("slider");
slider.max = D.moments.length - 1;
let current = 0;

function show(k) {
  k = Math.max(0, Math.min(D.moments.length - 1, k));
  current = k;
  const m = D.moments[k], i = m.at;
  const visible = nodes.map(({n}) => n.born <= i && (n.dead < 0 || n.dead > i));
  for (const item of nodes) {
    const n = item.n, shown = visible[item.k];
    item.g.style.display = shown ? "" : "none";
    if (!shown) continue;
    const freed = n.freed !== undefined && n.freed >= 0 && n.freed <= i;
    item.g.classList.toggle("freed", freed);
    item.g.classList.toggle("running", m.running && m.focus === item.k);
    item.g.classList.toggle("focus", !m.running && m.focus === item.k);
    if (item.saved) setBadge(item.saved, freed ? null : "saved " + n.saved, savedSpot(item.k, visible, i));
    const grad = item.grad ? gradAt(n, i) : null;
    if (item.grad) setBadge(item.grad, grad === null ? null : "grad " + grad, null);
    item.tip.textContent = [n.title, n.subtitle, n.saved && !freed ? "holds " + n.saved + " for backward" : "",
                            freed ? "freed by backward" : "", grad !== null ? ".grad = " + grad : ""]
                           .filter(Boolean).join("\n");
  }
  for (const e of edges) {
    const shown = visible[e.s] && visible[e.t] && e.born <= i;
    e.path.style.display = shown ? "" : "none";
    if (shown) e.path.classList.toggle("freed", nodes[e.t].g.classList.contains("freed"));
  }
  const held = m.held ? " · " + m.held : "";
  document.getElementById("caption").textContent = `event ${i} of ${D.events - 1}: ${m.text}${held}`;
  document.getElementById("where").textContent = `moment ${k + 1} of ${D.moments.length}`;
  slider.value = k;
  const x = cx(i);
  cursor.setAttribute("x1", x); cursor.setAttribute("x2", x);
  if (m.focus >= 0) follow(D.nodes[m.focus]);
}

function follow(n) {
  const box = document.getElementById("graph");
  const x = (n.x - originX) * svg.clientWidth / width, y = (n.y - originY) * svg.clientHeight / height;
  const margin = 60;
  if (x < box.scrollLeft + margin || x > box.scrollLeft + box.clientWidth - margin ||
      y < box.scrollTop + margin || y > box.scrollTop + box.clientHeight - margin) {
    box.scrollTo({left: x - box.clientWidth / 2, top: y - box.clientHeight / 2});
  }
}

function next(kinds) {
  for (let k = current + 1; k < D.moments.length; k++) if (kinds.includes(D.moments[k].kind)) return k;
  return D.moments.length - 1;
}
// Step and Back pass over the moments the window draws nothing at (a model's constructor) in one
// press, as its → and ← do: where they go from such a moment, if not the next or previous one
const SKIPS = {step: new Map(D.skips.step), back: new Map(D.skips.back)};
function passing(name, way) { return SKIPS[name].has(current) ? SKIPS[name].get(current) : current + way; }
const ACTIONS = {
  first: () => show(0), last: () => show(D.moments.length - 1),
  back: () => show(passing("back", -1)), step: () => show(passing("step", 1)),
  "to-backward": () => show(next(["backward_start"])),
  "backward-node": () => show(next(["bw_node"])),
  "end-of-step": () => show(next(["backward_end", "optimizer_step", "run_end"])),
};
for (const id in ACTIONS) document.getElementById(id).addEventListener("click", ACTIONS[id]);
slider.addEventListener("input", () => show(Number(slider.value)));
const KEYS = {ArrowRight: "step", ".": "step", ArrowLeft: "back", ",": "back", b: "to-backward",
              n: "backward-node", e: "end-of-step", Home: "first", End: "last"};
document.addEventListener("keydown", event => {
  if (event.target === slider && (event.key === "ArrowRight" || event.key === "ArrowLeft")) return;
  const action = KEYS[event.key];
  if (action && !event.ctrlKey && !event.metaKey && !event.altKey) { event.preventDefault(); ACTIONS[action](); }
});
show(0);
})();
</script>
</body>
</html>
"""
