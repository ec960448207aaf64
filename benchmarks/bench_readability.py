"""Readability of real models at fit: the smallest text on screen and the share of the canvas used.

    python benchmarks/bench_readability.py [--size 1366x768] [--models gpt2_lm,vit_classifier]

Opens zoo models (``tests/zoo/*.py``: Hugging Face GPT-2, Llama, T5, Whisper, CLIP, ViT, ResNet and
BERT built from tiny random configs by ``transformers``, nothing downloaded) in the app's window, offscreen,
as a user does (File > Open: a runner process records the script), steps to the first backward
(the whole graph built) and prints, for the picture there, after F (fit), and after each level
``]`` opens (which fits again), each against the 9 px target:

* zoom: the view's scale;
* smallest text: the smallest height on screen, in pixels, of the texts of the nodes and module
  boxes inside the viewport (node names, subtitles, badges, box labels; see
  :mod:`graphview.qt.canvas.readability`), with met / NOT met against 9 px;
* width used: the share of the canvas's width the graph takes on screen.

Then, at the deepest level, five backward nodes stepped with N: whether the running node is
inside the viewport each time (the view follows it).

With ``--shots DIR`` each picture is also saved there as a PNG of the whole window (run under a
display for the window's real look: ``xvfb-run -a``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# a fresh settings folder: the view as a new user has it (the follow setting on)
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="graphview-bench-readability-")

MODELS = ("gpt2_lm", "llama_decoder", "t5_seq2seq", "whisper_asr", "clip_contrastive", "vit_classifier",
          "resnet_classifier", "bert_mlm")
TARGET_PX = 9.0
#: at most this many levels are opened with ] (a model deeper than that stops there)
DEEPEST = 8


def settle(app, rounds: int = 10) -> None:
    for _ in range(rounds):
        app.qt.processEvents()
        if SHOTS:  # the overview redraws once changes settle (300 ms): the picture shows it
            time.sleep(0.04)


SHOTS: list[str] = []  # the folder of --shots, if given


def row(window, what: str) -> bool:
    """Print one line for the picture the window shows now; True when its smallest text meets the target."""
    from graphview.qt.canvas.readability import smallest_label, width_share

    view = window.view
    if SHOTS:
        name = os.path.splitext(os.path.basename(window.script_path or "run"))[0]
        number = sum(1 for f in os.listdir(SHOTS[0]) if f.startswith(name + "_"))
        window.grab().save(os.path.join(SHOTS[0], f"{name}_{number}.png"))
    smallest = smallest_label(view)
    ok = smallest is not None and smallest >= TARGET_PX
    text = "no text" if smallest is None else f"{smallest:5.1f} px"
    print(f"  {what:<22} level {window.scene.boxes.level():>2}  zoom {view.transform().m11():5.2f}  "
          f"smallest text {text}  width used {width_share(view) * 100:5.1f} %   "
          f"target >= {TARGET_PX:.0f} px -> {'met' if ok else 'NOT met'}")
    return ok


def running_in_view(window) -> bool:
    """Whether the node the cursor's event is about (or its shut box) lies inside the viewport."""
    from PySide6.QtCore import QRectF

    where = window.scene.place_at_event(window.cursor)
    if where is None:
        return False
    port = QRectF(window.view.viewport().rect())
    return port.contains(QRectF(window.view.mapFromScene(where).boundingRect()))


def bench(app, name: str) -> tuple[int, int]:
    """Open one zoo model and print its lines; returns (pictures meeting the target, pictures)."""
    from graphview.core import timeline

    window = app.window
    path = os.path.join(ROOT, "tests", "zoo", f"{name}.py")
    start = time.perf_counter()
    app.open(path)
    if not app.wait_idle(600) or window.run is None or not window.run.backwards:
        print(f"{name}: did not record a backward ({window.run.end if window.run else 'no run'})")
        return 0, 1
    run = window.run
    print(f"{name}: {len(run.op_nodes):,} autograd nodes, {len(run.events):,} events, recorded and drawn in "
          f"{time.perf_counter() - start:.0f} s; canvas {window.view.viewport().width()}x"
          f"{window.view.viewport().height()} px")
    window.move(timeline.next_backward)  # "To backward": the whole graph, before backward runs it
    settle(app)
    results = [row(window, "at To backward")]
    window.actions["fit"].trigger()
    settle(app)
    results.append(row(window, "F (fit)"))
    for _ in range(DEEPEST):
        level = window.scene.boxes.level()
        window.actions["open_level"].trigger()
        settle(app)
        if window.scene.boxes.level() == level:
            break
        results.append(row(window, "] (open a level)"))
    followed = []
    for _ in range(5):
        window.move(timeline.next_backward_node)
        settle(app, 3)
        followed.append(running_in_view(window))
    print(f"  stepping 5 backward nodes (N): the running node in view {sum(followed)} of 5 times")
    row(window, "5 backward nodes in")
    return sum(results), len(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1366x768", help="the window's size (default 1366x768)")
    parser.add_argument("--models", default=",".join(MODELS), help="zoo models, comma-separated")
    parser.add_argument("--shots", help="save a PNG of the window for each picture in this folder")
    args = parser.parse_args()
    if args.shots:
        os.makedirs(args.shots, exist_ok=True)
        SHOTS.append(args.shots)
    width, height = (int(v) for v in args.size.split("x"))

    from graphview.app.gui import App

    app = App()
    window = app.window
    window.resize(width, height)
    window.show()
    settle(app)
    met = pictures = 0
    for name in args.models.split(","):
        good, count = bench(app, name.strip())
        met += good
        pictures += count
    print(f"pictures whose smallest text is {TARGET_PX:.0f} px or more: {met} of {pictures} "
          f"(window {width}x{height})")
    window.close()


if __name__ == "__main__":
    main()
