"""Values sent to be summarized (NOTE [Values sent to be summarized] in graphview/core/value_stats.py):
a small CPU tensor's values go in its compact event instead of their summary, and the channel's
reader makes the very summary the recorder would have made, to the last bit; anything else in a
summary's place is refused."""

from __future__ import annotations

import pytest
import torch

from graphview.capture.script import run_script
from graphview.capture.summaries import LightSummaries, summarize
from graphview.core.channel import BatchReader, ChannelError, encode_batch
from graphview.core.options import RunOptions
from graphview.core.value_stats import SENT, VALUES_SENT_MAX
from tests.capture.test_compact_recording import _read_back, _TakesCompact
from tests.conftest import model

#: summarize's ways of summarizing, as its callers ask them
HOWS = [dict(light=True), dict(light=True, exact=True), dict(norm=False), dict(norm=True), dict(hist=True)]


def _tensors() -> list[torch.Tensor]:
    torch.manual_seed(0)
    made = []
    for dtype in (torch.float32, torch.float64):
        for shape in [(65,), (32, 64), (64, 64), (7, 11, 3), (VALUES_SENT_MAX,)]:
            t = torch.randn(*shape, dtype=dtype) * 3
            made += [t, torch.nn.Parameter(t.clone()), (t * 2).requires_grad_()]
        made.append(torch.randn(64, 48, dtype=dtype).t())  # a transposed gradient: its memory in order
        with_nan, with_inf = torch.randn(100, 50, dtype=dtype), torch.randn(100, 50, dtype=dtype)
        with_nan[3, 4], with_inf[5, 6] = float("nan"), float("-inf")
        made += [with_nan, with_inf, torch.full((40, 40), 2.5, dtype=dtype)]
    return made


def _tensor_event(summary) -> tuple:
    return ("tensor", 4, 0, None, "activation", [1], "float32", "cpu", True, False, 7, None, 3, summary)


def _read_summary(summary) -> dict:
    """``summary`` as the channel's reader gives it back, in a tensor event and in a node's gradients."""
    reader = BatchReader()
    tensor, done = reader.feed(encode_batch([_tensor_event(summary), ("bw_node_done", 1, 7, [None, summary])]))[0]
    assert done["grads_out"][1] == {key: tensor[key] for key in ("shape", "stats")}
    return done["grads_out"][1]


@pytest.mark.parametrize("how", HOWS, ids=lambda how: ",".join(how))
def test_a_small_tensor_s_values_read_back_as_the_summary_the_recorder_would_make(how):
    sent = 0
    for t in _tensors():
        summary = summarize(t, send=True, **how)
        if type(summary) is tuple:
            sent += 1
            assert summary[0] == SENT and len(summary[-1]) == t.numel() * t.element_size()
            assert _read_summary(summary) == summarize(t, **how), (t.shape, t.dtype)
        else:
            assert summary == summarize(t, **how)
    assert sent == len(_tensors())  # each of them, small, dense and float


def test_a_tensor_of_other_values_is_summarized_where_it_is_recorded():
    """Too many values, another dtype, memory not read in order once (an expanded tensor), a few
    values (their list), sparse: the summary itself, as ever."""
    others = [torch.randn(VALUES_SENT_MAX + 1), torch.randn(30, 40).to(torch.bfloat16), torch.randint(0, 9, (30, 40)),
              torch.randn(1, 40).expand(30, 40), torch.randn(8, 8), torch.randn(300, 300).to_sparse()]
    for t in others:
        for how in HOWS:
            assert summarize(t, send=True, **how) == summarize(t, **how)


def test_a_gradient_sent_once_is_sent_again_as_the_tensor_of_the_same_memory():
    """A backward call's light summaries are made once per run of memory: a view of a gradient sent
    already sends the same values, with its own shape; asked for a summary, it gets the summary."""
    light = LightSummaries()
    grad = torch.randn(128, 96)
    first = light.summary(grad, send=True)
    again = light.summary(grad.view(96, 128), send=True)
    assert first[-1] is again[-1] and again[2] == [96, 128]
    assert _read_summary(again) == {"shape": [96, 128], "stats": summarize(grad, light=True)["stats"]}
    assert light.summary(grad.t()) == {"shape": [96, 128], "stats": summarize(grad, light=True)["stats"]}
    assert light.known_norm(grad) is None  # (its norm is computed where the values are read)


def test_a_batch_that_must_go_as_json_still_summarizes_the_values_it_sends():
    """An event holding what pickle is not given (a subclass of str) goes as JSON holds it: the
    values another event of its batch sends are summarized first (JSON holds no bytes)."""
    class Version(str):
        pass

    t = torch.randn(32, 64)
    summary = summarize(t, hist=True, send=True)
    events = [{"ev": "run_start", "torch": Version("2.13.0")}, _tensor_event(summary), ("bw_node_done", 1, 7, [summary])]
    start, tensor, done = BatchReader().feed(encode_batch(events))[0]
    assert start["torch"] == "2.13.0" and done["grads_out"] == [{key: tensor[key] for key in ("shape", "stats")}]
    assert done["grads_out"][0] == summarize(t, hist=True)


def test_a_recorded_run_sends_its_small_tensors_and_reads_back_their_summaries():
    """The MLP sample recorded as the runner records it: its activations and gradients travel as
    their values, and read back as the summaries a dict-taking emitter gets from the same run."""
    script = model("mlp_optimizer")
    as_dicts: list[dict] = []
    run_script(script, as_dicts.append, RunOptions(steps=1))
    compact = _TakesCompact()
    run_script(script, compact, RunOptions(steps=1))
    compact.handover()

    def sent(summary) -> bool:
        return type(summary) is tuple and summary[0] == SENT

    tensors = [e for e in compact if type(e) is tuple and e[0] == "tensor" and sent(e[-1])]
    gradients = [g for e in compact if type(e) is tuple and e[0] == "bw_node_done" for g in e[3] if sent(g)]
    grads = [e for e in compact if type(e) is tuple and e[0] == "accumulate" and sent(e[-1])]  # a weight's .grad
    assert len(tensors) >= 4 and len(gradients) >= 4 and grads  # (model.0.weight: 128 values)
    kinds = ("tensor", "bw_node_done", "accumulate")
    read = [e for e in _read_back(compact.batches) if e["ev"] in kinds]
    made = [e for e in as_dicts if e["ev"] in kinds]
    assert [e.get("stats") for e in read] == [e.get("stats") for e in made]
    assert [e.get("grads_out") for e in read] == [e.get("grads_out") for e in made]
    assert [e.get("grad", False) for e in read] == [e.get("grad", False) for e in made]
    assert any("hist" in e.get("grad", {}).get("stats", {}) for e in read)


FOUR = b"\0\0\x80?" * 4  # four float32 ones


@pytest.mark.parametrize("sent, says", [
    ((SENT, "light", [4], [4], "f"), "no summary"),
    (("values", "light", [4], [4], "f", FOUR), "no summary"),
    ((SENT, "median", [4], [4], "f", FOUR), "no known kind"),
    ((SENT, "light", [4], [4], "q", FOUR), "no known kind"),
    ((SENT, "light", [4], [4], "f", "ones"), "no known kind"),
    ((SENT, "light", [4], [4], "f", FOUR[:-1]), "15 bytes"),
    ((SENT, "light", [VALUES_SENT_MAX + 1], [VALUES_SENT_MAX + 1], "f", b"\0" * 4 * (VALUES_SENT_MAX + 1)), "bytes"),
    ((SENT, "light", [2, 3], [4], "f", FOUR), "shape does not hold them"),
    ((SENT, "light", [4], [-2, -2], "f", FOUR), "shape does not hold them"),
    ((SENT, "light", [True, 4], [4], "f", FOUR), "shape does not hold them"),
    ((SENT, "light", "4", [4], "f", FOUR), "shape does not hold them"),
    ((SENT, "light", [1] * 65 + [4], [4], "f", FOUR), "shape does not hold them"),
])
def test_what_is_not_sent_values_is_refused_and_says_what(sent, says):
    for events in ([_tensor_event(sent)], [("bw_node", 1, 7, [sent], None)], [("bw_node_done", 1, 7, [None, sent])]):
        with pytest.raises(ChannelError, match=says):
            BatchReader().feed(encode_batch(events))
