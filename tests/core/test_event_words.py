"""The words for each event of a run: the timeline bar's, the captions', the web page's."""

from __future__ import annotations

from graphview.core.event_words import describe


def test_every_event_of_the_samples_is_described_in_words(record):
    """The timeline label never shows an internal event name or "line None"."""
    from graphview.core.events import EVENT_KINDS
    from tests.conftest import lesson, model

    for path in (model("mlp_optimizer"), lesson("retain_grad"), lesson("error_no_grad_fn"), model("checkpointing")):
        run = record(path)
        for i in range(len(run.events)):
            text = describe(run, i)
            assert text and text not in EVENT_KINDS and "line None" not in text, (path, i, text)
            assert "tensor tensor" not in text, (path, i, text)  # an unnamed tensor is "tensor 12"


def test_an_accumulation_into_a_bias_reads_in_one_line(record):
    """The timeline's header is one line: an accumulation into a 16-value bias gives a few of the
    increment's values and of the .grad's, then how many more (it listed all of both, twice 16)."""
    from tests.conftest import model

    run = record(model("mlp_optimizer"))
    index = next(i for i, e in enumerate(run.events) if e["ev"] == "accumulate" and run.tensor_name(e["tid"]) == "model.0.bias")
    text = describe(run, index)
    assert text.startswith("model.0.bias.grad += [") and text.count("… 12 more]") == 2, text


def test_a_grad_written_in_place_names_the_op(record, write_script):
    run = record(write_script(
        "import torch\n"
        "w = torch.tensor([3.0, -4.0], requires_grad=True)\n"
        "(w * 10).sum().backward()\n"
        "torch.nn.utils.clip_grad_norm_([w], 1.0)\n"))
    index = next(i for i, e in enumerate(run.events) if e["ev"] == "grad_reset")
    assert describe(run, index) == "line 4: _foreach_mul_ writes into the .grad of w"


def test_the_backward_graphview_calls_for_a_step_reads_as_a_sentence(record):
    """A step() script returns its loss and graphview calls backward() on it: the event leads with
    what happens (it read "graphview calls backward() on the loss step() returned: backward() #1 starts")."""
    from tests.conftest import model

    run = record(model("mlp_optimizer"), steps=2)
    starts = [i for i, e in enumerate(run.events) if e["ev"] == "backward_start"]
    assert len(starts) == 2 and all(run.events[i].get("line") is None for i in starts)
    assert [describe(run, i) for i in starts] == [
        "backward() #1 starts: graphview calls it on the loss step() returned",
        "backward() #2 starts: graphview calls it on the loss step() returned"]


def test_a_node_torch_makes_in_cpp_is_named_without_its_namespace(record):
    """The in-place sample's CopySlices showed in its box, elided to the box's width, as
    "torch::autograd::…Slices": the drawing, the words and the graph's data name it CopySlices, as
    they name AccumulateGrad (the run keeps torch's own name)."""
    from graphview.core.drawing import Drawing
    from tests.conftest import model

    run = record(model("inplace_ops"))
    copy = [op for op in run.op_nodes.values() if op.name == "torch::autograd::CopySlices"]
    assert copy  # (the sample writes into a slice in place)
    drawing = Drawing(run)
    drawing.update(final=True)
    assert {drawing.nodes[op.id].title for op in copy} == {"CopySlices"}
    runs = [describe(run, i) for i, e in enumerate(run.events)
            if e["ev"] == "bw_node" and e["vid"] in {op.vid for op in copy}]
    assert runs and all(text.endswith("runs CopySlices") for text in runs), runs
    from graphview.core.export import graph_data

    ops = {node["vid"]: node["op"] for node in graph_data(run)["nodes"] if node["kind"] == "op"}
    assert {ops[op.vid] for op in copy} == {"CopySlices"} and "torch::autograd::AccumulateGrad" not in ops.values()
