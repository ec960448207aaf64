"""What autograd holds for backward, split by what a user could free.

A saved tensor is one of three kinds (``saved`` events say which):

* **activations**: memory the forward made (op results, a weight's autocast copy) that autograd
  keeps only for backward. Without the graph the process would free it; checkpointing,
  ``no_grad`` and freeing the graph sooner change it.
* **weights**: parameters (``nn.Parameter``, frozen ones included) that ops saved, such as the
  weight a matmul saves. The model holds them anyway: nothing a user does to the graph frees them.
* **inputs**: other tensors the forward was given (the batch, a buffer, a lesson's ``w`` made with
  ``requires_grad=True``), which the script holds anyway too.

Every memory answer graphview gives leads with the activations and names the rest as held
anyway: "holds 856 MiB for backward: 143 MiB of activations, and 713 MiB of weights it holds anyway".
Torch confirms the activations: the storages the forward's ops made that are alive when it ends
(see the tests' oracle) equal them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from graphview.core.run import Run


def human(n: int) -> str:
    """Bytes in the unit that reads best (``1.50 MiB``)."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


@dataclass(frozen=True)
class Held:
    """Bytes autograd holds for backward at one moment (each storage once)."""

    activations: int = 0
    weights: int = 0
    inputs: int = 0

    @property
    def total(self) -> int:
        return self.activations + self.weights + self.inputs

    @property
    def anyway(self) -> int:
        """What the process holds whether or not backward needs it."""
        return self.weights + self.inputs

    def __add__(self, other: "Held") -> "Held":
        return Held(self.activations + other.activations, self.weights + other.weights, self.inputs + other.inputs)

    def split_text(self) -> str:
        """"143.30 MiB of activations, and 713.00 MiB of weights it holds anyway" (what is there)."""
        anyway = []
        if self.weights:
            anyway.append(f"{human(self.weights)} of weights")
        if self.inputs:
            anyway.append(f"{human(self.inputs)} of inputs")
        text = f"{human(self.activations)} of activations"
        if anyway:
            text += ", and " + " and ".join(anyway) + " it holds anyway"
        return text

    def text(self) -> str:
        """"holds 856.30 MiB for backward: 143.30 MiB of activations, and 713.00 MiB of weights it
        holds anyway"."""
        if not self.anyway:
            return f"holds {human(self.activations)} of activations for backward"
        return f"holds {human(self.total)} for backward: {self.split_text()}"

    def short(self) -> str:
        """For a label: "10.60 MiB activations + 49.00 MiB weights"."""
        parts = [f"{human(self.activations)} activations"] if self.activations or not self.anyway else []
        if self.weights:
            parts.append(f"{human(self.weights)} weights")
        if self.inputs:
            parts.append(f"{human(self.inputs)} inputs")
        return " + ".join(parts)


def held_at(run: Run, index: int | None = None, device: str | None = None) -> Held:
    """What autograd holds for backward after event ``index`` (None: the end), on ``device`` (None:
    all devices)."""
    live = run.live_saved_bytes(index, device)
    return Held(live["activation"], live["param"], live["input"])


def held_by_nodes(run: Run, vids, index: int, also=()) -> Held:
    """What the saved tensors of the autograd nodes ``vids`` hold after event ``index`` (a storage
    two of them save counted once), with the saved tensors ``also`` (of no node: what a checkpoint
    keeps for a module, :func:`graphview.core.checkpoint_kept.kept_inputs`)."""
    storages: dict[tuple, tuple[str, int]] = {}
    by_owner = run.saved_by_owner
    for vid in vids:
        for saved in by_owner.get(vid, ()):
            if saved.held_at(index):
                storages[(saved.device, saved.storage)] = (saved.kind, saved.bytes)
    for saved in also:
        if saved.held_at(index):
            storages[(saved.device, saved.storage)] = (saved.kind, saved.bytes)
    kinds = {"activation": 0, "param": 0, "input": 0}
    for kind, nbytes in storages.values():
        kinds[kind if kind in kinds else "activation"] += nbytes
    return Held(kinds["activation"], kinds["param"], kinds["input"])


def split_among(run: Run, groups: dict[str, set[int]], index: int) -> dict[str, Held]:
    """What each group's autograd nodes made that autograd holds after event ``index``: every
    saved storage counted once, for the group whose node made it (a ReLU's output, saved by the
    ReLU and by the Linear after it, is the ReLU's; a convolution's output saved by the norm after
    it is the convolution's), whoever saves it, a checkpoint too (what it keeps for its recompute:
    ``use_reentrant=True`` in its own node, ``False`` beside the graph). Weights and inputs: for
    the group that saves them."""
    group_of: dict[int, str] = {vid: name for name, vids in groups.items() for vid in vids}
    counted: dict[tuple, tuple[str, str, int]] = {}
    for owner, saved_list in run.saved_by_owner.items():
        for saved in saved_list:
            if not saved.held_at(index):
                continue
            maker = saved.src if saved.src is not None else owner
            name = group_of.get(owner if saved.kind in ("param", "input") else maker)
            if name is not None:
                counted.setdefault((saved.device, saved.storage), (name, saved.kind, saved.bytes))
    for saved in run.unowned_saved:  # what a non-reentrant checkpoint keeps, beside the graph: its maker's
        name = group_of.get(saved.src) if saved.owner is None and saved.kind == "activation" else None
        if name is not None and saved.held_at(index):
            counted.setdefault((saved.device, saved.storage), (name, saved.kind, saved.bytes))
    kinds = {name: {"activation": 0, "param": 0, "input": 0} for name in groups}
    for name, kind, nbytes in counted.values():
        kinds[name][kind if kind in ("param", "input") else "activation"] += nbytes
    return {name: Held(k["activation"], k["param"], k["input"]) for name, k in kinds.items()}


@dataclass(frozen=True)
class Peak:
    """The moment the activations autograd holds are highest on a device."""

    device: str
    at: int  # the event after which they are highest (the first, of equal ones)
    held: Held  # everything held then


def activation_peaks(run: Run, start: int = 0, end: int | None = None) -> dict[str, Peak]:
    """Device -> the highest activations held between events ``start`` and ``end`` (inclusive;
    None: the run's end), with what else is held then. A device that held none is left out."""
    peaks: dict[str, Peak] = {}
    for _ in gather_activation_peaks(run, peaks, start, end):
        pass
    return peaks


#: memory points looked at between two points where a caller of gather_activation_peaks may pause
POINTS_A_PAUSE = 16384


def gather_activation_peaks(run: Run, peaks: dict[str, Peak], start: int = 0, end: int | None = None) -> Iterator[None]:
    """:func:`activation_peaks` into ``peaks``, with a None after every :data:`POINTS_A_PAUSE`
    memory points: where a caller may stop and come back (a big run's has a million)."""
    last: dict[str, tuple] = {}
    for count, point in enumerate(run.memory_points, 1):
        if count % POINTS_A_PAUSE == 0:
            yield None
        index, device = point[0], point[1]
        if index < start:
            last[device] = point
            continue
        if end is not None and index > end:
            break
        if device in last:  # what was held when the span began
            _consider(peaks, last.pop(device), start)
        _consider(peaks, point, index)
    for device, point in last.items():
        _consider(peaks, point, start)


def _consider(peaks: dict[str, Peak], point: tuple, at: int) -> None:
    _, device, activations, weights, inputs = point
    best = peaks.get(device)
    if activations > 0 and (best is None or activations > best.held.activations):
        peaks[device] = Peak(device, at, Held(activations, weights, inputs))


def activation_peak(run: Run, start: int = 0, end: int | None = None) -> Peak | None:
    """The highest activations held on any one device (the device holding the most)."""
    return highest_peak(activation_peaks(run, start, end))


def highest_peak(peaks: dict[str, Peak]) -> Peak | None:
    """The peak of the device holding the most activations, of ``peaks`` (None: none held any)."""
    return max(peaks.values(), key=lambda p: p.held.activations, default=None)


def busiest_device(run: Run) -> str:
    """The device whose activations peak highest (``cpu`` when no device held any): the one a
    single memory figure or chart of the run shows."""
    peaks = activation_peaks(run)
    return max(peaks, key=lambda device: peaks[device].held.activations) if peaks else "cpu"

