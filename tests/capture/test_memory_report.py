"""``graphview info``'s "most activations, by module" against torch: the bytes each module's
entry names are the bytes of the storages its forward made that torch still holds when the forward
returns, and the entries of one level never count a storage twice."""

from __future__ import annotations

import runpy

import pytest
import torch

from graphview.core.held import activation_peak, split_among
from graphview.core.memory_report import modules_at
from graphview.core.whatif import nodes_by_module
from tests.capture.held_by_torch import held_by_torch_in_modules
from tests.conftest import model, zoo

# (script, the container whose parts are compared: its path in the run, in the script's `model`)
CASES = [
    (model("mlp_optimizer"), "model", ""),  # Linear, ReLU, Linear: the ReLU's output saved twice
    (zoo("resnet_classifier"), "resnet.embedder.embedder", "resnet.embedder.embedder"),  # conv, norm, ReLU
    (zoo("resnet_classifier"), "resnet.encoder.stages", "resnet.encoder.stages"),  # two stages
    (zoo("gpt2_lm"), "transformer.h", "transformer.h"),  # a family: transformer.h.* (2 × GPT2Block)
]


def _torch_by_part(path: str, in_run: str, in_model: str):
    torch.manual_seed(0)
    scope = runpy.run_path(path)
    parent = scope["model"].get_submodule(in_model)
    parts = {f"{in_run}.{name}": module for name, module in parent.named_children()}
    return parts, held_by_torch_in_modules(scope["step"], parts)


@pytest.mark.parametrize("path, in_run, in_model", CASES, ids=["mlp", "resnet_embedder", "resnet_stages", "gpt2_blocks"])
def test_each_part_holds_what_torch_holds_for_the_storages_it_made(record, path, in_run, in_model):
    run = record(path, steps=1)
    peak = activation_peak(run)
    at = run.events.find({"backward_start"}, 0)
    parts, theirs = _torch_by_part(path, in_run, in_model)
    vids_of = nodes_by_module(run, 0, at)
    ours = split_among(run, {p: vids_of.get(p, set()) for p in parts}, at)
    assert any(theirs.values())
    for name in parts:
        assert abs(ours[name].activations - theirs.get(name, 0)) <= max(0.02 * theirs.get(name, 0), 1024), (
            name, {n: h.activations for n, h in ours.items()}, theirs)
    # every entry of the report together is at most what backward holds at the peak
    assert sum(e.held.activations for e in modules_at(run, peak)) <= peak.held.activations


def test_a_sequential_of_different_layers_is_no_family_and_the_relu_output_counts_once(record):
    run = record(model("mlp_optimizer"), steps=1)
    peak = activation_peak(run)
    entries = {e.path: e for e in modules_at(run, peak)}
    assert "model.*" not in entries
    relu_output = 32 * 16 * 4  # saved by ReluBackward0 and by the next Linear's AddmmBackward0
    assert entries["model.1"].held.activations == relu_output and entries["model.1"].count == 1
