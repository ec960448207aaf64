"""The oracle for memory answers: what torch itself holds for backward, read from torch alone.

A ``TorchDispatchMode`` sees every storage an aten op makes (outputs, views of them), keeping only
a weak reference to each. The storages that forward ops made (grad mode on: the forward, and a
checkpoint's recompute inside backward, which torch runs with grad on; backward's own kernels
run with it off) and that are still alive are what autograd's saved tensors and the script still
use. Parameters and buffers are made before the forward, so they are never counted; an op's copy
of a weight (an autocast cast) is, as it is memory the forward made.

This owes nothing to graphview's capture: it is what the process holds.
"""

from __future__ import annotations

import gc
from functools import partial

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class ForwardStorages(TorchDispatchMode):
    """Weak references to every storage forward ops made under this mode, and the highest bytes
    of them alive at once after any op (``peak``)."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, tuple[StorageWeakRef, int]] = {}
        self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if torch.is_grad_enabled():
            # a view or an in-place result is memory the op was given, not memory it made (the
            # transpose of a weight is the weight)
            given = {t.untyped_storage()._cdata for t in tree_leaves((args, kwargs))
                     if isinstance(t, torch.Tensor) and t.layout == torch.strided}
            for t in tree_leaves(out):
                if isinstance(t, torch.Tensor) and t.layout == torch.strided and t.device.type != "meta":
                    storage = t.untyped_storage()
                    key = storage._cdata
                    if key in given:
                        continue
                    known = self.live.get(key)
                    if known is None or known[0].expired():
                        self.live[key] = (StorageWeakRef(storage), storage.nbytes())
                        self._made(key)
        self.peak = max(self.peak, self._alive())
        return out

    def _made(self, key: int) -> None:
        """A storage the forward made is known by ``key`` (its address: a freed storage's may be reused)."""

    def _alive(self) -> int:
        gone = [key for key, (ref, _) in self.live.items() if ref.expired()]
        for key in gone:
            del self.live[key]
        return sum(nbytes for _, nbytes in self.live.values())

    def held(self) -> int:
        """Bytes of the storages forward ops made that are alive now."""
        gc.collect()
        return self._alive()


def held_by_torch(step) -> dict:
    """Run ``step()`` (a forward that returns a loss), then the loss's backward, under the mode:
    ``end_of_forward``: the bytes the forward's storages hold when it returned (the loss kept);
    ``peak``: the highest they held at once, backward's recomputes included."""
    mode = ForwardStorages()
    with mode:
        loss = step()
        end_of_forward = mode.held()
        loss.backward()
    return {"end_of_forward": end_of_forward, "peak": mode.peak}


class StoragesByModule(ForwardStorages):
    """:class:`ForwardStorages` that also notes, for each storage, the innermost of the watched
    modules whose forward was running when an op made it."""

    def __init__(self, modules: dict[str, torch.nn.Module]) -> None:
        super().__init__()
        self.running: list[str] = []
        self.owner: dict[int, str] = {}
        self.hooks = []
        for name, module in modules.items():
            self.hooks.append(module.register_forward_pre_hook(partial(self._enter, name)))
            self.hooks.append(module.register_forward_hook(self._leave))

    def _enter(self, name: str, *_) -> None:
        self.running.append(name)

    def _leave(self, *_) -> None:  # (returns None: the module's output stays its own)
        self.running.pop()

    def _made(self, key: int) -> None:
        if self.running:
            self.owner[key] = self.running[-1]
        else:  # made outside them all (the address may be a freed storage's that one made)
            self.owner.pop(key, None)

    def held_by(self) -> dict[str, int]:
        """Module name -> bytes of the storages made inside it that are alive now."""
        self.held()
        totals: dict[str, int] = {}
        for key, (_, nbytes) in self.live.items():
            if key in self.owner:
                totals[self.owner[key]] = totals.get(self.owner[key], 0) + nbytes
        return totals


def held_by_torch_in_modules(step, modules: dict[str, torch.nn.Module]) -> dict[str, int]:
    """Run ``step()`` (a forward) under the mode: module name -> the bytes of the storages its
    forward made (inside no other of ``modules`` nested in it) still alive when the forward returned."""
    mode = StoragesByModule(modules)
    try:
        with mode:
            loss = step()
            held = mode.held_by()
    finally:
        for hook in mode.hooks:
            hook.remove()
    del loss
    return held


def saved_while_called(step, module: torch.nn.Module) -> int:
    """Run ``step()`` (a forward), then its loss's backward, under ``saved_tensors_hooks``: the
    bytes of the storages autograd saved while ``module``'s forward ran (its ops' saved tensors, or
    a checkpoint's of the inputs it keeps for the recompute) that are alive when the forward
    returned, parameters apart, each storage once. Torch applies only the innermost hooks: inside
    a checkpoint its own hooks save nothing but handles, which hold no storage."""
    params = {p.untyped_storage().data_ptr() for p in module.parameters()}
    running: list[bool] = []
    packed: dict[int, tuple[StorageWeakRef, int]] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if running and storage.data_ptr() not in params:
            packed.setdefault(storage.data_ptr(), (StorageWeakRef(storage), storage.nbytes()))
        return t.detach()

    hooks = [module.register_forward_pre_hook(lambda *_: running.append(True)),
             module.register_forward_hook(lambda *_: running.pop() and None)]
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = step()
            gc.collect()
            held = sum(nbytes for ref, nbytes in packed.values() if not ref.expired())
            loss.backward()
    finally:
        for hook in hooks:
            hook.remove()
    return held


def saved_at_the_peak(step, model: torch.nn.Module, layers: dict[str, torch.nn.Module]) -> dict:
    """Run ``step()`` (a forward), then its loss's backward, reading torch's own bookkeeping of
    what autograd holds for backward: ``saved_tensors_hooks`` around both see every tensor
    autograd saves (a reentrant checkpoint's recompute too, in backward), each held until autograd
    drops it; a non-reentrant checkpoint's recompute keeps what it recomputes in its frame
    (``_CheckpointFrame.recomputed``) until the node that needs it unpacks it. Sampled at every
    pack, every pack of a non-reentrant recompute and after every aten op, parameters apart, each
    storage once: ``peak``, the highest total; ``recomputed``, the bytes of it that the recompute
    holds and the forward's saves do not; ``layer``, the one of ``layers`` recomputed then (its
    modules' forwards ran last)."""
    import weakref

    import torch.utils.checkpoint as checkpointing
    from torch.utils._python_dispatch import TorchDispatchMode

    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    packed: dict[int, tuple[int, int, bool]] = {}  # id(handle) -> (storage, bytes, saved in backward)
    frames = weakref.WeakSet()
    state = {"peak": 0, "recomputed": 0, "layer": None, "backward": False, "running": None}

    def sample() -> None:
        forward, again = {}, {}
        for key, nbytes, in_backward in list(packed.values()):
            (again if in_backward else forward)[key] = nbytes
        for frame in list(frames):
            for held in frame.recomputed.values():
                for t in list(held.values()):
                    storage = t.untyped_storage()
                    if storage.data_ptr() not in params:
                        again[storage.data_ptr()] = storage.nbytes()
        total = sum({**again, **forward}.values())
        if total > state["peak"]:
            state["peak"] = total
            state["recomputed"] = sum(n for key, n in again.items() if key not in forward)
            state["layer"] = state["running"] if state["backward"] else None

    def pack(t: torch.Tensor):
        kept = t.detach()
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            packed[id(kept)] = (storage.data_ptr(), storage.nbytes(), state["backward"])
            weakref.finalize(kept, packed.pop, id(kept), None)
        sample()
        return kept

    class AfterEachOp(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            sample()
            return out

    frame_init, hook_init = checkpointing._CheckpointFrame.__init__, checkpointing._recomputation_hook.__init__

    def watched_frame(frame, *args, **kwargs):
        frame_init(frame, *args, **kwargs)
        frames.add(frame)

    def sampled_recompute(hooks, *args, **kwargs):
        hook_init(hooks, *args, **kwargs)
        pack_hook = hooks.pack_hook

        def pack_sampled(x):
            try:
                return pack_hook(x)
            finally:  # (the last one raises to stop the recompute early, once it kept x)
                sample()

        hooks.pack_hook = pack_sampled

    def running(name: str, *_) -> None:
        state["running"] = name

    hooks = [inner.register_forward_pre_hook(partial(running, name))
             for name, layer in layers.items() for inner in layer.modules()]
    checkpointing._CheckpointFrame.__init__ = watched_frame
    checkpointing._recomputation_hook.__init__ = sampled_recompute
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda kept: kept), AfterEachOp():
            loss = step()
            state["backward"] = True
            loss.backward()
    finally:
        checkpointing._CheckpointFrame.__init__ = frame_init
        checkpointing._recomputation_hook.__init__ = hook_init
        for hook in hooks:
            hook.remove()
    return {"peak": state["peak"], "recomputed": state["recomputed"], "layer": state["layer"]}
