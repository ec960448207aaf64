"""The recorder's compact events (graphview/core/compact_events.py): a run recorded into an emitter
that takes them (the runner's pipe) reads back from the channel as the same events a dict-taking
emitter gets from the same run."""

from __future__ import annotations

import os
import threading

import pytest

from graphview.capture import runner
from graphview.capture.runner import EventPipe
from graphview.capture.script import run_script
from graphview.core.channel import BatchReader, encode_batch
from graphview.core.options import RunOptions
from tests.conftest import lesson, model, zoo

#: what differs between two runs of a script in one process anyway: torch's node sequence numbers
#: (one counter for the process), the storages' addresses, the time a step took
_EACH_RUN_ITS_OWN = {("node", "seq"), ("saved", "storage"), ("step_end", "seconds")}


class _TakesCompact(list):
    """An emitter as the runner's pipe is: it takes compact events, and its events go in a batch
    each time control goes back to the script (a batch of a few events spends the most of the
    channel reader's budget for its bytes)."""

    takes_compact = True

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list] = []

    def __call__(self, event) -> None:
        self.append(event)

    def handover(self) -> None:
        if len(self) > sum(map(len, self.batches)):
            self.batches.append(self[sum(map(len, self.batches)):])


def _read_back(batches: list[list]) -> list[dict]:
    """The events of ``batches`` as the channel's reader gives them (tuples made lists, compact
    events dicts)."""
    reader = BatchReader()
    return [event for events in batches for batch in reader.feed(encode_batch(events)) for event in batch]


@pytest.mark.parametrize("script", [model("mlp_optimizer"), model("transformer_block"), model("checkpointing"),
                                    lesson("accumulate_with_clearing")])
def test_a_run_through_the_pipe_reads_back_as_the_same_events(script):
    run_script(script, [].append, RunOptions(steps=2))  # (a library's first run warns, and imports, once)
    as_dicts: list[dict] = []
    run_script(script, as_dicts.append, RunOptions(steps=2))
    compact = _TakesCompact()
    run_script(script, compact, RunOptions(steps=2))
    compact.handover()
    assert sum(type(event) is tuple for event in compact) > len(compact) / 2  # most events a step makes
    assert not any(type(event) is tuple for event in as_dicts)
    dicts, read = _read_back([as_dicts]), _read_back(compact.batches)
    assert [event["ev"] for event in read] == [event["ev"] for event in dicts]
    for theirs, ours in zip(dicts, read):
        assert list(ours) == list(theirs)  # the same keys, in the same order
        differing = {(ours["ev"], key) for key in ours if ours[key] != theirs[key]}
        assert differing <= _EACH_RUN_ITS_OWN, (theirs, ours)



def test_a_real_model_s_batches_read_back_within_the_reader_s_room_for_values(monkeypatch):
    """GPT-2 recorded into the runner's pipe is read back whole: the channel's reader lets a batch
    hold one value per two of its bytes (see channel._plain), and a compact event's bytes are
    fewer for the same values (each batch as the pipe cuts them: at handovers, at once for the
    script's output and the boundaries)."""
    monkeypatch.setattr(runner, "WRITE_EVERY_S", 60.0)  # (what is cut where does not depend on the clock)
    monkeypatch.setattr(runner, "LATE_WRITE_S", 60.0)
    read_fd, write_fd = os.pipe()
    chunks: list[bytes] = []
    drain = threading.Thread(target=lambda: chunks.extend(iter(lambda: os.read(read_fd, 1 << 16), b"")))
    drain.start()
    pipe = EventPipe(write_fd)
    end = run_script(zoo("gpt2_lm"), pipe, RunOptions(steps=2))
    pipe.close()
    drain.join()
    os.close(read_fd)
    reader = BatchReader()
    read = [event for batch in reader.feed(b"".join(chunks)) for event in batch]
    assert reader.batches > 100 and read[-1] == end and end["status"] == "ok"
