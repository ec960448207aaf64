"""Which nodes hold a saved tensor of a storage: the Inspector asks for one node's storages at each
step of the cursor (owners_of), the checkpoint advice for all of them at once (saved_owners)."""

from __future__ import annotations

from tests.conftest import model


def test_owners_of_a_storage_are_saved_owners_entry_at_every_event(record, write_script):
    """On a max-pool that saves the ReLU's result the ReLU saves too (one storage, two owners) and on
    the bundled transformer (two steps), owners_of(device, storage, index) is the entry of
    saved_owners(index) for that storage at each event, without a walk over every saved tensor."""
    pooled = record(write_script(
        "import torch\n"
        "x = torch.randn(1, 2, 4, 4, requires_grad=True)\n"
        "h = torch.relu(x * 2)\n"
        "loss = torch.nn.functional.max_pool2d(h, 2).sum()\n"
        "loss.backward()\n"))
    transformer = record(model("transformer_block"), steps=2)
    shared = 0
    for run in (pooled, transformer):
        keys = {(s.device, s.storage) for s in run.saved.values() if s.owner is not None}
        for index in range(0, len(run.events), max(1, len(run.events) // 200)):
            owners = run.saved_owners(index)
            for device, storage in keys:
                found = run.owners_of(device, storage, index)
                assert found == owners.get((device, storage), set())
                shared += len(found) > 1
    assert shared > 0  # (some storage held by two nodes at once: the ReLU's result)
