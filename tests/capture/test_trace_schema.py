"""Every event the recorder writes passes the schema the trace reader enforces (a new kind or
field of the recorder goes into ``graphview.core.events.SCHEMA``)."""

from __future__ import annotations

import json

import pytest

from graphview.core.events import EventChecker
from tests.conftest import ROOT, SAMPLES

# the bundled samples and the real-model zoo
SCRIPTS = sorted(SAMPLES.glob("*/*.py")) + sorted(p for p in (ROOT / "tests" / "zoo").glob("*.py")
                                                  if not p.name.startswith(("_", "test")))


@pytest.mark.parametrize("path", SCRIPTS, ids=[f"{p.parent.name}/{p.stem}" for p in SCRIPTS])
def test_every_sample_recording_passes_the_schema(path):
    from graphview.capture.script import run_script
    from graphview.core.options import RunOptions

    events: list[dict] = []
    run_script(str(path), events.append, RunOptions(steps=2))
    checker = EventChecker()
    for event in events:
        checker.check(json.loads(json.dumps(event)))  # as a trace file holds it


def test_capped_output_passes_the_schema(write_script):
    from graphview.capture.script import run_script

    events: list[dict] = []
    run_script(write_script("print('x' * 1100000)\n"), events.append)
    assert any(e["ev"] == "output_capped" for e in events)
    checker = EventChecker()
    for event in events:
        checker.check(event)


def test_an_error_event_takes_only_the_failed_ops_three_fields_each_of_its_type():
    """The recorder notes an op that raised on the exception (``_graphview_op``): the error event
    takes its op, inputs and module only, and none whose type is wrong (the script may set the
    attribute itself)."""
    from graphview.capture.script import error_event

    good = RuntimeError("shapes")
    good._graphview_op = {"op": "linear", "inputs": [3, 4], "module": "model.2", "ev": "run_end", "type": "X"}
    event = error_event(good, "/nowhere/script.py")
    assert (event["ev"], event["type"], event["op"], event["inputs"], event["module"]) == \
        ("error", "RuntimeError", "linear", [3, 4], "model.2")
    for hostile in ({"op": 5, "inputs": [1]}, {"op": "mm", "inputs": ["1"]}, {"op": "mm", "inputs": [1], "module": 7},
                    {"op": "mm", "inputs": (1,)}):
        bad = RuntimeError("x")
        bad._graphview_op = hostile
        assert not {"op", "inputs", "module"} & set(error_event(bad, "/nowhere/script.py")), hostile
