"""A recording made in a notebook is captioned with the notebook's name, never the kernel's
temporary file of a cell (``35464209.py``)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

from graphview.core.captions import caption, file_stem, script_name
from graphview.core.run import Run


def started(**start) -> Run:
    return Run([{"ev": "run_start", **start}])


def test_a_notebook_run_is_named_by_its_notebook_or_as_a_notebook():
    cell = "/tmp/ipykernel_35464/35464209.py"
    assert script_name(started(script=cell, notebook="train.ipynb")) == "train.ipynb"
    assert script_name(started(script=cell, notebook="")) == "notebook"
    assert script_name(started(script=cell)) == "notebook"  # a trace from before notebooks said their name
    assert script_name(started(script="<ipython-input-3-1f2e>")) == "notebook"
    assert script_name(started(script="/home/u/35464209.py")) == "35464209.py"  # a real script of that name
    run = started(script=cell, notebook="")
    assert "35464209" not in caption(run, 0) and caption(run, 0).startswith("notebook")
    assert file_stem(started(script=cell, notebook="train.ipynb")) == "train"


def test_the_recorder_asks_the_kernel_for_the_notebooks_name(monkeypatch):
    from graphview.capture import inprocess

    def kernel(**names):
        monkeypatch.setitem(sys.modules, "IPython",
                            SimpleNamespace(get_ipython=lambda: SimpleNamespace(user_ns=names)))

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    kernel(__session__="/home/u/work/train.ipynb")
    assert inprocess.notebook_name() == "train.ipynb"
    kernel(__vsc_ipynb_file__="/home/u/vs/explore.ipynb")
    assert inprocess.notebook_name() == "explore.ipynb"
    kernel(__session__="3f2a-uuid")  # not a notebook's path
    assert inprocess.notebook_name() is None
    monkeypatch.setenv("JPY_SESSION_NAME", "/srv/notebooks/lab.ipynb")
    assert inprocess.notebook_name() == "lab.ipynb"
    # the run's start says it, and the caption uses it
    recording = inprocess.Recording.__new__(inprocess.Recording)
    recording.script, recording.options, recording.rank = "/tmp/ipykernel_1/35464209.py", inprocess.RunOptions(), None
    start = recording._run_start()
    assert start["notebook"] == "lab.ipynb" and "argv" not in start
    assert script_name(Run([start])) == "lab.ipynb"
