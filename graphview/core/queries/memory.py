"""Memory: the bytes autograd holds for backward after each event, their peaks, and what a
checkpoint of some nodes would take from the forward."""

from __future__ import annotations

from graphview.core.memory_arrays import MemoryArrays


class MemoryQueries:
    """From the run's change points of saved bytes (``memory_points``, and per device
    ``_points_by_device`` / ``_allocs_by_device``), its saved tensors by owner (``saved_by_owner``)
    and its steps."""

    def checkpoint_would_free(self, vids: set[int], index: int, owners: dict | None = None) -> int:
        """Of what the nodes ``vids`` (one module's) hold (:func:`graphview.core.held.held_by_nodes`),
        the bytes a checkpoint of them takes from the forward after event ``index``: what they saved
        of their own results and of the parameters, where no node outside them saves it too. A checkpoint keeps its module's
        inputs for the recompute (a BatchNorm saves its input: the conv before it made that; a conv
        saves the images it is given): they stay. ``owners``: :meth:`saved_owners` at ``index``,
        when asked for many sets of nodes."""
        if owners is None:
            owners = self.saved_owners(index)
        storages: dict[tuple, int] = {}
        for vid in vids:
            for saved in self.saved_by_owner.get(vid, ()):
                if saved.kind == "activation" and (saved.src is None or saved.src in vids) and saved.held_at(index):
                    key = (saved.device, saved.storage)
                    if owners.get(key, set()) <= vids:
                        storages[key] = saved.bytes
        return sum(storages.values())

    def saved_owners(self, index: int) -> dict[tuple, set[int]]:
        """(device, storage) -> the nodes holding a saved tensor of it live after event ``index``."""
        owners: dict[tuple, set[int]] = {}
        for vid, saved_list in self.saved_by_owner.items():
            for saved in saved_list:
                if saved.held_at(index):
                    owners.setdefault((saved.device, saved.storage), set()).add(vid)
        return owners

    def owners_of(self, device: str, storage: str, index: int) -> set[int]:
        """The nodes holding a saved tensor of ``storage`` on ``device`` live after event ``index``:
        :meth:`saved_owners`'s entry for it, without a walk over every saved tensor of the run."""
        return {saved.owner for saved in self.owned_by_storage.get((device, storage), ()) if saved.held_at(index)}

    def live_saved_bytes(self, index: int | None = None, device: str | None = None) -> dict:
        """Live saved bytes by kind (deduplicated by storage) after event ``index``."""
        result = {"activation": 0, "param": 0, "input": 0}
        latest: dict[str, tuple] = {}
        for point in self.memory_points:
            if index is not None and point[0] > index:
                break
            latest[point[1]] = point
        for dev, point in latest.items():
            if device is None or dev == device:
                result["activation"] += point[2]
                result["param"] += point[3]
                result["input"] += point[4]
        result["total"] = result["activation"] + result["param"] + result["input"]
        return result

    def memory_arrays(self, device: str) -> MemoryArrays:
        """Live saved bytes on ``device`` after every event, as numpy arrays (grown as the run grows)."""
        arrays = self._series.get(device)
        if arrays is None:
            arrays = self._series[device] = MemoryArrays(self.events, self._points_by_device, self._allocs_by_device,
                                                         device)
        return arrays.update()

    def memory_series(self, device: str) -> dict[str, list]:
        """Live saved bytes on ``device`` after every event: lists of length ``len(run)`` (the CUDA
        allocator's figure None until one was recorded)."""
        arrays = self.memory_arrays(device)
        series = {key: arrays.array(key).tolist() for key in ("activation", "param", "input", "total")}
        series["allocated"] = [None if v != v else int(v) for v in arrays.array("allocated").tolist()]
        return series

    def peak_saved_bytes(self) -> dict[str, int]:
        """Peak of live saved bytes (all kinds) per device over the whole run."""
        peaks: dict[str, int] = {}
        for _, device, a, p, i in self.memory_points:
            peaks[device] = max(peaks.get(device, 0), a + p + i)
        return peaks

    def peak_per_step(self) -> list[dict]:
        """For each step: its number and the peak live saved bytes per device within it."""
        result = []
        for step in self.steps:
            end = step["end"] if step["end"] is not None else len(self.events)
            peaks: dict[str, int] = {}
            last: dict[str, int] = {}
            for index, device, a, p, i in self.memory_points:
                if index < step["start"]:
                    last[device] = a + p + i
                    continue
                if index > end:
                    break
                peaks[device] = max(peaks.get(device, last.get(device, 0)), a + p + i)
            for device, value in last.items():
                peaks.setdefault(device, value)
            result.append({"step": step["step"], "peak": peaks})
        return result
