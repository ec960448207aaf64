"""A detach (or no_grad) that cuts the loss off from every parameter is named, with its line."""

from __future__ import annotations

import pytest

from graphview.core.cuts import find_cut
from graphview.core.diagnostics import diagnose
from tests.conftest import MODELS, SAMPLES, model

FROZEN_HEAD = '''import torch
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
head = nn.Linear(8, 2)
head.requires_grad_(False)  # a frozen head: only the encoder learns
optimizer = torch.optim.SGD(encoder.parameters(), lr=0.1)
inputs = torch.randn(5, 4)


def step():
    features = encoder(inputs).detach()
    loss = head(features).pow(2).mean()
    return loss
'''

PLAIN_MID_MODEL = '''import torch
from torch import nn

torch.manual_seed(0)
first = nn.Linear(4, 8)
second = nn.Linear(8, 1)
x = torch.randn(3, 4)
with torch.no_grad():
    hidden = first(x)
loss = second(hidden.relu()).sum().detach()
loss.backward()
'''


def cut_of(run):
    return next((f for f in diagnose(run) if f.code == "graph-cut"), None)


def test_a_step_script_that_detaches_mid_model_is_told_where(record, write_script):
    run = record(write_script(FROZEN_HEAD), steps=3)
    assert run.status == "ok" and not run.backwards  # the loss had no grad_fn: graphview ran no backward
    finding = cut_of(run)
    assert finding is not None and finding.line == 13
    assert finding.title == "the loss has no grad_fn: the graph is cut at line 13 (module encoder.1)"
    assert "The script's .detach() cut the graph at line 13, the output of module encoder.1" in finding.explanation
    assert "the loss is" in finding.explanation and "in every step" in finding.explanation  # it never changes
    assert finding.related_lines == [14]  # the loss's own line
    event = run.events[finding.index]
    assert event["ev"] == "detach" and event["line"] == 13 and f"t{event['src']}" == finding.node


def test_the_detach_at_option_on_a_sample_names_the_module_it_cut(record):
    run = record(model("mlp_optimizer"), steps=3, detach_at=["model.2"])
    finding = cut_of(run)
    assert finding is not None and finding.line == 14
    assert finding.title.endswith("cut at line 14 (module model.2)")
    assert "The run option 'detach at model.2' cut the graph at line 14, the output of module model.2" in finding.explanation
    assert "Clear 'detach at'" in finding.fix
    losses = {ev["result"]["values"][0] for ev in run.events if ev["ev"] == "step_end"}
    assert len(losses) == 1 and f"{losses.pop():.6g}" in finding.explanation  # the same loss in every step
    event = run.events[finding.index]
    assert event["ev"] == "detach" and event["forced"]
    assert run.producers[event["src"]]["module"] == "model.2"


def test_the_grad_mode_option_is_named_as_the_cut(record):
    run = record(model("mlp_optimizer"), steps=2, grad_mode="no_grad")
    finding = cut_of(run)
    assert finding is not None and finding.line == 14
    assert "inside a no_grad region (the grad mode run option)" in finding.explanation
    assert finding.fix.startswith("Set grad mode back to grad")


def test_a_plain_script_whose_backward_fails_names_the_cut_that_took_its_grad_fn(record, write_script):
    run = record(write_script(PLAIN_MID_MODEL))
    finding = next(f for f in diagnose(run) if f.code == "no-grad-fn")
    assert finding.related_lines == [10] and ".detach()" in finding.explanation
    assert cut_of(run) is None  # one finding for it, not two
    # walking further back, under the detach, the no_grad block is the next cut
    detach = next(ev for ev in run.events if ev["ev"] == "detach")
    deeper = find_cut(run, detach["src"])
    assert deeper is not None and (deeper.how, deeper.line) == ("no_grad", 9)


@pytest.mark.parametrize("path, options", [
    (model("mlp_optimizer"), {}),
    (model("mlp_optimizer"), {"detach_at": ["model.0"]}),  # layer 2 still learns
    (str(MODELS / "teacher_student_detach.py"), {}),  # the teacher is detached on purpose
    (str(SAMPLES / "pitfalls" / "detached_branch_gets_no_grad.py"), {}),  # fc2 learns
])
def test_a_run_where_something_still_learns_has_no_such_finding(record, path, options):
    run = record(path, steps=2, **options)
    assert cut_of(run) is None
