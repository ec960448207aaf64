"""The streaming tally ``graphview record`` keeps instead of the run: the same summary as the Run."""

from __future__ import annotations

import glob

import pytest

from graphview.core.cuts import any_leaf_got_a_gradient
from graphview.core.tally import RunTally
from tests.conftest import SAMPLES

SCRIPTS = sorted(glob.glob(str(SAMPLES / "lessons" / "*.py")) + glob.glob(str(SAMPLES / "models" / "*.py"))
                 + glob.glob(str(SAMPLES / "pitfalls" / "*.py")))


def tally_of(run) -> RunTally:
    tally = RunTally()
    for event in run.events:
        tally.add(event)
    return tally


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.split("sample_models/")[1])
def test_the_tally_says_what_the_whole_run_says(record, path):
    run = record(path, steps=2)
    tally = tally_of(run)
    assert tally.info() == run.info()
    assert tally.any_leaf_got_a_gradient == any_leaf_got_a_gradient(run)
    assert tally.status == run.status and tally.failed == run.failed
    assert [ev for _, ev in tally.errors] == [ev for _, ev in run.errors]


def test_the_tally_keeps_only_the_saved_tensors_still_held(record):
    run = record(str(SAMPLES / "models" / "mlp_optimizer.py"), steps=3)
    tally = tally_of(run)
    assert run.info()["saved_tensors"] > 0
    live = [s for s in run.saved.values() if s.released is None]
    assert len(tally._saved) == len(live)  # released ones are forgotten: memory follows what autograd holds
