"""What the queries read of a run (graphview.core.queries.tables) is what a run has: a recorded
run is a RunTables, its drawn tensors DrawnTensors, and the summary built through the protocol
counts what torch did."""

from __future__ import annotations

import torch

from graphview.core.queries.tables import DrawnTensor, RunTables
from graphview.core.run import ACCUMULATE_GRAD
from tests.conftest import model


def test_a_recorded_run_is_what_the_queries_read(record):
    run = record(model("mlp_optimizer"), steps=1)
    assert isinstance(run, RunTables)
    assert run.tensor_nodes and all(isinstance(node, DrawnTensor) for node in run.tensor_nodes.values())
    info = run.info()
    # torch: one step of the MLP runs one backward and one optimizer step, and AccumulateGrad
    # nodes for its four parameters
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    assert len(list(mlp.parameters())) == 4
    assert info["backward_calls"] == 1 and info["optimizer_steps"] == 1 and info["status"] == "ok"
    assert sum(op.name == ACCUMULATE_GRAD for op in run.op_nodes.values()) == 4
