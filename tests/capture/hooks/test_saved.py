"""The saved-tensor mechanism alone: bytes torch saves, their release, torch's in-place check."""

import pytest
import torch

from graphview.capture.hooks.saved import SavedTensorHooks


def test_saved_bytes_and_release_match_torch(alone):
    with alone(SavedTensorHooks, "install_saved", __file__) as events:
        x = torch.randn(4, 8)
        w = torch.randn(8, 3, requires_grad=True)
        h = (x @ w).exp()
        packed = [e for e in events if e["ev"] == "saved"]
        h.sum().backward()
    # mm saves x for w's grad; exp saves its result
    assert sorted(e["bytes"] for e in packed) == sorted([x.untyped_storage().nbytes(), h.untyped_storage().nbytes()])
    released = {e["sid"] for e in events if e["ev"] == "release"}
    assert released == {e["sid"] for e in packed}


def test_in_place_on_a_saved_tensor_raises_torchs_own_message(alone):
    def attempt():
        a = torch.ones(3, requires_grad=True)
        b = a.exp()
        b.add_(1)
        b.sum().backward()

    with pytest.raises(RuntimeError) as plain:
        attempt()
    with alone(SavedTensorHooks, "install_saved", __file__):
        with pytest.raises(RuntimeError) as recorded:
            attempt()
    assert str(recorded.value) == str(plain.value)
