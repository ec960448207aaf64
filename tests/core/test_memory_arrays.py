"""The memory chart's arrays: grown batch by batch they hold what the run says for every event,
and their binned peaks keep each bin's highest value."""

from __future__ import annotations

import numpy as np

from graphview.core.run import Run
from tests.conftest import model


def test_arrays_grown_in_batches_hold_the_live_bytes_after_every_event(record):
    whole = record(model("transformer_block"), steps=2)
    live = Run()
    for start in range(0, len(whole.events), 53):
        live.extend(whole.events[start:start + 53])
        arrays = live.memory_arrays("cpu")
        assert arrays.n == len(live.events)
    for index in range(len(whole.events)):
        at = whole.live_saved_bytes(index, "cpu")
        assert [int(arrays[k][index]) for k in ("activation", "param", "input", "total")] == \
            [at["activation"], at["param"], at["input"], at["total"]]
    assert arrays["total"].max() == max(whole.peak_saved_bytes().values()) > 0
    assert np.isnan(arrays["allocated"]).all() and not arrays.has_alloc  # a CPU run: no allocator figure


def test_peaks_keep_the_highest_value_of_every_bin_as_the_run_grows(record):
    whole = record(model("mlp_optimizer"), steps=3)
    live = Run()
    limit = 40
    for start in range(0, len(whole.events), 29):
        live.extend(whole.events[start:start + 29])
        arrays = live.memory_arrays("cpu")
        total = arrays["total"]
        x, y = arrays.peaks("total", limit)
        assert len(x) <= limit and list(y) == list(total[x])
        assert sorted(x) == list(x) and x[-1] < len(total)
        if len(total) > limit:  # each bin, a power of two wide, keeps its first highest event
            width = 1
            while -(-len(total) // width) > limit:
                width *= 2
            bins = [total[i:i + width] for i in range(0, len(total), width)]
            assert list(x) == [i * width + int(np.argmax(b)) for i, b in enumerate(bins)]
        assert y.max() == total.max() and total[x[np.argmax(y)]] == total.max()
