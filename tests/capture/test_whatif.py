"""The what-if options (checkpoint, autocast, save_on_cpu) on the transformer sample, torch the oracle."""

from __future__ import annotations

import math

import pytest
import torch

from graphview.capture.fidelity import collect, compare, reference_in_fresh_process, run_once
from graphview.capture.whatif import SAVE_ON_CPU_ON_CPU
from graphview.core.options import RunOptions
from tests.conftest import model

TRANSFORMER = str(model("transformer_block"))
EVERY_LAYER = ["encoder.layers.*"]


def activations_peak(run) -> int:
    from graphview.core.held import activation_peak

    return activation_peak(run).held.activations


def backward_start(run, number: int = 1) -> int:
    return [i for i, e in enumerate(run.events) if e["ev"] == "backward_start"][number - 1]


def test_checkpointing_each_layer_lowers_the_recorded_peak_and_recomputes_in_backward(record):
    plain = record(TRANSFORMER)
    checkpointed = record(TRANSFORMER, checkpoint=EVERY_LAYER)
    assert checkpointed.status == "ok"
    assert checkpointed.peak_saved_bytes()["cpu"] < plain.peak_saved_bytes()["cpu"]
    # before backward the layer's activations are not held: only what lies outside the layer
    assert (checkpointed.live_saved_bytes(backward_start(checkpointed))["total"]
            < plain.live_saved_bytes(backward_start(plain))["total"])
    # the layer's forward runs again inside backward, marked as the checkpoint's recompute
    bid = next(iter(checkpointed.backwards))
    forward = [e["op"] for _, e in plain.ops if (e.get("module") or "").startswith("encoder.layers.0")]
    recomputed = [e for _, e in checkpointed.ops if e.get("recompute") == bid]
    # in forward order; torch stops the recompute as soon as the last tensor backward needs is saved
    # again (checkpoint's early stop: inside the layer's last op, whose return is never reached)
    ops = [e["op"] for e in recomputed]
    assert ops == forward[:len(ops)] and len(ops) >= len(forward) - 1
    assert all(e["module"].startswith("checkpoint recompute") for e in recomputed)
    assert not any(e.get("recompute") for _, e in plain.ops)


def test_a_pattern_that_names_no_module_says_so(record):
    run = record(TRANSFORMER, checkpoint=["decoder.*"])
    notes = "".join(e["text"] for e in run.events if e["ev"] == "stderr")
    assert "--checkpoint decoder.* matched no module called in this run" in notes
    assert not any(e.get("recompute") for _, e in run.ops)


@pytest.mark.parametrize("options", [dict(checkpoint=EVERY_LAYER), dict(autocast="bfloat16"), dict(save_on_cpu=True)],
                         ids=["checkpoint", "autocast", "save_on_cpu"])
def test_recorded_run_equals_the_plain_run_with_the_same_option(options):
    """Loss, parameters and grads bit for bit, the graph at backward and its saved bytes (a walk
    of every node's ``_raw_saved_*``) as an unrecorded run with that option has them."""
    run_options = RunOptions(steps=2, **options)
    process = reference_in_fresh_process(TRANSFORMER, run_options)
    recorded = run_once(TRANSFORMER, run_options, record=True)
    reference = collect(process)
    assert compare(reference, recorded) == []
    assert all(isinstance(r, torch.Tensor) for r in recorded["results"])


def walk_saved(root) -> dict[str, int]:
    """Bytes per dtype of the tensors autograd saved, from a walk of ``_raw_saved_*`` (deduplicated
    by storage), the way torch holds them."""
    storages: dict[tuple, tuple[str, int]] = {}
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for attr in dir(node):
            if attr.startswith("_raw_saved_"):
                raw = getattr(node, attr)
                for item in raw if isinstance(raw, (tuple, list)) else (raw,):
                    data = getattr(item, "data", None) if item is not None else None
                    if isinstance(data, torch.Tensor):
                        storage = data.untyped_storage()
                        storages[(storage.data_ptr(),)] = (str(data.dtype).removeprefix("torch."), storage.nbytes())
        stack.extend(child for child, _ in node.next_functions)
    by_dtype: dict[str, int] = {}
    for dtype, nbytes in storages.values():
        by_dtype[dtype] = by_dtype.get(dtype, 0) + nbytes
    return by_dtype


def test_autocast_saves_bfloat16_tensors_with_the_bytes_torch_holds(record):
    run = record(TRANSFORMER, autocast="bfloat16")
    at = backward_start(run)
    recorded: dict[str, dict] = {}
    for saved in run.saved.values():
        if saved.born <= at and (saved.released is None or saved.released > at):
            recorded.setdefault(saved.dtype, {})[(saved.device, saved.storage)] = saved.bytes
    by_dtype = {dtype: sum(storages.values()) for dtype, storages in recorded.items()}
    # the same forward, unrecorded, under the same autocast: what its graph holds
    scope: dict = {}
    exec(compile(open(TRANSFORMER).read(), TRANSFORMER, "exec"), scope)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = scope["step"]()
    assert by_dtype == walk_saved(loss.grad_fn)
    assert by_dtype["bfloat16"] > 0
    bf16 = [s for s in run.saved.values() if s.dtype == "bfloat16"]
    assert all(s.bytes >= math.prod(s.shape) * 2 for s in bf16)
    assert run.peak_saved_bytes()["cpu"] < record(TRANSFORMER).peak_saved_bytes()["cpu"]


def test_save_on_cpu_on_a_cpu_run_holds_the_same_bytes_and_says_why(record):
    plain = record(TRANSFORMER)
    offloaded = record(TRANSFORMER, save_on_cpu=True)
    assert offloaded.peak_saved_bytes() == plain.peak_saved_bytes()
    # every change of the live bytes is the same (the offloaded run has one event more: its note)
    assert [p[1:] for p in offloaded.memory_points] == [p[1:] for p in plain.memory_points]
    notes = [e["text"] for e in offloaded.events if e["ev"] == "stderr"]
    assert notes == [SAVE_ON_CPU_ON_CPU]


LSTM = """
import torch
from torch import nn

torch.manual_seed(0)


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.rnn = nn.LSTM(16, 32, num_layers=2, batch_first=True)
        self.head = nn.Linear(32, 50)

    def forward(self, ids):
        out, _ = self.rnn(self.embed(ids))
        return self.head(out)


model = LM()
ids = torch.randint(0, 50, (4, 12))


def step():
    return model(ids).logsumexp(-1).mean()
"""


def test_a_checkpoint_recomputing_a_whole_lstm_saves_no_memory(record, write_script):
    """Checkpointing an nn.LSTM whole saves little: its one op is recomputed inside backward and
    everything it saved is held again at once until its two layers' nodes have used it. Those
    recomputed tensors were not counted (the what-if said 324 KiB -> 32 KiB, -90%; torch's own
    memory peak barely moves). They are held for backward as the forward's were: counted, and
    released as the nodes use them."""
    script = write_script(LSTM)
    plain = record(script, steps=1)
    checkpointed = record(script, steps=1, checkpoint=["rnn"])
    from graphview.core.whatif import module_bytes

    held = module_bytes(plain, 0, len(plain.events) - 1)
    rnn_bytes = next(b for path, b in held.items() if path.endswith("rnn"))
    assert rnn_bytes > 0.8 * plain.live_saved_bytes(backward_start(plain))["activation"]  # the LSTM holds most
    bid = next(iter(checkpointed.backwards))
    recomputed = [e for e in checkpointed.events if e["ev"] == "saved" and e.get("recompute") == bid]
    released = {e["sid"] for e in checkpointed.events if e["ev"] == "release"}
    assert recomputed and all(e["sid"] in released for e in recomputed)
    assert sum(e["bytes"] for e in recomputed) >= rnn_bytes * 0.9
    # the peak falls by a little, not by the LSTM's bytes
    assert checkpointed.peak_saved_bytes()["cpu"] > 0.8 * plain.peak_saved_bytes()["cpu"]


def test_a_suggestion_says_about_what_checkpointing_saves_as_the_rerun_measures(record, write_script):
    """The suggestion's saving counts the recompute in backward: the LSTM (nine tenths of the
    peak, recomputed whole) saves a few percent, not the 93% its nodes hold; checkpointing a
    transformer's two layers, recomputed one at a time, saves about half. Each estimate is
    within an eighth of the peak of what a re-run with that checkpoint measures."""
    from graphview.core.whatif import checkpoint_suggestions

    with open(TRANSFORMER, encoding="utf-8") as f:
        two_layers = write_script(f.read().replace("num_layers=1", "num_layers=2"))
    for script, pattern in ((write_script(LSTM), "rnn"), (two_layers, "encoder.layers.*")):
        plain = record(script, steps=1)
        [suggestion] = [s for s in checkpoint_suggestions(plain) if s.pattern == pattern]
        after = record(script, steps=1, checkpoint=[pattern])
        measured = activations_peak(plain) - activations_peak(after)
        assert abs(suggestion.saving - measured) < suggestion.peak.activations / 8, (pattern, suggestion.saving, measured)
        assert (suggestion.saving < suggestion.held.activations / 2) == (pattern == "rnn")


SMALL_CNN = """
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.bn2(self.conv2(x))))
        return self.fc(x.flatten(1))


model = SmallCNN()
loss = F.cross_entropy(model(torch.randn(4, 3, 32, 32)), torch.randint(0, 10, (4,)))
loss.backward()
"""


def test_a_module_that_saves_only_its_input_and_weights_is_not_offered(record, write_script):
    """A checkpoint keeps its module's input for the recompute, and the model its parameters: a
    BatchNorm (it saves its input, which the conv before it made) or a conv (its input and its
    weight) frees nothing, as a re-run measures. They were offered at 21% and 8%; what is offered,
    the max-pools' indices, falls by what the re-run measures."""
    from graphview.core.whatif import checkpoint_suggestions

    script = write_script(SMALL_CNN)
    plain = record(script)
    suggestions = {s.pattern: s for s in checkpoint_suggestions(plain)}
    peak = activations_peak(plain)
    for pattern in ("bn1", "conv1", "conv2"):
        assert pattern not in suggestions
        assert activations_peak(record(script, checkpoint=[pattern])) >= peak * 0.99
    pool = suggestions["pool"]
    measured = peak - activations_peak(record(script, checkpoint=["pool"]))
    assert measured > 0 and pool.saving == measured
    assert "recomputed in backward, one call at a time" in pool.text()  # it pools after each conv


BLOCKS_THEN_WIDE_HEAD = """
import torch
from torch import nn

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)

    def forward(self, x):
        return torch.relu(self.fc(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Block() for _ in range(6)])
        self.head = nn.Sequential(nn.Linear(64, 2048), nn.ReLU(), nn.Linear(2048, 10))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


model = Net()
model(torch.randn(32, 64)).sum().backward()
"""


def test_each_layer_checkpointed_on_its_own_keeps_its_input(record, write_script):
    """``layers.*`` checkpoints each block on its own: a block's output, which the next block saves,
    is that next block's input, kept by its checkpoint, and its weight the model holds anyway. A
    block of one Linear and a ReLU then frees nothing: it was offered, for the weights a re-run no
    longer saw saved (the model still held them). The ModuleList itself is never called: not
    offered either."""
    from graphview.core.whatif import checkpoint_suggestions

    script = write_script(BLOCKS_THEN_WIDE_HEAD)
    plain = record(script)
    suggestions = {s.pattern: s for s in checkpoint_suggestions(plain, top=10)}
    assert "layers" not in suggestions and "layers.*" not in suggestions
    after = record(script, checkpoint=["layers.*"])
    assert activations_peak(after) == activations_peak(plain)
    assert after.peak_saved_bytes()["cpu"] < plain.peak_saved_bytes()["cpu"]  # (the weights it no longer saw)


CACHED = '''import torch
from torch import nn

torch.manual_seed(0)


class Cached(nn.Module):
    """Keeps every input it was called with, as a key/value cache does."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.cache = []

    def forward(self, x):
        self.cache.append(x)
        return self.lin(torch.cat(self.cache, 0)).sum(0)


model = nn.Sequential(nn.Linear(4, 4), Cached())
model(torch.randn(2, 4)).pow(2).sum().backward()
'''


def test_a_checkpoint_whose_re_run_fails_is_not_measured(record, write_script):
    """A new user's Mixtral: the re-run with its layers checkpointed died in backward (the
    recompute appended to the key/value cache again) and ``check --measure`` printed the peak of
    the part that ran as a 94% saving."""
    from graphview.core.whatif import measured_text

    path = write_script(CACHED)
    before = record(path)
    after = record(path, checkpoint=["model.1"])
    assert before.status == "ok" and after.status == "error"
    text = measured_text("model.1", before, after)
    assert text.startswith("checkpoint model.1, not measured: with it, the script failed (CheckpointError at line 21")
    assert "while torch recomputed the checkpointed forward in backward" in text and "use_cache=False" in text
    assert "peak saved" not in text


def test_no_checkpoint_is_offered_inside_a_compiled_model(record, write_script):
    """Checkpointing a module of a torch.compile'd model (``_orig_mod.layers.*``) failed in
    Dynamo ("already tracked for mutation"): such modules are not offered."""
    from graphview.core.whatif import checkpoint_suggestions

    run = record(write_script(
        "import torch\n"
        "from torch import nn\n"
        "model = torch.compile(nn.Sequential(*[nn.Sequential(nn.Linear(32, 32), nn.Tanh()) for _ in range(4)]),\n"
        "                      backend='aot_eager')\n"
        "model(torch.randn(64, 32)).pow(2).mean().backward()\n"))
    assert any("_orig_mod" in (n.module or "") for n in run.op_nodes.values())
    assert not [s.pattern for s in checkpoint_suggestions(run) if "_orig_mod" in s.pattern]
