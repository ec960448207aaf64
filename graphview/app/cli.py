"""The ``graphview`` command line.

    graphview [SCRIPT_OR_TRACE] [-- ARGS]              open the desktop app (ARGS: the script's own)
    graphview record SCRIPT -o run.gvtrace [options] [-- ARGS]   record a script headless
    graphview export SCRIPT_OR_TRACE -o graph.json|dot|graphml|png|svg|pdf [--at EVENT] [--no-legend] [--no-caption]
    graphview export SCRIPT_OR_TRACE -o run.gif|apng|mp4|webm [--from MOMENT] [--to MOMENT]   an animation
    graphview export SCRIPT_OR_TRACE -o lesson.html   one web page that steps through the run, offline
    graphview info TRACE [--json]                      what a trace holds
    graphview check SCRIPT_OR_TRACE [--json]           autograd pitfalls found (exit 1 if any)
    graphview diff A [B] [--step-a N] [--step-b M]     autograd nodes added/removed between graphs
    graphview gradcheck SCRIPT --tensor NAME           autograd vs finite differences (exit 1 if off)

A file whose name ends in ``.py`` is a script: graphview runs it. Any other file is read as a trace
and refused if it is not one. Nothing else runs: not what a trace names, not a file because of
what it holds (docs/safety.md).

Exit codes: 0 ok; 1 the script failed (its trace is still written); 2 bad input or an
unwritable output. Failures print one line starting with ``graphview:``, never a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import tempfile

from graphview.app.inputs import UserError, check_script, check_writable, is_trace, say, say_wrapped, shown, shown_lines
from graphview.app.runner_client import Interrupted
from graphview.app.whatif_cli import print_comparison, print_suggestions, suggestions_data
from graphview.core.bundled import bundled_samples
from graphview.core.diagnostics import cut_finding
from graphview.core.events import OUTPUT_CAP, summary_text
from graphview.core.export import ALL_OPEN, FORMATS, PAPER_NAME, ExportError, export_graph
from graphview.core.files import WriteError, reading
from graphview.core.options import APP_STEPS, AUTOCAST_DTYPES, GRAD_MODES, RunOptions, args_text
from graphview.core.ranks import rank_label
from graphview.core.run import Run
from graphview.core.tally import RunTally
from graphview.core.trace import SCRIPT_SUFFIX, SUFFIX, TraceError, TraceWriter, is_script, make_header

EXIT_OK, EXIT_SCRIPT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
IMAGE_SUFFIXES = (".png", ".svg", ".pdf")  # drawn by graphview.qt.export (not imported here: no Qt for --help)
ANIMATION_SUFFIXES = (".gif", ".apng", ".mp4", ".webm")  # drawn by graphview.qt.animation
WEB_SUFFIXES = (".html", ".htm")  # the web page player, graphview.qt.web_page
DEFAULT_SCALE = 2.0


def _add_run_options(p: argparse.ArgumentParser) -> None:
    """The run options of record, export, check and diff: those of the app's Run options panel,
    with its defaults (a step script runs APP_STEPS steps in every command, as in the app: a
    trace recorded, compared or exported is the run the user watched)."""
    g = p.add_argument_group("run options (the toggles)")
    g.add_argument("--retain-graph", action="store_true", help="force retain_graph=True on every backward")
    g.add_argument("--create-graph", action="store_true", help="force create_graph=True on every backward")
    g.add_argument("--detach-at", action="append", default=[], metavar="WHERE",
                   help="detach the result at an op id (op:12), a source line (line:7) or a module path "
                        "(encoder.layers.0); may be repeated")
    g.add_argument("--grad-mode", choices=GRAD_MODES, default="grad",
                   help="grad mode for the forward (default: grad)")
    g.add_argument("--no-grad", dest="grad_mode", action="store_const", const="no_grad", help="same as --grad-mode no_grad")
    g.add_argument("--inference-mode", dest="grad_mode", action="store_const", const="inference_mode",
                   help="same as --grad-mode inference_mode")
    g.add_argument("--accumulate", action="store_true", help="step scripts: do not zero grads between steps")
    g.add_argument("--device", help="default device for the script: cpu, cuda:N or mps")
    g.add_argument("--steps", type=int, default=APP_STEPS,
                   help=f"step scripts: number of steps (default {APP_STEPS}, as the app runs a script)")
    g.add_argument("--checkpoint", action="append", default=[], metavar="MODULE",
                   help="run this module's forward under torch.utils.checkpoint.checkpoint(..., use_reentrant=False): "
                        "its activations are recomputed in backward instead of saved (a path such as "
                        "encoder.layers.0; encoder.layers.* for every layer); may be repeated")
    g.add_argument("--autocast", choices=AUTOCAST_DTYPES, default=None, metavar="DTYPE",
                   help="run the forward under torch.autocast(device_type, dtype=DTYPE): bfloat16 (CPU or CUDA) "
                        "or float16 (CUDA)")
    g.add_argument("--save-on-cpu", action="store_true",
                   help="run each step under torch.autograd.graph.save_on_cpu(): saved tensors are kept on the "
                        "CPU until backward (changes nothing for tensors already on the CPU)")
    g.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="stop the script after it has run this many seconds (from its start: importing torch is not counted; the trace keeps what was recorded)")


def writable(text: str, stream) -> str:
    """``text`` with each character ``stream``'s encoding cannot write given as its escape
    (``\\ud800``), where writing it would have failed (and ended the command with a traceback)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        pass
    return text


def export_suffixes() -> list[str]:
    """Every suffix ``graphview export -o`` accepts."""
    return sorted(set(FORMATS) | set(IMAGE_SUFFIXES) | set(ANIMATION_SUFFIXES) | set(WEB_SUFFIXES))


def frame_size(text: str) -> tuple[int, int]:
    """``960x600`` -> (960, 600)."""
    width, sep, height = text.lower().partition("x")
    if not sep or not width.isdigit() or not height.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not WIDTHxHEIGHT in pixels (960x600)")
    return int(width), int(height)


def positive_scale(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a number greater than 0, not {text}")
    return value


def non_negative_depth(text: str) -> int | str:
    if text == ALL_OPEN:
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a whole number nor {ALL_OPEN!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphview",
        usage="graphview [SCRIPT_OR_TRACE]\n       graphview COMMAND ...",
        description="Watch PyTorch autograd build, run and free its graph. "
                    "`graphview SCRIPT.py` or `graphview RUN.gvtrace` opens the script or trace in the desktop app "
                    "(`graphview` alone: its start page); the commands below work without a display. "
                    "export writes the graph as a picture (PNG, SVG, PDF) or as data (JSON, DOT, GraphML).",
        epilog=f"Scripts and traces: a file whose name ends in {SCRIPT_SUFFIX} is a script, which graphview "
               "runs; any other file is read as a trace, and refused if it is not one. graphview never runs a "
               "file because of what it holds, nor the script a trace names. "
               "Exit codes: 0 ok; 1 the script failed (what was recorded is still written); "
               "2 bad input or an unwritable output.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog="graphview")
    for add in (_add_record, _add_export, _add_check, _add_diff, _add_gradcheck, _add_info):
        add(sub)
    sub.add_parser("samples", help="list the bundled sample scripts (the start page's samples), one path a line")
    return parser


def _add_record(sub) -> None:
    rec = sub.add_parser("record", help="run a script under recording and save a trace")
    rec.add_argument("script", help=f"the script to run (its name ends in {SCRIPT_SUFFIX})")
    rec.add_argument("-o", "--output", required=True, help=f"trace file to write ({SUFFIX})")
    rec.add_argument("-q", "--quiet", action="store_true", help="do not echo the script's output")
    _add_run_options(rec)


def _add_export(sub) -> None:
    exp = sub.add_parser("export", help="export the graph as a picture (PNG, SVG, PDF), an animation (GIF, APNG, MP4, "
                                        "WebM), a web page to step through (HTML) or data (JSON, DOT, GraphML)",
                         description="Export the recorded graph as a picture (PNG, SVG, PDF; no display needed), an "
                                     "animation of the run (GIF, APNG; MP4, WebM with imageio-ffmpeg), one HTML file "
                                     "anyone can step through offline, or as data (JSON, DOT, GraphML). The format "
                                     "comes from the output's suffix.")
    exp.add_argument("source", help=f"a script (named {SCRIPT_SUFFIX}: recorded first) or a trace file (any other name)")
    exp.add_argument("-o", "--output", required=True,
                     help="graph.png, graph.svg or graph.pdf (picture); run.gif, run.apng, run.mp4 or run.webm "
                          "(animation); lesson.html (web page); graph.json, graph.dot (or .gv) or graph.graphml (data)")
    exp.add_argument("--scale", type=positive_scale, default=None,
                     help=f"PNG: pixels per scene unit, greater than 0 (default {DEFAULT_SCALE:g}; "
                          "lowered if the image would be too large)")
    exp.add_argument("--at", type=int, default=None, metavar="EVENT",
                     help="the graph as it was after this event index (default: data formats hold every graph of the run, a step script's steps each; pictures the last graph complete)")
    exp.add_argument("--no-legend", dest="legend", action="store_false",
                     help="PNG, SVG, PDF: leave out the legend of node and edge kinds below the graph")
    exp.add_argument("--no-caption", dest="caption", action="store_false",
                     help="PNG, SVG, PDF: leave out the caption above the graph (script, step, event)")
    exp.add_argument("--depth", type=non_negative_depth, default=None, metavar="LEVEL",
                     help="PNG, SVG, PDF: open module boxes down to this level, deeper ones drawn shut as one box "
                          f"each (0: each top-level module as one box; {ALL_OPEN}: every box open; default: the "
                          f"deepest level at which the graph fits two {PAPER_NAME} pages readably; a PDF too tall "
                          "for one page gets a page per part)")
    _add_animation_options(exp)
    _add_run_options(exp)


def _add_animation_options(exp: argparse.ArgumentParser) -> None:
    anim = exp.add_argument_group("animations (GIF, APNG; MP4, WebM with imageio-ffmpeg)",
                                  "the canvas as it changes, one frame per moment Step forward stops at")
    anim.add_argument("--from", dest="start", default=None, metavar="MOMENT",
                      help="the first event: its index, or backward:N / step:N for the start of the Nth "
                           "backward call or step (default: the run's first event)")
    anim.add_argument("--to", dest="end", default=None, metavar="MOMENT",
                      help="the last event: its index, or backward:N / step:N for the end of the Nth backward "
                           "call or step (default: the end of the first backward)")
    anim.add_argument("--fps", type=positive_scale, default=None, help="frames a second (default 4)")
    anim.add_argument("--max-frames", type=int, default=None, metavar="N",
                      help="at most this many frames, the moments sampled evenly beyond it (default 200)")
    anim.add_argument("--size", type=frame_size, default=None, metavar="WxH",
                      help="the frame's size in pixels (default 960x600)")
    anim.add_argument("--no-chart", dest="chart", action="store_false",
                      help="leave out the strip under the graph that charts the activations held over the "
                           "span, the frame's moment marked")


def _add_check(sub) -> None:
    chk = sub.add_parser("check", help="find autograd pitfalls in a script (recorded first) or a trace")
    chk.add_argument("source", help=f"a script (named {SCRIPT_SUFFIX}: recorded first) or a trace file (any other name)")
    chk.add_argument("--json", action="store_true", help="print machine-readable JSON")
    chk.add_argument("--fidelity", action="store_true",
                     help="instead: run the script plainly and recorded, and check that the recording changed "
                          "nothing (results, parameters, grads bit-identical) and that its graphs and saved "
                          "bytes are torch's own (exit 1 on any difference)")
    chk.add_argument("--measure", action="store_true",
                     help="re-record the script once per checkpoint suggestion, with --checkpoint, and print "
                          "the peak it measured (give the script itself: the script a trace names is never run)")
    _add_run_options(chk)


def _add_diff(sub) -> None:
    dif = sub.add_parser("diff", help="compare two graphs: two steps of one run, or two runs")
    dif.add_argument("source", help=f"a script (named {SCRIPT_SUFFIX}: recorded first) or a trace file (any other name)")
    dif.add_argument("other", nargs="?", help="a second script or trace (default: the same run)")
    dif.add_argument("--step-a", type=int, default=None, help="step of the first run (default: its last graph)")
    dif.add_argument("--step-b", type=int, default=None, help="step of the second run (default: its last graph)")
    _add_run_options(dif)


def _add_gradcheck(sub) -> None:
    gc_ = sub.add_parser("gradcheck", help="compare autograd's gradient of a leaf with finite differences")
    gc_.add_argument("script", help=f"the script to run (its name ends in {SCRIPT_SUFFIX})")
    gc_.add_argument("--tensor", required=True, help="the leaf, by the script's name for it (x, fc1.weight)")
    gc_.add_argument("--eps", type=float, default=1e-6, help="finite-difference step (default 1e-6)")
    gc_.add_argument("--tolerance", type=float, default=1e-4, help="largest relative error accepted (default 1e-4)")


def _add_info(sub) -> None:
    inf = sub.add_parser("info", help="summarize a trace file")
    inf.add_argument("trace")
    inf.add_argument("--json", action="store_true", help="print machine-readable JSON")
    inf.add_argument("--grads", action="store_true", help="list every named tensor's .grad values (shown by "
                                                          f"default when at most {GRAD_LINES} got one)")


def options_from_args(args: argparse.Namespace) -> RunOptions:
    options = RunOptions(
        retain_graph=args.retain_graph, create_graph=args.create_graph, detach_at=list(args.detach_at),
        grad_mode=args.grad_mode, accumulate=args.accumulate, device=args.device, steps=args.steps,
        args=list(getattr(args, "script_args", None) or []),
        checkpoint=list(args.checkpoint), autocast=args.autocast, save_on_cpu=args.save_on_cpu,
    )
    try:
        options.validate()
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return options


def record_to(script: str, output: str, options: RunOptions, timeout: float | None, echo: bool,
              script_args: list[str] | None = None, into: Run | RunTally | None = None) -> tuple[Run | RunTally, dict]:
    """Record ``script`` in a runner process into trace ``output``; returns ``into`` (by default a
    new :class:`RunTally`) with every event added, and the run's end.

    Every event goes to the trace as it comes (:class:`TraceWriter` flushes at each step end and
    every second, so a killed CLI loses at most the last second). With the default tally only
    counts stay in memory, so a run of any length records in bounded memory; pass a
    :class:`Run` to build the graph while recording (what an export needs anyway). On a
    write error the runner is stopped, what was written stays in ``output.partial`` and
    :class:`~graphview.core.files.WriteError` is raised; on a signal the trace is finished first,
    then :class:`~graphview.app.runner_client.Interrupted` is raised."""
    from graphview.app.runner_client import record

    check_script(script)
    argv = [script, *(options.args if script_args is None else script_args)]
    writer = TraceWriter(output, make_header(script=os.path.abspath(script), options=options.to_dict(), argv=argv))
    tally = RunTally() if into is None else into

    def on_event(event: dict) -> None:
        writer.write(event)
        tally.add(event)
        if echo and event["ev"] in ("stdout", "stderr"):
            # the script's own output, as ``python script.py`` shows it (colours and progress bars
            # included); a character the terminal cannot take (a lone surrogate) written as its escape
            stream = sys.stdout if event["ev"] == "stdout" else sys.stderr
            stream.write(writable(event["text"], stream))
            stream.flush()
        elif echo and event["ev"] == "output_capped":
            say(f"\ngraphview: note: the script wrote {event['bytes']} more characters to {shown(event['stream'])} than "
                f"graphview keeps ({OUTPUT_CAP}); they were neither shown nor recorded", file=sys.stderr)

    try:
        end = record(script, options, on_event, timeout=timeout, poll=writer.tick, script_args=script_args)
    except Interrupted as exc:
        writer.close()
        exc.detail = f"recorded {writer.count} events up to then to {output}"
        raise
    except BaseException:
        writer.abandon()
        raise
    writer.close()
    return tally, end


def record_cut(tally: RunTally, output: str):
    """The graph-cut finding of a recorded run, or None. Only a run in which no leaf that requires
    grad got a gradient can have one: only then is its trace read back to find the cut."""
    if tally.any_leaf_got_a_gradient:
        return None
    run, _ = load_run(output)
    return cut_finding(run)


def read_run(path: str) -> tuple[Run, list[str], dict]:
    """A trace's run, its warnings and its header; a trace with no readable event is refused."""
    from graphview.core.run import bulk_load
    from graphview.core.trace_pieces import TracePieces

    with bulk_load():
        # a piece at a time: only the run's compact form of the events read so far is kept
        pieces = TracePieces(path)
        run = Run()
        while not pieces.done:
            run.extend(pieces.next_piece())
        if not run.events:
            if pieces.warnings:
                raise UserError(f"{path} is damaged right after its header: no event in it could be read")
            raise UserError(f"{path} holds no events: the recording stopped before the script started")
        return run, pieces.warnings, pieces.header


def load_run(path: str) -> tuple[Run, list[str]]:
    run, warnings, _ = read_run(path)
    return run, warnings


def _up_to(run: Run) -> str:
    return "up to the error" if run.status in ("error", "crashed") else "up to where it stopped"


def describe_failure(run: Run | RunTally, end: dict) -> str:
    status = end.get("status")
    if status == "error" and run.errors:
        _, err = run.errors[-1]
        where = f" at line {err['line']}" if err.get("line") else ""
        if err.get("type") == "MemoryError" and err.get("limit"):  # graphview's own work ran out: not the script's bug
            return err["message"]
        if err.get("type") in ("SyntaxError", "IndentationError", "TabError"):
            return f"the script has a syntax error{where}: {shown(err['message'])}"
        return f"the script raised {shown(err['type'])}{where}: {shown(err['message'])}"
    return shown(end.get("message") or status or "the script failed")


def cmd_record(args: argparse.Namespace) -> int:
    options = options_from_args(args)
    run, end = record_to(args.script, args.output, options, args.timeout, echo=not args.quiet,
                         script_args=args.script_args)
    info = run.info()  # the tally's: the run itself is in the trace, not in memory
    summary = (f"wrote {args.output}: {info['events']} events, {info['ops']} ops, {info['nodes']} autograd nodes, "
               f"{info['backward_calls']} backward call{'' if info['backward_calls'] == 1 else 's'}")
    if end.get("status") == "ok":
        say(f"graphview: {summary}", file=sys.stderr)
        cut = record_cut(run, args.output)
        if cut is not None:  # the script ran, but nothing it trains got a gradient
            say(f"graphview: warning: {shown(cut.title)}: {shown(cut.explanation)}", file=sys.stderr)
        return EXIT_OK
    if not args.quiet:
        print_script_traceback(run)
    say(f"graphview: {describe_failure(run, end)} ({summary})", file=sys.stderr)
    return EXIT_SCRIPT_FAILED


def print_script_traceback(run: Run | RunTally) -> None:
    """The script's own traceback (its frames only), as Python would show it."""
    if not run.errors:
        return
    _, err = run.errors[-1]
    frames = err.get("traceback") or []
    if not frames:
        return
    say("Traceback of the script (most recent call last):", file=sys.stderr)
    for frame in frames:
        say(f'  File "{shown(frame["file"])}", line {shown(frame["line"])}, in {shown(frame["func"])}', file=sys.stderr)
        if frame.get("text"):
            say(f"    {shown(frame['text'])}", file=sys.stderr)
    say(f"{shown(err.get('type'))}: {shown_lines(err.get('message'))}", file=sys.stderr)


def cmd_export(args: argparse.Namespace) -> int:
    suffix = os.path.splitext(args.output)[1].lower()
    if suffix not in (*FORMATS, *IMAGE_SUFFIXES, *ANIMATION_SUFFIXES, *WEB_SUFFIXES):
        raise UserError(f"cannot tell the export format from {args.output!r}: "
                        f"use one of {', '.join(export_suffixes())}")
    check_writable(args.output)
    run, warnings = _run_from(args)
    for w in warnings:
        say(f"graphview: warning: {shown(w)}", file=sys.stderr)
    if run.failed and not (run.tensor_nodes or run.op_nodes):
        say(f"graphview: {shown(run.failure_headline())} before anything was recorded; nothing written to {args.output}",
            file=sys.stderr)
        return EXIT_SCRIPT_FAILED
    animated = (args.start, args.end, args.fps, args.max_frames, args.size) != (None,) * 5 or not args.chart
    if animated and suffix not in ANIMATION_SUFFIXES:
        say(f"graphview: note: --from, --to, --fps, --max-frames, --size and --no-chart apply to animations only "
            f"({', '.join(s[1:].upper() for s in ANIMATION_SUFFIXES)})", file=sys.stderr)
    if suffix in ANIMATION_SUFFIXES:
        fmt = _export_animation(run, args)
    elif suffix in WEB_SUFFIXES:
        from graphview.app.gui import qt_app
        from graphview.qt.web_page import write_web_page

        qt_app()  # the window's canvas, offscreen, says where the page's Step and Back go
        moments = write_web_page(run, args.output)
        fmt = f"a web page that steps through {moments} moments"
    elif suffix in IMAGE_SUFFIXES:
        from graphview.app.gui import qt_app
        from graphview.qt.export import MAX_PIXELS, render_run

        qt_app()
        scale = DEFAULT_SCALE if args.scale is None else args.scale
        notes: list[str] = []
        used = render_run(run, args.output, at=args.at, scale=scale, caption=args.caption, legend=args.legend,
                          depth=args.depth, notes=notes)
        for note in notes:
            say(f"graphview: note: {shown(note)}", file=sys.stderr)
        if suffix != ".png" and args.scale is not None:
            say(f"graphview: note: --scale applies to PNG only; {suffix[1:].upper()} is a vector image",
                file=sys.stderr)
        elif suffix == ".png" and used is not None and used < scale:
            say(f"graphview: note: used scale {used:.3g} instead of {scale:g}: the PNG would have been larger "
                f"than {MAX_PIXELS} pixels on a side", file=sys.stderr)
        fmt = suffix[1:]
    else:
        if not (args.legend and args.caption) or args.depth is not None:
            say("graphview: note: --no-legend, --no-caption and --depth apply to pictures only (PNG, SVG, PDF)",
                file=sys.stderr)
        fmt = export_graph(run, args.output, at=args.at)
    what = fmt if suffix in ANIMATION_SUFFIXES or suffix in WEB_SUFFIXES else (
        f"the {fmt.upper()} graph" + (f" at event {args.at}" if args.at is not None else ""))
    if run.failed:
        say(f"graphview: {shown(run.failure_headline())}; wrote {what} recorded {_up_to(run)} to {args.output}",
            file=sys.stderr)
        return EXIT_SCRIPT_FAILED
    say(f"graphview: wrote {what} to {args.output}", file=sys.stderr)
    return EXIT_OK


def _export_animation(run, args: argparse.Namespace) -> str:
    from graphview.app.export_progress import FrameProgress
    from graphview.app.gui import qt_app
    from graphview.qt.animation import DEFAULT_FPS, DEFAULT_MAX_FRAMES, DEFAULT_SIZE, AnimationOptions, render_animation

    qt_app()
    options = AnimationOptions(start=args.start, end=args.end, fps=args.fps or DEFAULT_FPS,
                               max_frames=args.max_frames or DEFAULT_MAX_FRAMES, size=args.size or DEFAULT_SIZE,
                               chart=args.chart)
    progress = FrameProgress(sys.stderr)  # (37 s for 200 frames of a Llama backward: said as it goes)
    try:
        frames, first, last = render_animation(run, args.output, options, progress)
    finally:
        progress.close()
    return f"a {os.path.splitext(args.output)[1][1:].upper()} animation of {frames} frames, events {first} to {last},"


def _bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{n} B"


def cmd_info(args: argparse.Namespace) -> int:
    """Exit 0 whenever the trace could be read (its ``status:`` line says how the script ended)."""
    run, warnings, header = read_run(args.trace)
    info = _info_data(run, warnings, header)
    if args.json:
        say(json.dumps(info, indent=2))
        return EXIT_OK
    for w in warnings:
        say(f"graphview: warning: {shown(w)}", file=sys.stderr)
    _say_info_answers(run, info, header)
    _say_info_details(run, info, args.grads)
    return EXIT_OK


def _info_data(run: Run, warnings: list[str], header: dict) -> dict:
    """What ``info`` says of a run: the run's own summary, with what the trace's header adds."""
    info = run.info()
    if not info["script"]:
        info["script"] = header.get("script")
    start = run.start or {}
    info["argv"] = start.get("argv") or header.get("argv")
    info["rank"] = start.get("rank", header.get("rank"))
    info["world_size"] = start.get("world_size", header.get("world_size"))
    info["warnings"] = warnings
    info["held_for_backward"] = _held_data(run)
    return info


def _say_info_answers(run: Run, info: dict, header: dict) -> None:
    """The answers first: how the run ended, its steps, what backward held at the peak and where."""
    start = run.start or {}
    mode = f" ({info['mode']} script)" if run.start is not None else ""
    if info["mode"] == "inprocess":
        mode = " (recorded in-process by graphview.record())"
    say(f"script:          {shown(info['script'] or 'unknown')}{mode}")
    if info["argv"] and len(info["argv"]) > 1:
        say(f"arguments:       {shown(args_text(list(map(str, info['argv'][1:]))))}")
    label = rank_label(header, start)
    if label:
        say(f"process:         {shown(label)} (a distributed job: each rank has its own trace)")
    say(f"status:          {shown(info['status'])}" + (f" (exit code {info['exit_code']})" if info["exit_code"] else ""))
    if info["warnings"]:
        say(f"trace:           damaged or cut off: summarized the {info['events']} events before the damage")
    say(f"steps:           {_steps_text(run)}")
    for line in _memory_answer_lines(run):
        say(line)
    if info["errors"]:
        for err in info["errors"]:
            where = f"line {err['line']}: " if err.get("line") else ""
            say(f"error:           {where}{shown(str(err['type']))}: {shown(str(err['message']))}")
    else:
        say("errors:          none")


def _say_info_details(run: Run, info: dict, all_grads: bool) -> None:
    """Then the details: versions, options, counts, peaks, and the gradients (``all_grads``: every one)."""
    say(f"torch:           {shown(info['torch'] or 'unknown')}")
    opts = RunOptions.from_dict(info["options"] or {})
    say(f"options:         {shown(opts.label())}")
    for label, key in (("events", "events"), ("ops", "ops"), ("autograd nodes", "nodes"), ("tensors", "tensors"),
                       ("saved tensors", "saved_tensors"), ("backward calls", "backward_calls"),
                       ("optimizer steps", "optimizer_steps")):
        say(f"{label + ':':<17}{info[key]}")
    for line in _most_held_lines(run, info):
        say(line)
    graded = [(run.tensor_name(tid), entries) for tid, entries in sorted(run.grads.items())]
    graded = [(name, entries) for name, entries in graded if name and entries]
    if all_grads or len(graded) <= GRAD_LINES:
        for name, entries in graded:
            say(f"grad {shown(name)}: " + " -> ".join(summary_text(e.value, 8) for e in entries))
    else:
        say(f"gradients:       {len(graded)} named tensors got a .grad (--grads lists each)")


#: ``info`` lists each tensor's gradients when there are at most this many (a lesson's w and b)
GRAD_LINES = 8


def _held_data(run: Run) -> dict | None:
    """``info --json``'s memory answer: the peak of activations held for backward, what else is
    held then, and the modules holding the most."""
    from graphview.core.held import activation_peak
    from graphview.core.memory_report import modules_at

    peak = activation_peak(run)
    if peak is None:
        return None
    return {"device": peak.device, "at": peak.at, "activations": peak.held.activations, "weights": peak.held.weights,
            "inputs": peak.held.inputs,
            "modules": [{"path": m.path, "type": m.types, "count": m.count, "activations": m.held.activations,
                         "weights": m.held.weights, "recomputed": m.recomputed} for m in modules_at(run, peak)]}


def _steps_text(run: Run) -> str:
    if not run.steps:
        return "none (a plain script: no step() calls)"
    times = [s["seconds"] for s in run.steps if "seconds" in s]
    text = str(len(run.steps))
    if times:
        text += f", {sum(times) / len(times):.2f} s a step recorded (recording included)"
    return text


def _memory_answer_lines(run: Run) -> list[str]:
    """The peak of activations held for backward, with the weights and inputs held anyway, and the
    modules that hold the most of it."""
    from graphview.core.held import activation_peak
    from graphview.core.memory_report import modules_at

    peak = activation_peak(run)
    if peak is None:
        return ["held for backward: no activations saved for backward"]
    step = next((s["step"] for s in run.steps if s["start"] <= peak.at <= (s["end"] if s["end"] is not None else peak.at)), None)
    where = f"{shown(peak.device)}, event {peak.at}" + (f", step {step}" if step is not None else "")
    lines = [f"held for backward at the peak ({where}):", f"                 {_bytes(peak.held.total)}: {peak.held.split_text()}"]
    modules = modules_at(run, peak)
    if modules:
        lines.append("most activations, by module:")
        lines += [f"  {shown(m.text())}" for m in modules]
    return lines


def _most_held_lines(run: Run, info: dict) -> list[str]:
    """The most held for backward at any one moment (activations, weights and inputs together), per
    device and per step, where it is not what the first lines said: at the activations' peak the
    weights and inputs may be fewer than at another moment (or on another device)."""
    from graphview.core.held import activation_peak

    peak = activation_peak(run)
    lines = []
    for device, most in sorted(info["peak_saved_bytes"].items()):
        said = peak is not None and peak.device == device
        if most and not (said and most == peak.held.total):
            later = ", more than at the activations' peak" if said else ""
            lines.append(f"most held for backward at once ({shown(device)}): {_bytes(most)} ({most} bytes), "
                         f"weights and inputs included{later}")
    if len(info["peak_per_step"]) > 1:
        lines.append("most held for backward at once in each step, weights and inputs included:")
        for step in info["peak_per_step"]:
            parts = ", ".join(f"{shown(d)} {_bytes(v)}" for d, v in sorted(step["peak"].items())) or "0 B"
            lines.append(f"  step {step['step']}: {parts}")
    return lines


def _run_from(args: argparse.Namespace) -> tuple[Run, list[str]]:
    """The run of ``args.source``: a script (named ``.py``) recorded now, or any other file read as a
    trace (never run, whatever it holds)."""
    if not os.path.exists(args.source):
        raise UserError(f"no such file: {args.source}")
    if is_trace(args.source):
        try:
            return load_run(args.source)
        except TraceError as exc:
            if args.source.endswith(SUFFIX) or os.path.isdir(args.source):
                raise
            raise TraceError(f"{exc}; graphview runs only scripts named {SCRIPT_SUFFIX}") from None
    options = options_from_args(args)
    with tempfile.TemporaryDirectory(prefix="graphview-") as tmp:
        run, _ = record_to(args.source, os.path.join(tmp, "run" + SUFFIX), options, args.timeout, echo=False,
                           script_args=getattr(args, "script_args", None), into=Run())
    return run, []


def measure_checkpointed(run: Run, args: argparse.Namespace, pattern: str) -> Run | None:
    """The run re-recorded with ``pattern`` checkpointed as well. Only the script the user named
    (``args.source``) is re-recorded, with the options and arguments the user gave: never the
    script a trace names (``graphview check`` refuses ``--measure`` of a trace)."""
    if not is_script(args.source):
        raise ValueError(f"--measure re-records a script, not the trace {args.source}")
    base = options_from_args(args)
    options = dataclasses.replace(base, checkpoint=[*base.checkpoint, pattern])
    with tempfile.TemporaryDirectory(prefix="graphview-") as tmp:
        trace = os.path.join(tmp, "run" + SUFFIX)
        record_to(args.source, trace, options, args.timeout, echo=False, script_args=options.args)
        after, _ = load_run(trace)
    return after


def cmd_check(args: argparse.Namespace) -> int:
    from graphview.core.diagnostics import diagnose

    if args.fidelity:
        return _fidelity_check(args)
    if args.measure and not is_script(args.source):
        raise UserError(measure_needs_script(args.source))
    run, warnings = _run_from(args)
    for w in warnings:
        say(f"graphview: warning: {shown(w)}", file=sys.stderr)
    findings = diagnose(run)
    if args.json:
        say(json.dumps({"findings": [f.to_dict() for f in findings], "suggestions": suggestions_data(run, args, measure_checkpointed)},
                         indent=2))
    else:
        script = (run.start or {}).get("script") or args.source
        for f in findings:
            where = f"{shown(os.path.basename(script))}:{f.line}: " if f.line else ""
            say(f"{where}{shown(f.title)} [{shown(f.code)}]")
            say(f"    {shown(f.explanation)}")
            say(f"    fix: {shown(f.fix)}")
        print_suggestions(run, args, measure_checkpointed)
        if findings or not run.nothing_checked():  # a run that failed before backward is no clean bill
            say(f"graphview: {len(findings) or 'no'} autograd pitfall{'' if len(findings) == 1 else 's'} found",
                file=sys.stderr)
    if run.nothing_checked() and not findings:
        say_wrapped(f"graphview: {shown(run.nothing_checked())}", file=sys.stderr)
    elif run.failed:
        say_wrapped(f"graphview: {shown(run.failure_headline())}; checked what was recorded {_up_to(run)}",
                    file=sys.stderr)
    return EXIT_SCRIPT_FAILED if findings or run.failed else EXIT_OK


def measure_needs_script(source: str) -> str:
    """Why ``check --measure`` refuses a trace: it re-records a script, and graphview runs no script that a
    trace names (whoever wrote the trace chose it and its arguments). Says which one this trace names."""
    named = ""
    try:
        from graphview.core.trace import open_trace_file, parse_header

        with open_trace_file(source) as f:
            header = parse_header(f.readline(64 * 1024), source)
        if header.get("script"):
            argv = header.get("argv") if isinstance(header.get("argv"), list) else []
            named = f" (this trace names {shown(args_text([header['script'], *map(str, argv[1:])]))})"
    except (TraceError, OSError):
        pass
    return (f"check --measure re-records a script, and graphview never runs the script a trace names: pass the "
            f"script itself, as graphview check SCRIPT{SCRIPT_SUFFIX} --measure [-- ARGS]{named}")


def _fidelity_check(args: argparse.Namespace) -> int:
    from graphview.core.isolated import graphview_command

    if not is_script(args.source):
        raise UserError(f"--fidelity runs the script twice: give a script (named {SCRIPT_SUFFIX}), not a trace")
    check_script(args.source)
    options = options_from_args(args)  # the script's arguments too: both runs get them
    command = graphview_command("graphview.capture.fidelity", args.source, "--options", json.dumps(options.to_dict()))
    return EXIT_OK if subprocess.call(command) == 0 else EXIT_SCRIPT_FAILED


def cmd_diff(args: argparse.Namespace) -> int:
    from graphview.core.diff import describe, diff, step_index

    run_a, _ = _run_from(args)
    if args.other:
        second = argparse.Namespace(**vars(args))
        second.source = args.other
        run_b, _ = _run_from(second)
    else:
        run_b = run_a
        if args.step_a is None or args.step_b is None:
            raise UserError("to compare two steps of one run, give --step-a and --step-b (and --steps for a script)")
    try:
        index_a = step_index(run_a, args.step_a) if args.step_a is not None else None
        index_b = step_index(run_b, args.step_b) if args.step_b is not None else None
    except ValueError as exc:
        raise UserError(str(exc)) from None
    result = diff(run_a, index_a, run_b, index_b)
    for sig, count in sorted(result.removed.items(), key=str):
        say(f"- {shown(describe(sig))}" + (f" ×{count}" if count > 1 else ""))
    for sig, count in sorted(result.added.items(), key=str):
        say(f"+ {shown(describe(sig))}" + (f" ×{count}" if count > 1 else ""))
    if run_b is not run_a:
        print_comparison(run_a, run_b)
    say(f"graphview: {sum(result.removed.values())} nodes removed, {sum(result.added.values())} added, "
        f"{result.same} the same", file=sys.stderr)
    failed = [run for run in ((run_a,) if run_b is run_a else (run_a, run_b)) if run.failed]
    for run in failed:
        say_wrapped(f"graphview: {shown(run.failure_headline())}; compared what was recorded {_up_to(run)}",
                    file=sys.stderr)
    return EXIT_SCRIPT_FAILED if failed else EXIT_OK


def cmd_gradcheck(args: argparse.Namespace) -> int:
    from graphview.app.runner_client import gradient_check

    check_script(args.script)
    result, end = gradient_check(args.script, args.tensor, args.eps)
    if result is None:
        raise UserError(f"gradient check failed: {shown(end.get('message') or end.get('status'))}")
    say(f"gradient of the first backward's loss with respect to {shown(result['tensor'])} "
        f"(shape {shown(result['shape'])}), float64:")
    say(f"{'element':>8}  {'autograd':>16}  {'finite differences':>18}")
    for i, (a, n) in enumerate(zip(result["autograd"], result["numeric"])):
        say(f"{i:>8}  {a:>16.8g}  {n:>18.8g}")
    ok = result["max_rel_error"] <= args.tolerance
    say(f"graphview: largest relative error {result['max_rel_error']:.3g} "
        f"({'within' if ok else 'ABOVE'} {args.tolerance:g})", file=sys.stderr)
    return EXIT_OK if ok else EXIT_SCRIPT_FAILED


def cmd_samples(args: argparse.Namespace) -> int:
    """The bundled samples, where this graphview finds them (a checkout's sample_models/, or the copy
    an installed wheel holds), to pass to record, export or the app."""
    samples = bundled_samples()
    if not samples:
        say("graphview: no bundled samples found (this installation lacks sample_models/)", file=sys.stderr)
        return EXIT_BAD_INPUT
    for path in samples:
        say(path)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    script_args: list[str] = []
    if "--" in argv:  # what follows goes to the script's sys.argv, as after ``python script.py``
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1:]
    if not argv or (argv[0] not in ("record", "export", "info", "check", "diff", "gradcheck", "samples", "-h", "--help")
                    and not argv[0].startswith("-")):
        if len(argv) > 1:
            say(f"graphview: unknown command {argv[0]!r} (see graphview --help)", file=sys.stderr)
            return EXIT_BAD_INPUT
        if argv and not os.path.exists(argv[0]):  # before the GUI's own checks (a display)
            say(f"graphview: no such file: {argv[0]}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if argv and os.path.isdir(argv[0]):
            say(f"graphview: {argv[0]} is a folder; give a script (.py) or a trace ({SUFFIX})", file=sys.stderr)
            return EXIT_BAD_INPUT
        from graphview.app.gui import main as gui_main

        if script_args and not (argv and argv[0].endswith(".py")):
            say("graphview: arguments after -- go to a script: give a script (.py), not a trace", file=sys.stderr)
            return EXIT_BAD_INPUT
        return gui_main(argv[0] if argv else None, script_args)
    args = parser.parse_args(argv)
    args.script_args = script_args
    handler = {"record": cmd_record, "export": cmd_export, "info": cmd_info, "check": cmd_check, "diff": cmd_diff,
               "gradcheck": cmd_gradcheck, "samples": cmd_samples}[args.command]
    try:
        # no output may replace a file this command reads (record x.py -o x.py)
        with reading(*(p for p in (getattr(args, name, None) for name in ("script", "source", "other", "trace")) if p)):
            code = handler(args)
            sys.stdout.flush()  # here, where a reader that has gone is noticed (not in Python's flush at exit)
            return code
    except WriteError as exc:  # a full disk: before UserError, TraceError and ExportError, its bases
        say(f"graphview: {shown(exc)}", file=sys.stderr)
        return EXIT_SCRIPT_FAILED
    except (UserError, TraceError, ExportError) as exc:
        say(f"graphview: {shown(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Interrupted as exc:
        what = exc.detail or "nothing was written"
        say(f"graphview: interrupted ({shown(exc)}): the script was stopped; {shown(what)}", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        say("graphview: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # graphview info TRACE | head: the reader of the output has gone
        quiet_stdout()
        return EXIT_BROKEN_PIPE


#: what a command whose output went to a reader that left (``| head``) exits with: a shell's status
#: for a process ended by SIGPIPE, though graphview ends quietly instead
EXIT_BROKEN_PIPE = 128 + 13


def quiet_stdout() -> None:
    """Point standard output at /dev/null: what is still buffered for a reader that has gone is
    dropped, and Python's flush at exit has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # (a stdout with no file behind it: nothing to flush into)
        pass


if __name__ == "__main__":
    sys.exit(main())
