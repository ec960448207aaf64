"""Take the README's screenshots from the running app (run under a display, e.g. xvfb-run -a).

    python scripts/screenshots.py [--out docs/screenshots]

Opens bundled samples in the real window, steps to telling moments (mid-forward, mid-backward,
after accumulation) and grabs the window.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# a fresh settings folder: the pictures show what a new user sees (no recent files of ours)
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="graphview-screenshots-")

from PySide6.QtCore import QPointF  # noqa: E402

from graphview.app.gui import App, ROOT  # noqa: E402
from graphview.core import timeline  # noqa: E402


def settle(app: App, seconds: float = 0.6) -> None:
    """Process events for a while: a box's glide (280 ms) and the overview's redraw (300 ms after a
    change) run on timers, which a few rounds of processEvents alone do not wait for."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.qt.processEvents()
        time.sleep(0.01)


def shot(app: App, path: str) -> None:
    settle(app)
    app.window.grab().save(path)
    print("wrote", path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "screenshots"))
    parser.add_argument("--only", choices=["whatif", "real", "big"], help="take only this screenshot")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    app = App()
    window = app.window
    window.resize(1600, 1000)
    window.show()
    if args.only:
        {"whatif": what_if, "real": real_model, "big": big_model}[args.only](app, args.out)
        window.close()
        return
    shot(app, os.path.join(args.out, "start_page.png"))

    app.open(os.path.join(ROOT, "sample_models", "lessons", "accumulate_without_clearing.py"))
    app.wait_idle()
    run = window.run
    # the second backward, halfway: the first gradient is in, the second is on its way
    second = [i for i, e in enumerate(run.events) if e["ev"] == "backward_start"][1]
    window.set_cursor(second)
    for _ in range(3):
        window.move(timeline.next_backward_node)
    window.bottom_tabs.setCurrentWidget(window.ledger)
    window.view.fit()
    shot(app, os.path.join(args.out, "backward_accumulation.png"))

    app.open(os.path.join(ROOT, "sample_models", "models", "mlp_optimizer.py"))
    app.wait_idle()
    run = window.run
    start = next(i for i, e in enumerate(run.events) if e["ev"] == "backward_start")
    window.set_cursor(start)
    window.view.fit()
    window.bottom_tabs.setCurrentWidget(window.memory_tab)
    # the AddmmBackward0 the fit shows (the last layer's, next to the loss): the inspector tells of it
    settle(app)
    shown = window.view.mapToScene(window.view.viewport().rect()).boundingRect()
    node = next(n for n in window.scene.node_items.values()
                if n.node.title == "AddmmBackward0" and n.isVisible()
                and shown.contains(n.sceneBoundingRect().center()))
    window.scene.select_node(node.node.id)
    shot(app, os.path.join(args.out, "mlp_before_backward.png"))

    window.toggles.retain.setChecked(True)
    window.toggles.run_button.click()
    app.wait_idle()
    # just after the first backward: with retain_graph the saved tensors are still held
    end = next(i for i, e in enumerate(window.run.events) if e["ev"] == "backward_end")
    window.set_cursor(end)
    window.view.fit()
    shot(app, os.path.join(args.out, "retain_graph_overlay.png"))
    big_model(app, args.out)
    # before what_if, which drags the timeline views below the canvas: at 1366x768 they stay
    # tabbed beside it for T5 (below it, the canvas is 330 px tall and the overview hides the decoder)
    real_model(app, args.out)
    what_if(app, args.out)
    window.close()


def real_model(app: App, out: str) -> None:
    """Hugging Face T5 (an encoder-decoder from a tiny random config, tests/zoo) at 1366x768, six
    nodes into its first backward: the model's input side at a readable zoom, all of its width
    (source, target, the shared embedding, encoder and decoder shut side by side), and the node
    backward runs, lm_head, lit in the overview in the corner. (Following backward showed lm_head
    alone; the graph at the cursor is too tall to read whole.)"""
    try:
        import transformers  # noqa: F401 - the test extras have it; skip the shot without it
    except ImportError:
        print("skipped t5_backward_1366x768.png: transformers is not installed")
        return
    window = app.window
    window.resize(1366, 768)
    settle(app)
    app.open(os.path.join(ROOT, "tests", "zoo", "t5_seq2seq.py"))
    app.wait_idle(timeout=180)
    run = window.run
    start = next(i for i, e in enumerate(run.events) if e["ev"] == "backward_start")
    window.set_cursor(start)
    for _ in range(6):
        window.move(timeline.next_backward_node)
    window.bottom_tabs.setCurrentWidget(window.memory_tab)
    settle(app)
    view = window.view
    drawn = window.scene.drawn_rect()  # what the cursor shows: its top, its width in the middle
    half_height = view.viewport().height() / view.readable_scale() / 2
    view.fitting.readable_around(QPointF(drawn.center().x(), drawn.top() - 20 + half_height))
    view.fitting.clear_edges(None)  # no node cut in half at the bottom edge
    shot(app, os.path.join(out, "t5_backward_1366x768.png"))


def what_if(app: App, out: str) -> None:
    """The transformer sample re-run with its layers checkpointed from the canvas (a module box's
    "Checkpoint every encoder.layers.*"), at 1366x768, during backward's recompute: the lower peak
    against the dotted earlier run, the recompute box and the summary beside the chart."""
    window = app.window
    window.resize(1366, 768)
    settle(app)
    app.open(os.path.join(ROOT, "sample_models", "models", "transformer_block.py"))
    app.wait_idle()
    window.view.sigCheckpointRequested.emit("encoder.layers.*")  # what the box's context menu sends
    app.wait_idle()
    run = window.run
    recomputed = [i for i, e in enumerate(run.events) if e["ev"] == "op" and e.get("recompute")]
    from PySide6.QtCore import Qt

    # the timeline views dragged below the canvas: the chart and its summary side by side
    window.addDockWidget(Qt.BottomDockWidgetArea, window.bottom_dock)
    window.resizeDocks([window.bottom_dock], [270], Qt.Vertical)
    window.bottom_tabs.setCurrentWidget(window.memory_tab)
    settle(app)
    window.set_cursor(recomputed[0])  # step 1, backward: the checkpoint starts its recompute
    window.view.fit()  # F: the graph's width at a readable zoom around the op recomputed, no node cut
    shot(app, os.path.join(out, "whatif_checkpoint_1366x768.png"))


def big_model(app: App, out: str) -> None:
    """The transformer sample: at fit with its module boxes shut, one level open, at 1366x768,
    in the dark theme, and a page of its PDF export as a viewer shows it."""
    from graphview.qt import theme

    window = app.window
    window.resize(1366, 768)
    settle(app)
    app.open(os.path.join(ROOT, "sample_models", "models", "transformer_block.py"))
    app.wait_idle()
    run = window.run
    start = next(i for i, e in enumerate(run.events) if e["ev"] == "backward_start")
    window.set_cursor(start)
    window.view.fit()
    shot(app, os.path.join(out, "transformer_fit_1366x768.png"))
    # the alt text gives the zoom: say it here, so a caption can be checked against the picture
    print(f"  at {window.view.transform().m11() / window.view.readable_scale():.0%} of the readable zoom")
    window.view.change_level(1)  # View > Open module boxes one level deeper (])
    bw = [i for i, e in enumerate(run.events) if e["ev"] == "bw_node"]
    attention = window.scene.boxes.keyed["encoder.layers.0.self_attn"].members
    # backward inside the attention: its shut box lights up
    window.set_cursor(next(i for i in bw if f"op{run.events[i]['vid']}" in attention))
    window.view.fit()  # F: a readable zoom around the running box, no node cut; the overview shows the rest
    shot(app, os.path.join(out, "transformer_one_level_open.png"))
    theme.apply("dark")
    settle(app)
    shot(app, os.path.join(out, "transformer_dark.png"))
    theme.apply("light")
    settle(app)
    pdf = os.path.join(tempfile.mkdtemp(prefix="graphview-pdf-"), "transformer_block.pdf")
    window.export_image(pdf)
    if shutil.which("pdftoppm"):
        subprocess.run(["pdftoppm", "-png", "-r", "90", "-singlefile", pdf, os.path.join(out, "transformer_pdf_page")],
                       check=True)
        print("wrote", os.path.join(out, "transformer_pdf_page.png"))


if __name__ == "__main__":
    main()
