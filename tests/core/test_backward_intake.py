"""The run's intake of backward's events (:mod:`graphview.core.backward_intake`): a handler for
each kind, found by the run's table, and what one backward call records, against torch."""

from __future__ import annotations

from graphview.core.backward_intake import BackwardIntake
from graphview.core.events import EVENT_KINDS
from graphview.core.run import _HANDLERS
from tests.conftest import lesson

BACKWARD_KINDS = {"backward_start", "bw_node", "bw_node_done", "accumulate", "tensor_grad", "grad_result",
                  "grad_read", "grad_reset", "backward_end"}


def test_every_handler_takes_a_kind_the_schema_knows_and_backwards_are_this_parts():
    assert set(_HANDLERS) <= EVENT_KINDS  # (a misspelt handler would never be called)
    mine = {name[4:] for name in vars(BackwardIntake) if name.startswith("_on_")}
    assert mine == BACKWARD_KINDS and mine <= set(_HANDLERS)


def test_a_backward_call_runs_the_nodes_torch_made_and_accumulates_their_gradient(record):
    keep: dict = {}
    run = record(lesson("chain_rule"), keep=keep)
    (call,) = run.backwards.values()
    assert call.ok and call.end is not None and call.start < call.end
    made = []  # the chain torch made, from y down to x's AccumulateGrad
    fn = keep["y"].grad_fn
    while fn is not None:
        made.append(type(fn).__name__)
        fn = fn.next_functions[0][0] if fn.next_functions else None
    ran = [run.op_nodes[vid].name.rpartition("::")[2] for vid in call.order]
    assert ran == made and made[-1] == "AccumulateGrad"
    entry = run.grad_at(run.tensor_by_name("x"))
    assert entry.how == "accumulate" and entry.bid == call.bid
    assert entry.value["values"] == [keep["x"].grad.item()] == [20.0]
