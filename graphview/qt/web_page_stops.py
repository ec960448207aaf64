"""Where the web page's Step (→) and Back (←) go: past what the window draws nothing at, as the
window's → and ← do (:mod:`graphview.qt.canvas.first_drawn`: to the nearest moment that draws
something or where the script failed, at most 2,000 moments on, never across a backward call),
worked out once when the page is written, so the page's script only looks the answer up.

The window opens a model with its module boxes shut, and a model's constructor runs ops (a 2-layer
GPT-2's: about 60 stops) whose tensors wait in the model's shut box for the forward that uses
them: the canvas draws nothing there, and → goes from the start to the first op that draws
something in one press. The page draws every node flat, with no box, so there the parameters show
one by one as they are made; its Step and Back pass over the same stops as the window, which
decides what it draws at each with its boxes shut as a picture export shuts them. Where the window
draws something, Step and Back go moment by moment, as ever; a big run (the window draws only what
is near its view) goes moment by moment throughout, as the window's does.
"""

from __future__ import annotations

from bisect import bisect_right

from PySide6.QtWidgets import QApplication

from graphview.core import timeline
from graphview.core.export import default_fits
from graphview.core.run import Run
from graphview.qt.canvas import GraphScene, first_drawn, region


def moment_skips(run: Run, moments: list[int], nodes: list[dict]) -> dict[str, list[list[int]]]:
    """Where Step (``"step"``) and Back (``"back"``) go from each of ``moments`` (event indices)
    where that is not the next or the previous moment: pairs ``[from, to]`` of moment numbers.
    ``nodes`` are the page's nodes (their ``kind``, ``born``, ``dead``). Needs a QApplication."""
    drawn = window_draws(run, moments, nodes)
    skips: dict[str, list[list[int]]] = {"step": [], "back": []}
    if all(drawn):
        return skips
    # where the script failed is a moment to land on, drawn or not
    lands = [drawn[k] or first_drawn.is_error(run, at) for k, at in enumerate(moments)]
    last = len(moments) - 1
    for name, way in (("step", 1), ("back", -1)):
        nearest = _nearest_landing(lands, way)
        for k in range(len(moments)):
            one = min(max(k + way, 0), last)
            start = k if not drawn[k] else one if not lands[one] else None
            if start is None:
                continue  # from a moment that draws something to one to land on: one moment
            found = nearest[start]
            if found is not None and abs(found - start) > first_drawn.PROBED_STOPS:
                found = start + way * first_drawn.PROBED_STOPS  # as far as the window looks: it lands there
            if found is None or not _within(run, moments, start, found, way):
                found = one
            if found != one:
                skips[name].append([k, found])
    return skips


def _within(run: Run, moments: list[int], start: int, found: int, way: int) -> bool:
    """Moment ``found`` is reached from ``start`` without crossing a backward call: forward, not
    past the next one's start; back, not before the last one's end."""
    if way > 0:
        return moments[found] <= timeline.next_backward(run, moments[start])
    return moments[found] >= first_drawn.last_backward_end(run, moments[start])


def _nearest_landing(lands: list[bool], way: int) -> list[int | None]:
    """For each moment, the nearest one after it (``way`` 1) or before it (-1) to land on, or the
    last (the first) moment where there is none; None at the last (the first)."""
    found: list[int | None] = [None] * len(lands)
    order = range(len(lands) - 1, -1, -1) if way > 0 else range(len(lands))
    following = None
    for k in order:
        found[k] = following
        following = k if lands[k] or following is None else following
    return found


def window_draws(run: Run, moments: list[int], nodes: list[dict]) -> list[bool]:
    """Whether the window's canvas draws a node or a module box at each of ``moments``.

    Where the page draws no node, the window draws nothing; where the page draws an autograd node,
    the window draws it or the box it is in (its module has run). A shut box hides the tensors in
    it (a constructor's parameters) until its module's first autograd node is born: so, before the
    run's first autograd node, where the page draws only tensors, a scene is moved there to look;
    later, and in a run with no autograd node (every box's tensors shown), what the page draws the
    window draws too. True throughout for a big run (as the window, which draws only what is near
    its view, takes it: one stop at a time)."""
    if len(nodes) > region.VIRTUAL_ABOVE:
        return [True] * len(moments)
    ops = [n for n in nodes if n["kind"] == "op"]
    shown, ops_shown = _shown_counts(moments, nodes), _shown_counts(moments, ops)
    drawn = [count > 0 for count in shown]
    first_op = min((n["born"] for n in ops), default=-1)
    scene = None
    for k, at in enumerate(moments):
        if at >= first_op or ops_shown[k] or not shown[k]:
            continue
        if scene is None:
            scene = _scene(run)
        scene.set_cursor(at)
        drawn[k] = first_drawn.draws_anything(scene)
    return drawn


def _shown_counts(moments: list[int], nodes: list[dict]) -> list[int]:
    """How many of ``nodes`` the page shows at each of ``moments``: born, and not yet dead."""
    born = sorted(n["born"] for n in nodes if n["dead"] < 0 or n["dead"] > n["born"])
    dead = sorted(n["dead"] for n in nodes if n["dead"] > n["born"])
    return [bisect_right(born, at) - bisect_right(dead, at) for at in moments]


def _scene(run: Run) -> GraphScene:
    """The window's canvas of the finished ``run``, its boxes shut as a picture export shuts them."""
    if QApplication.instance() is None:  # (a scene without one crashes the process)
        raise RuntimeError("the web page is written with a QApplication running: the window's canvas "
                           "says where its Step and Back go")
    scene = GraphScene()
    scene.set_run(run)
    scene.set_cursor(0)
    scene.boxes.shut_to_fit(default_fits)
    return scene
