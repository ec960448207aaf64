"""A generation loop under no_grad: every op a no-grad tensor op, no autograd node. Each call of
the model is drawn as one box holding its own modules, the weights sit above their first users,
and boxes that are not nested do not overlap. Drawn before as if every weight were a new input:
all of them in a row at the top, each block's box from there down to its ops (over the other
blocks'), and the list of blocks one box across the whole loop."""

from __future__ import annotations

from graphview.core.drawing import Drawing
from graphview.core.hierarchy import module_boxes

GENERATE = """
import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, h):
        return h + self.fc(self.norm(h))


class Body(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(20, 8)
        self.pos = torch.nn.Embedding(16, 8)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(3))

    def forward(self, ids):
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        h = self.embed(ids) + self.pos(positions)
        for block in self.blocks:
            h = block(h)
        return h


class LM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = Body()
        self.head = torch.nn.Linear(8, 20)

    def forward(self, ids):
        return self.head(self.body(ids))


torch.manual_seed(0)
model = LM().eval()
ids = torch.tensor([[1, 2, 3]])
calls = 0
with torch.no_grad():
    for _ in range(3):
        logits = model(ids)
        calls += 1
        next_id = logits[:, -1].argmax(dim=-1, keepdim=True)
        ids = torch.cat([ids, next_id], dim=1)
"""


def _drawn(record, write_script):
    keep: dict = {}
    run = record(write_script(GENERATE), keep=keep)
    drawing = Drawing(run)
    drawing.update(final=True)
    return drawing, module_boxes(drawing), keep


def _cells(drawing, box):
    rows = [drawing.nodes[m].layer for m in box.members]
    columns = [drawing.nodes[m].slot for m in box.members]
    return min(rows), min(columns), max(rows), max(columns)


def test_each_call_of_a_model_generating_under_no_grad_is_one_box_holding_its_modules(record, write_script):
    drawing, boxes, keep = _drawn(record, write_script)
    assert not drawing.run.op_nodes  # no autograd node: every op ran under no_grad
    keyed = {box.key: box for box in boxes}
    calls = [box for box in boxes if box.path == "body"]
    assert len(calls) == keep["calls"] == 3  # torch: the model was called three times
    assert all(box.parent is None for box in calls)
    # the list of blocks, which never runs itself, is a box inside each call, not one across them
    lists = [box for box in boxes if box.path == "body.blocks"]
    assert len(lists) == 3 and {keyed[box.parent].path for box in lists} == {"body"}
    assert len({box.parent for box in lists}) == 3
    # every module of the model is inside a call's box, and each box inside the one around it
    for box in boxes:
        if box.path.startswith("body."):
            assert box.parent is not None, box.key
        if box.parent is not None:
            outer = keyed[box.parent]
            assert box.members <= outer.members
            top, left, bottom, right = _cells(drawing, box)
            o_top, o_left, o_bottom, o_right = _cells(drawing, outer)
            assert o_top <= top and bottom <= o_bottom and o_left <= left and right <= o_right, box.key


def test_boxes_of_a_generation_loop_do_not_overlap_and_weights_sit_above_their_users(record, write_script):
    drawing, boxes, keep = _drawn(record, write_script)
    keyed = {box.key: box for box in boxes}

    def around(box):
        keys, parent = set(), box.parent
        while parent is not None:
            keys.add(parent)
            parent = keyed[parent].parent
        return keys

    cells = {box.key: _cells(drawing, box) for box in boxes}
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if a.key in around(b) or b.key in around(a):
                continue
            (at, al, ab, ar), (bt, bl, bb, br) = cells[a.key], cells[b.key]
            assert ab < bt or bb < at or ar < bl or br < al, (a.key, b.key)  # apart
    placed = [n for n in drawing.nodes.values() if n.placed]
    for box in boxes:  # and no box's rectangle holds a node that is not its own
        top, left, bottom, right = cells[box.key]
        strangers = [n.id for n in placed if n.id not in box.members
                     and top <= n.layer <= bottom and left <= n.slot <= right]
        assert not strangers, box.key
    # each weight just above the first op that reads it, not in a row of weights at the top
    users: dict[str, list] = {}
    for edge in drawing.edges:
        users.setdefault(edge.source, []).append(drawing.nodes[edge.target])
    params = [n for n in placed if n.kind == "param"]
    names = {n.title for n in params}
    model = keep["model"]
    assert names == {name for name, _ in model.named_parameters()}  # torch: the model's weights
    for param in params:
        first = min(users[param.id], key=lambda n: n.born)
        assert param.layer == first.layer - 1, param.title


#: a step with grad, the loop under no_grad, then the model with grad again on what it generated
TRAIN_GENERATE_TRAIN = GENERATE.replace("calls = 0\n", "calls = 0\nmodel(ids).logsumexp(-1).mean().backward()\n") + """
loss = model(ids).logsumexp(-1).mean()
loss.backward()
"""


def test_a_generation_between_two_steps_with_grad_stays_beside_what_it_reads(record, write_script):
    # the last forward reads the ids the loop made: the loop's tensors are placed upwards from it, one
    # above the other, where no module holds the rows for them
    keep: dict = {}
    run = record(write_script(TRAIN_GENERATE_TRAIN), keep=keep)
    drawing = Drawing(run)
    drawing.update(final=True)
    assert keep["calls"] == 3 and keep["loss"].grad_fn is not None  # torch: a loop between graphs
    nodes = drawing.nodes
    assert sum(1 for n in nodes.values() if n.placed and n.kind == "detached") >= keep["calls"] * 10
    gaps = [abs(nodes[e.source].slot - nodes[e.target].slot) for e in drawing.edges
            if nodes[e.source].placed and nodes[e.target].placed]
    # each goes beside the boxes of the rows it is drawn in (8 columns from its input at most here), not
    # beside every tensor the loop drew above the last forward (32 columns, the loop's tensors fanned
    # out over 59 columns)
    assert max(gaps) <= 12
