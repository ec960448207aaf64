"""Opening a big trace in the app: first picture, longest event-loop block, memory.

    python benchmarks/bench_open.py [--layers 1024] [--steps 25] [--cancel]

Records a step script with a deep MLP (``--layers`` x ``Linear(16, 16) + ReLU``, about 2,050 ops
a step; the defaults give a trace of about 51,000 ops and 1.1 million events) with
``graphview record``, cached in the temporary folder, then opens it in the app's window (offscreen,
1366x768) as a user does (File > Open) and prints, each against its target with met / not met:

* first picture: from the open until the canvas has painted the run's first op (a run opens at
  its start, event 0, where nothing is made yet; the bench steps to the first op as "→" does);
* longest block: the longest gap between beats of a 5 ms QTimer, from the open until the whole
  trace is read and drawn (the event loop was held that long);
* peak RSS of the app process, and what opening added to it;
* for reference: how long reading and drawing the whole trace took, and the canvas items made.

With ``--where`` a watchdog thread samples the GUI thread's stack whenever the heartbeat is late by
more than 100 ms, and prints where the longest blocks were spent.

With ``--cancel`` the load is cancelled at 20 % and the bench checks that the window keeps what
was read.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deep_mlp_script import STEP_SCRIPT as SCRIPT  # noqa: E402

from graphview.core.events import SCHEMA_VERSION  # noqa: E402

TARGETS = {"first": 3.0, "block": 0.100, "rss": 1024.0}


def recorded_trace(layers: int, steps: int) -> str:
    """The trace of the MLP step script, recorded once with ``graphview record`` and kept."""
    folder = os.path.join(tempfile.gettempdir(), "graphview-bench-open")
    os.makedirs(folder, exist_ok=True)
    script = os.path.join(folder, f"mlp{layers}.py")
    # (named by the trace format: a trace recorded before the format changed is recorded again)
    trace = os.path.join(folder, f"mlp{layers}x{steps}.v{SCHEMA_VERSION}.gvtrace")
    if not os.path.exists(trace):
        with open(script, "w") as f:
            f.write(SCRIPT.format(layers=layers))
        graphview = os.path.join(os.path.dirname(sys.executable), "graphview")
        command = [graphview] if os.path.exists(graphview) else [sys.executable, "-m", "graphview"]
        start = time.perf_counter()
        subprocess.run(command + ["record", script, "-o", trace, "-q", "--steps", str(steps)], check=True)
        print(f"recorded {trace} in {time.perf_counter() - start:.1f} s")
    return trace


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--cancel", action="store_true", help="cancel the load at 20 %% of the file")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--where", action="store_true", help="print where the GUI thread was during long blocks")
    args = parser.parse_args()
    trace = recorded_trace(args.layers, args.steps)
    size = os.path.getsize(trace)

    from PySide6.QtCore import QTimer

    from graphview.app.gui import App

    app = App()
    window = app.window
    window.resize(1366, 768)
    window.show()
    for _ in range(5):
        app.qt.processEvents()
    before = rss_mb()
    beats: list[float] = []
    heart = QTimer()
    heart.setInterval(5)
    heart.timeout.connect(lambda: beats.append(time.perf_counter()))
    heart.start()

    samples: dict[str, int] = {}
    watching = [args.where]
    if args.where:
        import collections
        import faulthandler
        import re
        import threading

        gui = f"{threading.get_ident():#018x}"
        samples = collections.Counter()
        timed: list[tuple[float, str]] = []
        dump = tempfile.TemporaryFile("w+")

        def gui_stack() -> list[str]:
            """The GUI thread's frames, innermost first, by faulthandler (safe while it runs)."""
            dump.seek(0)
            dump.truncate()
            faulthandler.dump_traceback(dump, all_threads=True)
            dump.seek(0)
            frames, inside = [], False
            for line in dump.read().splitlines():
                if line.startswith(("Thread ", "Current thread ")):
                    inside = gui in line
                elif inside:
                    found = re.match(r'\s+File "(.*)", line (\d+) in (.*)', line)
                    if found:
                        frames.append((found.group(1), f"{os.path.basename(found.group(1))}:{found.group(2)} "
                                                       f"{found.group(3)}"))
            ours = [text for path, text in frames if f"{os.sep}graphview{os.sep}" in path]
            return ours or [text for _, text in frames]  # outside graphview: where, then

        def watch() -> None:
            while watching[0]:
                time.sleep(0.02)
                if beats and time.perf_counter() - beats[-1] > 0.1:
                    where = " < ".join(gui_stack()[:3])
                    samples[where] += 1
                    timed.append((time.perf_counter(), where))

        threading.Thread(target=watch, daemon=True).start()

    start = time.perf_counter()
    beats.append(start)
    app.open(trace)
    first = None
    cancelled_at = None
    peak = rss_mb()
    deadline = start + args.timeout
    while time.perf_counter() < deadline:
        app.qt.processEvents()
        # the app reads the trace on its own timer (App._pump every BATCH_MS), as it does for a user
        if first is None and window.run is not None and window.run.ops:
            # a run opens at its start (event 0, nothing made yet): step to its first op, as "→" does
            window.set_cursor(window.run.ops[0][0])
            window.keep_in_view()
            if any(i.isVisible() for i in window.scene.node_items.values()):
                window.view.viewport().repaint()  # the picture is on screen once it is painted
                first = time.perf_counter() - start
        if args.cancel and cancelled_at is None and app.live is not None and app.live.fraction >= 0.2:
            window.progress.cancel.click()
            cancelled_at = len(window.run.events)
        peak = max(peak, rss_mb())
        if app.live is None and window.runs.settled:
            break
        time.sleep(0.002)
    loaded = time.perf_counter() - start
    for _ in range(20):  # what the last slices scheduled
        app.qt.processEvents()
        time.sleep(0.005)
    heart.stop()
    watching[0] = False
    beats.append(time.perf_counter())
    gaps = [b - a for a, b in zip(beats, beats[1:])]
    longest = max(gaps)
    peak = max(peak, rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    run = window.run
    scene = window.scene
    print(f"trace: {size / 2**20:.0f} MB, {len(run.events):,} events, {len(run.ops):,} ops, "
          f"{len(run.op_nodes):,} autograd nodes ({args.layers} layers x {args.steps} steps)")
    if first is None:
        print("first picture: never")
    else:
        print(f"first picture: {first:.2f} s   target <= {TARGETS['first']:.0f} s -> {verdict(first <= TARGETS['first'])}")
    print(f"longest event-loop block while opening: {longest * 1000:.0f} ms   target <= "
          f"{TARGETS['block'] * 1000:.0f} ms -> {verdict(longest <= TARGETS['block'])}")
    print(f"peak RSS: {peak:.0f} MB (opening added {peak - before:.0f} MB)   target < {TARGETS['rss']:.0f} MB -> "
          f"{verdict(peak < TARGETS['rss'])}")
    print(f"whole trace read and drawn in {loaded:.1f} s; canvas items: {len(scene.node_items):,} nodes, "
          f"{len(scene.edge_items):,} edges, {len(scene.groups):,} module boxes; drawing holds "
          f"{len(scene.drawing.nodes):,} nodes")
    worst = sorted(gaps, reverse=True)[:5]
    print("five longest gaps (ms): " + ", ".join(f"{g * 1000:.0f}" for g in worst))
    if args.where:
        print("the five longest blocks, and where the GUI thread was most of each:")
        for a, b in sorted(zip(beats, beats[1:]), key=lambda ab: ab[0] - ab[1])[:5]:
            inside = collections.Counter(where for t, where in timed if a < t <= b + 0.02)
            top = inside.most_common(2)
            print(f"  {(b - a) * 1000:5.0f} ms: " + "; ".join(f"{n}x {w}" for w, n in top))
        print("where the GUI thread was while the heartbeat was late (samples of 20 ms):")
        for where, count in sorted(samples.items(), key=lambda kv: -kv[1])[:15]:
            print(f"  {count:4d}  {where}")
    if args.cancel:
        kept = len(run.events)
        print(f"cancelled at {cancelled_at:,} events: {kept:,} kept, status bar: "
              f"{window.statusBar().currentMessage()!r}")


if __name__ == "__main__":
    main()
