"""The timeline's words for each moment of a run."""

from __future__ import annotations


def test_every_event_of_the_samples_is_described_in_words(record):
    """The timeline label never shows an internal event name or "line None"."""
    from graphview.core.events import EVENT_KINDS
    from graphview.core.timeline import describe
    from tests.conftest import lesson, model

    for path in (model("mlp_optimizer"), lesson("retain_grad"), lesson("error_no_grad_fn"), model("checkpointing")):
        run = record(path)
        for i in range(len(run.events)):
            text = describe(run, i)
            assert text and text not in EVENT_KINDS and "line None" not in text, (path, i, text)
