"""``--checkpoint PATTERN`` works wherever torch's own checkpointing does, torch the oracle.

A recorded run with ``--checkpoint`` computes the loss and the gradients that plain torch computes
with ``checkpoint(module.forward, *args, use_reentrant=False, **kwargs)`` put on the same modules
by hand, bit for bit, and the fidelity check finds it identical to the unrecorded run with the
same option (here in-process; ``graphview check --fidelity`` runs the reference in a fresh one).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch.utils.checkpoint import checkpoint

from graphview.capture.fidelity import compare, held_outside_the_walk, run_once
from graphview.core.options import RunOptions
from tests.conftest import model, zoo

# modules called with keyword arguments, returning a tuple with None in it, a dict, and an
# nn.MultiheadAttention given one tensor as query, key and value
KEYWORDS_TUPLES_DICTS = """
import torch
from torch import nn

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.drop = nn.Dropout(0.25)

    def forward(self, x, *, scale, mask=None, as_dict=False):
        h = self.drop(torch.tanh(self.fc(x))) * scale
        if mask is not None:
            h = h.masked_fill(mask, 0.0)
        if as_dict:
            return {"hidden": h, "norm": h.pow(2).mean(), "cache": None}
        return h, None, h.sum(-1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Block()
        self.second = Block()
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)
        self.scale = nn.Parameter(torch.tensor(1.5))

    def forward(self, x, mask, padding):
        h, nothing, total = self.first(x, scale=self.scale, mask=mask)
        out = self.second(x=h, scale=2.0, as_dict=True)
        attended, weights = self.attn(out["hidden"], out["hidden"], out["hidden"], key_padding_mask=padding)
        return attended.sum() + out["norm"] + total.mean() + weights.pow(2).sum()


model = Net()
x = torch.randn(3, 5, 16)
mask = torch.rand(3, 5, 16) > 0.7
padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])


def step():
    return model(x, mask, padding)
"""

CASES = [
    # nn.TransformerEncoderLayer calls self_attn(x, x, x, attn_mask=..., key_padding_mask=...,
    # need_weights=False): one tensor three times, keywords, (output, None) back
    ("transformer_block", "encoder.layers.0.self_attn", ["encoder.layers.0.self_attn"]),
    ("keywords", "first", ["first"]),
    ("keywords", "second", ["second"]),
    ("keywords", "attn", ["attn"]),
    ("keywords", "*", ["first", "second", "attn"]),
    ("gpt2_lm", "transformer.h.*", ["transformer.h.0", "transformer.h.1"]),
    ("gpt2_lm", "transformer.h.0.attn", ["transformer.h.0.attn"]),
    ("llama_decoder", "model.layers.*", ["model.layers.0", "model.layers.1"]),
    ("llama_decoder", "model.layers.1.self_attn", ["model.layers.1.self_attn"]),
    ("bert_mlm", "bert.encoder.layer.*.attention", ["bert.encoder.layer.0.attention", "bert.encoder.layer.1.attention"]),
]
HUGGING_FACE = {"gpt2_lm", "llama_decoder", "bert_mlm"}


def script_path(name: str, write_script) -> str:
    if name == "keywords":
        return write_script(KEYWORDS_TUPLES_DICTS)
    if name in HUGGING_FACE:
        pytest.importorskip("transformers")
        return zoo(name)
    return model(name)


def under_checkpoint(forward):
    def checkpointed(*args, **kwargs):
        return checkpoint(forward, *args, use_reentrant=False, **kwargs)

    return checkpointed


def plain_torch(script: str, checkpointed: list[str]) -> dict[str, torch.Tensor]:
    """One step of the script without graphview, the modules at the paths ``checkpointed`` run
    under torch's checkpoint, put on by hand: the loss (``result``) and every parameter's
    gradient, named as the fidelity check names them (``model.fc.weight.grad``)."""
    scope: dict = {"__name__": "plain_torch", "__file__": script}
    with open(script, encoding="utf-8") as f:
        exec(compile(f.read(), script, "exec"), scope)
    net = scope["model"]
    for path in checkpointed:
        module = net.get_submodule(path)
        module.forward = under_checkpoint(module.forward)
    loss = scope["step"]()
    loss.backward()
    grads = {f"model.{name}.grad": p.grad for name, p in net.named_parameters() if p.grad is not None}
    return {"result": loss.detach(), **grads}


def recorded_grads(recorded: dict) -> dict[str, torch.Tensor]:
    grads = {name: t for name, t in recorded["state"].items() if name.startswith("model.") and name.endswith(".grad")}
    return {"result": recorded["results"][0], **grads}


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1).contiguous().view(torch.uint8)


@pytest.mark.parametrize("name, pattern, paths", CASES, ids=[f"{n}:{p}" for n, p, _ in CASES])
def test_a_recorded_checkpoint_computes_what_torch_computes_with_it(name, pattern, paths, write_script):
    script = script_path(name, write_script)
    options = RunOptions(checkpoint=[pattern], steps=1)
    recorded = run_once(script, options, record=True)
    assert recorded["status"] == "ok", recorded["error"]
    # the checkpoint was applied: its forward ran again inside backward
    events = recorded["events"]
    assert not [e["text"] for e in events if e["ev"] == "stderr" and "--checkpoint" in e["text"]]
    assert any(e["ev"] == "op" and e.get("recompute") for e in events)

    expected = plain_torch(script, paths)
    got = recorded_grads(recorded)
    assert sorted(got) == sorted(expected)
    different = [key for key in expected if not torch.equal(bits(expected[key]), bits(got[key]))]
    assert different == []

    reference = run_once(script, options, record=False)
    assert compare(reference, recorded) == []


def test_a_multihead_attention_input_the_checkpoint_keeps_is_counted_once(write_script):
    """The transformer layer's self-attention is given its input x (4 x 10 x 32 float32) as query,
    key and value: the checkpoint keeps it for the recompute, where no walk from the loss sees it,
    and graphview counts its bytes once."""
    options = RunOptions(checkpoint=["encoder.layers.0.self_attn"], steps=1)
    recorded = run_once(model("transformer_block"), options, record=True)
    reference = run_once(model("transformer_block"), options, record=False)
    assert held_outside_the_walk(reference, recorded) == [4 * 10 * 32 * 4]


SAME_TENSOR_TWICE = """
import torch
from torch import nn


class Pair(nn.Module):
    seen = []

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, a, b):
        Pair.seen.append(a is b)
        return self.fc(a) * b if a is b else self.fc(a)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.pair = Pair()

    def forward(self, x):
        h = self.lin(x)
        return self.pair(h, h)


model = Net()
model(torch.randn(2, 4)).pow(2).sum().backward()
"""


def test_the_recompute_gets_one_object_where_the_forward_had_one(record, write_script):
    """What broke nn.MultiheadAttention: the recompute's inputs came back through graphview's
    saved-tensor hooks as new tensor objects, one per argument, so ``a is b`` held in the forward
    and not in the recompute, which then ran other ops (torch: "Recomputed values for the
    following tensors have different metadata than during the forward pass")."""
    keep: dict = {}
    run = record(write_script(SAME_TENSOR_TWICE), keep=keep, checkpoint=["pair"])
    assert run.status == "ok", run.events[-1]
    assert keep["Pair"].seen == [True, True]  # the forward, then the recompute in backward


KEYWORD_NAMED_LIKE_AN_OPTION = """
import torch
from torch import nn

torch.manual_seed(0)


class Doubling(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, debug=False):
        return torch.tanh(self.fc(x)) * (2.0 if debug else 1.0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Doubling()

    def forward(self, x):
        return self.inner(x, debug=True)


model = Net()
x = torch.randn(3, 4)


def step():
    return model(x).pow(2).sum()
"""


def test_a_keyword_argument_named_like_a_checkpoint_option_reaches_the_module(write_script):
    """checkpoint() has options of its own (debug, context_fn, preserve_rng_state...): a module's
    keyword argument of the same name must still reach the module, as it does with no checkpoint."""
    script = write_script(KEYWORD_NAMED_LIKE_AN_OPTION)
    recorded = run_once(script, RunOptions(checkpoint=["inner"], steps=1), record=True)
    assert recorded["status"] == "ok", recorded["error"]
    assert any(e["ev"] == "op" and e.get("recompute") for e in recorded["events"])
    expected = plain_torch(script, [])  # the same values as without checkpoint
    got = recorded_grads(recorded)
    assert all(torch.equal(expected[key], got[key]) for key in expected) and sorted(got) == sorted(expected)


def test_cli_fidelity_check_with_a_checkpointed_multihead_attention_is_identical():
    result = subprocess.run([sys.executable, "-m", "graphview.app.cli", "check", "--fidelity",
                             "--checkpoint", "encoder.layers.0.self_attn", model("transformer_block")],
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "identical to the plain run" in result.stdout
    assert "5120 B held outside the walk" in result.stdout  # x, kept by the checkpoint (see above)
