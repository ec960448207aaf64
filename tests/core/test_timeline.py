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


def test_an_accumulation_into_a_bias_reads_in_one_line(record):
    """The timeline's header is one line: an accumulation into a 16-value bias gives a few of the
    increment's values and of the .grad's, then how many more (it listed all of both, twice 16)."""
    from graphview.core.timeline import describe
    from tests.conftest import model

    run = record(model("mlp_optimizer"))
    index = next(i for i, e in enumerate(run.events) if e["ev"] == "accumulate" and run.tensor_name(e["tid"]) == "model.0.bias")
    text = describe(run, index)
    assert text.startswith("model.0.bias.grad += [") and text.count("… 12 more]") == 2, text
