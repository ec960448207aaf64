"""Live saved-tensor bytes, each storage counted once: the one rule both :class:`~graphview.core.run.Run`
and :class:`~graphview.core.tally.RunTally` count memory by.

Several saved tensors can share one storage (a ReLU's saved result is the next Linear's saved
input); autograd holds that storage once. A storage's bytes become live at the first ``saved``
event that names it and stop being live at the ``release`` of its last saved tensor.
"""

from __future__ import annotations

KINDS = ("activation", "param", "input")


class SavedBytes:
    """Live saved bytes per device and kind. Only live storages are kept, so memory follows what
    autograd holds now, not the run's length."""

    def __init__(self) -> None:
        self._count: dict[tuple[str, str], int] = {}  # (device, storage) -> live saved tensors on it
        self._kind: dict[tuple[str, str], tuple[str, int]] = {}
        self.live: dict[str, dict[str, int]] = {}  # device -> kind -> bytes

    def save(self, device: str, storage: str, kind: str, nbytes: int) -> bool:
        """A saved tensor appeared; True if it made its storage live (the totals changed)."""
        key = (device, storage)
        count = self._count.get(key, 0)
        self._count[key] = count + 1
        if count:
            return False
        self._kind[key] = (kind, nbytes)
        self._change(device, kind, nbytes)
        return True

    def release(self, device: str, storage: str) -> bool:
        """A saved tensor was released; True if that freed its storage (the totals changed)."""
        key = (device, storage)
        count = self._count.get(key, 0) - 1
        if count > 0:
            self._count[key] = count
            return False
        self._count.pop(key, None)
        if key not in self._kind:
            return False
        kind, nbytes = self._kind.pop(key)
        self._change(device, kind, -nbytes)
        return True

    def _change(self, device: str, kind: str, delta: int) -> None:
        live = self.live.get(device)
        if live is None:
            live = self.live[device] = dict.fromkeys(KINDS, 0)
        live[kind if kind in live else "activation"] += delta

    def by_kind(self, device: str) -> tuple[int, int, int]:
        """(activation, param, input) bytes live on ``device``."""
        live = self.live.get(device)
        return (live["activation"], live["param"], live["input"]) if live else (0, 0, 0)

    def total(self, device: str) -> int:
        return sum(self.by_kind(device))
