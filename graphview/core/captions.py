"""What an exported picture says under its title, and the file names graphview suggests.

``caption(run, 120)`` is ``"transformer_block.py · step 1 of 3 · event 120 of 1491: line 30: linear ..."``,
``file_stem(run, 120)`` is ``"transformer_block-step1-event120"``: both name the script, the
training step and the event a picture shows, so a folder of exports reads like the timeline.
"""

from __future__ import annotations

import os
import re

from graphview.core import timeline
from graphview.core.event_words import describe
from graphview.core.held import held_at
from graphview.core.run import Run


#: the file of a notebook cell as a kernel names it (see :func:`graphview.core.timeline.program_name`)
NOTEBOOK_CELL = timeline.NOTEBOOK_CELL


def script_name(run: Run) -> str:
    """The file name of the run's script (``transformer_block.py``); for a recording in a notebook
    (``graphview.record()``), the notebook's name (``train.ipynb``), else ``"notebook"``, never the
    kernel's temporary file of a cell; ``""`` when the run has no start."""
    return timeline.program_name(run.start or {})


def step_at(run: Run, index: int) -> int | None:
    """The number of the training step event ``index`` belongs to; None outside every step."""
    for step in run.steps:
        end = step["end"] if step["end"] is not None else len(run.events)
        if step["start"] <= index <= end:
            return step["step"]
    return None


def steps_planned(run: Run) -> int | None:
    """How many steps a step script's run was given (``--steps``, the app's Run options); None for
    any other run, or where the trace's count is no whole number at least as large as every step
    number it holds."""
    start = run.start or {}
    options = start.get("options") if start.get("mode") == "step" else None
    planned = options.get("steps") if isinstance(options, dict) else None
    if type(planned) is not int or planned < 1 or any(step["step"] > planned for step in run.steps):
        return None
    return planned


def caption(run: Run, index: int) -> str:
    """Script · step (of how many a step script was given) · event and what happened there, and
    what backward holds then, in one line."""
    parts = [script_name(run) or "graphview run"]
    step = step_at(run, index)
    if step is not None:
        planned = steps_planned(run)
        parts.append(f"step {step} of {planned}" if planned else f"step {step}")
    if 0 <= index < len(run.events):
        parts.append(f"event {index} of {len(run.events) - 1}: {describe(run, index)}")
        held = held_at(run, index)
        if held.total:
            parts.append(held.text())
    return " · ".join(parts)


def file_stem(run: Run | None, index: int | None = None, fallback: str = "graph") -> str:
    """A file name without suffix: the script's name, then its step and event when ``index`` is given."""
    name = os.path.splitext(script_name(run))[0] if run is not None else ""
    name = re.sub(r"[^\w.-]+", "_", name).strip("._") or fallback
    if run is None or index is None or not 0 <= index < len(run.events):
        return name
    step = step_at(run, index)
    return f"{name}-step{step}-event{index}" if step is not None else f"{name}-event{index}"
