"""Run options (the toggles) and the saved-memory series, checked against torch's behaviour."""

from __future__ import annotations

import pytest
import torch
from torch.utils._pytree import tree_leaves

from graphview.core.events import summary_scalar
from tests.conftest import lesson, model

THREE_LAYER = """
import torch
torch.manual_seed(0)
lin1 = torch.nn.Linear(256, 512)
lin2 = torch.nn.Linear(512, 10)
x = torch.randn(64, 256)
h = lin1(x)
h = torch.relu(h)
out = lin2(h)
loss = out.pow(2).mean()
loss.backward()
"""


def at_event(run, predicate):
    return next(i for i, e in enumerate(run.events) if predicate(e))


def test_saved_leaves_count_as_the_canvas_draws_them(record, write_script):
    """A saved leaf is a weight when it is a parameter (drawn green, "leaf parameter"), frozen
    ones included, and an input when it is a plain tensor, requires grad or not (drawn yellow,
    "leaf input that requires grad", as a lesson's ``w``): the memory chart's colours and words
    say what the canvas says. Bytes from torch's own storages."""
    keep: dict = {}
    run = record(write_script(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "w = torch.randn(5, 7, requires_grad=True)\n"
        "x = torch.randn(3, 5, requires_grad=True)\n"
        "frozen = torch.nn.Linear(7, 4)\n"
        "frozen.requires_grad_(False)\n"
        "h = x @ w\n"
        "y = frozen(h)\n"
        "loss = y.square().sum()\n"
    ), keep=keep)
    kinds = {run.tensor_name(tid): info["kind"] for tid, info in run.tensors.items() if run.tensor_name(tid)}
    assert kinds["w"] == kinds["x"] == "input" and kinds["frozen.weight"] == "param"  # the canvas's kinds
    held = run.live_saved_bytes()
    w, x, frozen = keep["w"], keep["x"], keep["frozen"]
    # matmul saves x and w (each needs the other's gradient); linear saves frozen.weight for h's gradient
    assert held["input"] == w.untyped_storage().nbytes() + x.untyped_storage().nbytes()
    assert held["param"] == frozen.weight.untyped_storage().nbytes()


def test_memory_timeline_of_a_three_layer_net(record, write_script):
    """Saved bytes after each layer, deduplicated by storage, split by kind (numbers from torch)."""
    run = record(write_script(THREE_LAYER))
    ops = [(i, e) for i, e in enumerate(run.events) if e["ev"] == "op"]
    by_op = {}
    for i, e in ops:
        by_op.setdefault(e["op"], i)  # first occurrence
    assert run.live_saved_bytes(by_op["linear"]) == {"activation": 0, "param": 0, "input": 64 * 256 * 4, "total": 65536}
    after_relu = run.live_saved_bytes(by_op["relu"])
    assert after_relu["activation"] == 64 * 512 * 4  # relu saves its result
    after_loss = run.live_saved_bytes(by_op["mean"])
    # lin2 saves relu's result (same storage: counted once) and weight.t() (a view of the parameter)
    assert after_loss["activation"] == 64 * 512 * 4 + 64 * 10 * 4  # relu result + pow's input
    assert after_loss["param"] == 512 * 10 * 4
    assert after_loss["input"] == 65536
    end = run.live_saved_bytes()
    assert end["total"] == 0  # a plain backward frees everything
    # releases happen node by node during backward, in the engine's order
    bw = [e for e in run.events if e["ev"] in ("bw_node", "release")]
    assert bw[0]["ev"] == "bw_node" and any(e["ev"] == "release" for e in bw)


def test_retain_graph_toggle_keeps_saved_bytes_after_backward(record):
    plain = record(model("mlp_optimizer"))
    retained = record(model("mlp_optimizer"), retain_graph=True)
    end_plain = at_event(plain, lambda e: e["ev"] == "backward_end")
    end_retained = at_event(retained, lambda e: e["ev"] == "backward_end")
    assert plain.live_saved_bytes(end_plain)["total"] == 0
    before = retained.live_saved_bytes(at_event(retained, lambda e: e["ev"] == "backward_start"))["total"]
    assert before > 0 and retained.live_saved_bytes(end_retained)["total"] == before
    assert retained.backwards[1].forced == ["retain_graph"] and retained.backwards[1].retain_graph


def test_grad_modes_save_nothing_and_build_no_graph(record):
    for mode in ("no_grad", "inference_mode"):
        run = record(model("mlp_optimizer"), grad_mode=mode)
        assert run.status == "ok"
        assert run.peak_saved_bytes().get("cpu", 0) == 0
        assert run.op_nodes == {} and run.backwards == {}


def test_detach_at_module_cuts_the_graph_and_saves_less(record):
    full = record(model("mlp_optimizer"))
    cut = record(model("mlp_optimizer"), detach_at=["model.1"])  # the ReLU of nn.Sequential
    assert cut.peak_saved_bytes()["cpu"] < full.peak_saved_bytes()["cpu"]
    forced = [e for e in cut.events if e["ev"] == "detach" and e["forced"]]
    assert len(forced) == 1
    # the first Linear gets no gradient any more
    first_weight = cut.tensor_by_name("model.0.weight")
    assert cut.grad_values(first_weight) == []
    assert full.grad_values(full.tensor_by_name("model.0.weight")) != []


def test_detach_at_op_and_line(record):
    # op 3 is w * 3 (after the two torch.tensor calls): w is cut off, b still learns
    run = record(lesson("prediction"), detach_at=["op:3"])
    assert run.status == "ok"
    assert run.grad_values(run.tensor_by_name("w")) == []
    assert [summary_scalar(v) for v in run.grad_values(run.tensor_by_name("b"))] == [-6.0]
    # detaching the whole line `prediction = w * 3 + b` leaves nothing to differentiate
    cut = record(lesson("prediction"), detach_at=["line:9"])
    assert cut.status == "error"
    assert cut.errors[-1][1]["message"] == "element 0 of tensors does not require grad and does not have a grad_fn"


def test_steps_and_zero_grad_between_steps(record):
    run = record(model("mlp_optimizer"), steps=3)
    assert [s["step"] for s in run.steps] == [1, 2, 3]
    assert len(run.optimizer_steps) == 3
    w = run.tensor_by_name("model.2.bias")
    hows = [e.how for e in run.grads[w]]
    assert hows == ["accumulate", "set_to_none", "accumulate", "set_to_none", "accumulate"]
    # each step's graph is freed by its backward: peak per step is the same every step
    peaks = [p["peak"]["cpu"] for p in run.peak_per_step()]
    assert peaks[0] > 0 and peaks == [peaks[0]] * 3


def test_accumulate_keeps_adding(record):
    keep: dict = {}
    run = record(lesson("accumulate_without_clearing"), keep=keep)
    w = run.tensor_by_name("w")
    assert [summary_scalar(v) for v in run.grad_values(w)] == [-8.0, -16.0]
    step_run = record(model("weight_sharing"), steps=2, accumulate=True)
    tid = step_run.tensor_by_name("shared.weight")
    hows = [e.how for e in step_run.grads[tid]]
    assert "set_to_none" not in hows and hows.count("accumulate") == 2


def test_create_graph_toggle(record):
    run = record(lesson("chain_rule"), create_graph=True)
    call = run.backwards[1]
    assert call.create_graph and "create_graph" in call.forced
    assert run.status == "ok"


def test_device_option_cpu(record):
    run = record(lesson("prediction"), device="cpu")
    assert run.status == "ok"
    assert {info["device"] for info in run.tensors.values()} == {"cpu"}


def test_dynamic_graph_changes_every_step(record):
    run = record(model("lstm_variable_steps"), steps=3)
    nodes_per_step = []
    for step in run.steps:
        nodes_per_step.append(sum(1 for n in run.op_nodes.values() if step["start"] <= n.born <= step["end"]))
    assert len(set(nodes_per_step)) == 3  # lengths 3, 5 and 2: three different graphs


@pytest.mark.parametrize("name", ["teacher_student_detach"])
def test_teacher_gets_no_gradient(record, name):
    run = record(model(name), steps=2)
    teacher_weight = run.tensor_by_name("teacher.0.weight")
    assert teacher_weight is not None
    assert run.grad_values(teacher_weight) == []



#: a script's own pairs of saved-tensor hooks: keep the tensor, a float16 copy, nothing in memory, two copies
HOOK_PAIRS = {
    "identity": "(lambda t: t, lambda t: t)",
    "half": "(lambda t: (t.dtype, t.half()), lambda p: p[1].to(p[0]))",
    "offload": "(offload, lambda key: store.pop(key))",
    "two": "(lambda t: [t.half(), t.half()], lambda p: p[0].float())",
}
OWN_HOOKS = """import torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
x = torch.randn(8, 16)
store = {{}}
def offload(t):
    store[len(store)] = t.clone()
    return len(store) - 1
with torch.autograd.graph.saved_tensors_hooks(*{pair}):
    loss = m(x).pow(2).mean()
loss.backward()
"""


def _kept_by_torch(mode: str) -> int:
    """Bytes of what the pack hook returned (each storage once), the script's forward run here."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    x = torch.randn(8, 16)
    store: dict = {}

    def offload(t):
        store[len(store)] = t.clone()
        return len(store) - 1

    pack, unpack = eval(HOOK_PAIRS[mode], {"torch": torch, "offload": offload, "store": store})
    returned = []

    def watched(t):
        packed = pack(t)
        returned.extend(p for p in tree_leaves(packed) if isinstance(p, torch.Tensor))
        return packed

    with torch.autograd.graph.saved_tensors_hooks(watched, unpack):
        m(x).pow(2).mean()
    return sum({t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in returned}.values())


@pytest.mark.parametrize("mode", list(HOOK_PAIRS))
def test_a_scripts_own_saved_tensor_hooks_count_what_they_keep(record, write_script, mode):
    """Torch runs only the innermost pair of saved-tensor hooks: a script's own (``save_on_cpu``,
    a pair that compresses or offloads) hid every saved tensor from graphview (0 B saved). What
    they keep is counted: the bytes of the tensors its pack hook returned, as torch holds them,
    none for a pack that keeps its tensor outside memory."""
    run = record(write_script(OWN_HOOKS.format(pair=HOOK_PAIRS[mode])))
    assert run.status == "ok"
    peak = run.peak_saved_bytes().get("cpu", 0)
    assert peak == _kept_by_torch(mode)
    assert {"identity": peak > 0, "half": 0 < peak < _kept_by_torch("identity"), "offload": peak == 0,
            "two": peak == _kept_by_torch("half") * 2}[mode]
