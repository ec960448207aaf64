"""Showing an in-process recording: the CLI's own drawing of it, and the app opened on it.

Both run graphview's command line in a process of its own, so the program that recorded (a
notebook's kernel, a training script) never loads Qt, and the picture is exactly the one
``graphview export run.gvtrace -o graph.svg`` draws.
"""

from __future__ import annotations

import html
import os
import subprocess
import tempfile

from graphview.core.isolated import graphview_command
from graphview.core.text import visible, xml_text


def _cli(*args: str) -> list[str]:
    """``python -m graphview.app.cli ARGS``, isolated: nothing in the notebook's folder (the kernel's
    current folder) is imported (:mod:`graphview.core.isolated`)."""
    return graphview_command("graphview.app.cli", *args)


def export_svg(trace: str, timeout: float = 120) -> str:
    """The SVG text of the trace's graph (``graphview export TRACE -o graph.svg``): well-formed XML
    whatever the names in the trace hold (docs/safety.md)."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    with tempfile.TemporaryDirectory(prefix="graphview-") as folder:
        out = os.path.join(folder, "graph.svg")
        done = subprocess.run(_cli("export", trace, "-o", out), capture_output=True, text=True, env=env,
                              timeout=timeout, stdin=subprocess.DEVNULL)
        if not os.path.exists(out):
            reason = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
            raise RuntimeError(f"graphview could not draw {trace}: {visible(reason)}")
        with open(out, encoding="utf-8", errors="replace") as f:
            # already well-formed (graphview.qt.export.svg_text); checked again, since a notebook
            # puts it inline into its page
            return xml_text(f.read())


def export_web_page(trace: str, timeout: float = 120) -> str:
    """The web page player of the trace (``graphview export TRACE -o run.html``), as text (the
    window's canvas, offscreen, says where its Step and Back go)."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    with tempfile.TemporaryDirectory(prefix="graphview-") as folder:
        out = os.path.join(folder, "run.html")
        done = subprocess.run(_cli("export", trace, "-o", out), capture_output=True, text=True, timeout=timeout,
                              env=env, stdin=subprocess.DEVNULL)
        if not os.path.exists(out):
            reason = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
            raise RuntimeError(f"graphview could not write the page of {trace}: {visible(reason)}")
        with open(out, encoding="utf-8", errors="replace") as f:
            return f.read()


class Player:
    """A notebook cell's inline player: the web page in a sandboxed frame of its own (its script
    runs there, apart from the notebook's page and every other output; nothing is fetched)."""

    HEIGHT = 640

    def __init__(self, page: str) -> None:
        self.html = page

    def _repr_html_(self) -> str:
        source = html.escape(self.html, quote=True)
        return (f'<iframe sandbox="allow-scripts" srcdoc="{source}" style="width:100%;height:{self.HEIGHT}px;'
                'border:1px solid #d0d4da" title="graphview player"></iframe>')


def open_in_app(trace: str) -> subprocess.Popen:
    """Start the graphview app on the trace; it lives on after the program that started it."""
    return subprocess.Popen(_cli(trace), stdin=subprocess.DEVNULL, start_new_session=True)
