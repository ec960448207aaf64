"""Repeated blocks (GPT-2's ``transformer.h.0-11``, ResNet's stages) read as one stack, with each
block's activations: the bytes torch holds for it when backward starts."""

from __future__ import annotations

import runpy

import pytest
import torch

from graphview.core.drawing import Drawing
from graphview.core.hierarchy import blocks_held, module_boxes
from tests.capture.held_by_torch import held_by_torch_in_modules
from tests.conftest import zoo

# (zoo script, the stack's key, its label, the blocks' module names in the script's model)
STACKS = [
    ("gpt2_lm", "transformer.h", "transformer.h.0-1 · GPT2Block ×2", "transformer.h"),
    ("llama_decoder", "model.layers", "model.layers.0-1 · LlamaDecoderLayer ×2", "model.layers"),
]


def _stack(record, name: str, key: str):
    run = record(zoo(name), steps=1)
    drawing = Drawing(run)
    drawing.update(final=True)
    boxes = module_boxes(drawing)
    keyed = {box.key: box for box in boxes}
    return run, drawing, keyed, keyed[key]


@pytest.mark.parametrize("name, key, label, blocks", STACKS, ids=[s[0] for s in STACKS])
def test_each_blocks_activations_are_what_torch_holds_for_it(record, name, key, label, blocks):
    run, drawing, keyed, stack = _stack(record, name, key)
    assert stack.label == label
    at = run.events.find({"backward_start"}, 0)
    ours = {block.path: held.activations for block, _, held in blocks_held(drawing, stack, keyed, at)}
    torch.manual_seed(0)
    scope = runpy.run_path(zoo(name))
    model = scope["model"]
    modules = {f"{blocks}.{i}": module for i, module in enumerate(model.get_submodule(blocks))}
    theirs = held_by_torch_in_modules(scope["step"], modules)
    assert set(ours) == set(modules)
    for path in modules:
        assert ours[path] > 0
        assert abs(ours[path] - theirs.get(path, 0)) <= max(0.02 * theirs.get(path, 0), 1024), (path, ours, theirs)
