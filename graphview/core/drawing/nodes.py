"""The drawn graph's parts: a node, an edge, their kinds, and the size of a cell of the drawing."""

from __future__ import annotations

from dataclasses import dataclass, field

LAYER_HEIGHT = 96.0
SLOT_WIDTH = 200.0

#: every kind of drawn node, with what the legend calls it
NODE_KINDS = {
    "param": "leaf parameter",
    "input_grad": "leaf input that requires grad",
    "input": "input (no grad)",
    "intermediate": "intermediate tensor",
    "output": "output / loss",
    "op": "grad_fn node",
    "accumulate": "AccumulateGrad",
    "detached": "detached / no-grad tensor",
}
#: tensors the script (or a model's forward) made without grad_fn from nothing drawn: they end when freed
INPUT_KINDS = frozenset({"input", "input_grad"})
#: every kind of drawn edge
EDGE_KINDS = ("flow", "accumulate", "input", "detach", "no_grad_op")


def unnamed_title(title: str) -> bool:
    """Whether a tensor's title says it had no name when drawn ("tensor", "output of pow", and
    their later states "tensor (v2)")."""
    return title == "tensor" or title.startswith(("tensor (v", "output of "))


@dataclass(slots=True)  # a big drawing holds ~10^5 of them
class DrawNode:
    id: str  # the graph id (``op5``, ``t3``, ``t3v1``), shared with exports and the inspector
    kind: str
    title: str
    subtitle: str
    born: int
    ref: int  # tid for tensors, vid for ops
    module: str | None = None  # nn.Module call path (for leaves: their name's prefix), boxes group by it
    line: int | None = None
    layer: int = 0
    slot: int = 0
    placed: bool = False
    preds: list = field(default_factory=list)

    @property
    def x(self) -> float:
        return self.slot * SLOT_WIDTH

    @property
    def y(self) -> float:
        return self.layer * LAYER_HEIGHT


@dataclass(slots=True)
class DrawEdge:
    source: str
    target: str
    kind: str
    born: int
    label: str = ""
