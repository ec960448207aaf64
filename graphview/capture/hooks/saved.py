"""Saved tensors: ``saved_tensors_hooks`` see every tensor autograd saves for backward.

The pack hook keeps ``t.detach()`` (keeping ``t`` would leak saved outputs through a C++ cycle)
in a handle whose weak reference reports the moment autograd drops it. The unpack hook
re-implements torch's in-place version check, which torch skips when hooks are installed, with
torch's exact message.
"""

from __future__ import annotations

import re
import weakref
from contextlib import ExitStack
from functools import partial

import torch
import torch.autograd.graph as autograd_graph
import torch.utils.checkpoint

from graphview.capture.identity import TensorIdentity
from graphview.capture.state import LIFE_KEY, TOKEN_KEY, VID_KEY, _Packed, tracing

try:
    from torch.utils._pytree import tree_leaves
except ImportError:  # (an older torch)
    def tree_leaves(tree):
        return list(tree) if isinstance(tree, (tuple, list)) else [tree]


class _Own:
    """What a script's own pack hook returned (None too), for its unpack hook."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value

_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


class SavedTensorHooks(TensorIdentity):
    """The saved-tensor mechanism."""

    def install_saved(self, stack: ExitStack) -> None:
        stack.enter_context(autograd_graph.saved_tensors_hooks(self._pack, self._unpack))
        hooks_class = autograd_graph.saved_tensors_hooks
        self.patch(stack, hooks_class, "__enter__", self._counting_scripts_hooks(hooks_class.__enter__))
        hook_class = getattr(torch.utils.checkpoint, "_recomputation_hook", None)
        if hook_class is not None:  # (a private class: where it is missing, recomputes go uncounted)
            self.patch(stack, hook_class, "__init__", self._counting_recompute(hook_class.__init__))
        frame_class = getattr(torch.utils.checkpoint, "_CheckpointFrame", None)
        hooks_stack = [getattr(torch._C._autograd, f"_{verb}_saved_tensors_default_hooks", None)
                       for verb in ("top", "pop", "push")]
        if frame_class is not None and hasattr(frame_class, "save_inputs") and all(hooks_stack):  # (private too)
            self.patch(stack, frame_class, "save_inputs", self._checkpoint_inputs_as_torch_keeps_them(
                frame_class.save_inputs))

    def _checkpoint_inputs_as_torch_keeps_them(self, original_save_inputs):
        """A non-reentrant checkpoint keeps its inputs for the recompute as saved tensors. With no
        saved-tensor hooks, torch unpacks such a tensor as the very object it was given; through
        any pack hook (the recorder's too) it unpacks a new tensor object each time. The recompute
        then runs the forward on inputs that are no longer one object where they were one: an
        nn.MultiheadAttention called as ``attn(x, x, x)`` tests ``query is key is value`` and takes
        its three-projection path instead of the one it took in the forward, so it saves other
        tensors and torch raises CheckpointError ("Recomputed values ... have different metadata").

        Where the recorder's pair is the innermost one (a script's own pair would change them in a
        plain run too), the inputs are kept as a plain run keeps them, with the recorder's pair off
        for that moment; they are still counted, as saved tensors held until the checkpoint's
        frame goes (what each handle in ``frame._graphview_inputs`` reports)."""
        recorder_ref = self._self_ref
        autograd = torch._C._autograd
        top_hooks = autograd._top_saved_tensors_default_hooks  # the innermost pair, or None
        pop_hooks, push_hooks = autograd._pop_saved_tensors_default_hooks, autograd._push_saved_tensors_default_hooks

        def save_inputs(frame, *args):
            recorder = recorder_ref()
            if recorder is None or recorder._stack is None or not recorder._active or tracing():
                return original_save_inputs(frame, *args)
            ours = top_hooks(True)
            if ours is None or ours[0] != recorder._pack or ours[1] != recorder._unpack:
                return original_save_inputs(frame, *args)
            pop_hooks()
            try:
                original_save_inputs(frame, *args)
            finally:
                push_hooks(*ours)
            frame._graphview_inputs = [recorder._pack(arg) for arg in args if isinstance(arg, torch.Tensor)]
            return None

        return save_inputs

    def _counting_recompute(self, original_init):
        """A non-reentrant checkpoint recomputes its forward inside backward under its own
        saved-tensor hooks, which keep what backward is about to need until it is unpacked: those
        tensors are held for backward as much as the forward's were (an nn.LSTM, checkpointed
        whole, holds all of its 301 KiB again during backward). Counted as ``saved`` events of
        the backward call, released when the tensor kept dies (its node has used it)."""
        recorder_ref = self._self_ref

        def __init__(hooks, *args, **kwargs):
            original_init(hooks, *args, **kwargs)
            pack_hook = hooks.pack_hook

            def pack(x):
                recorder = recorder_ref()
                if recorder is None or not recorder._active or not isinstance(x, torch.Tensor):
                    return pack_hook(x)
                kept = x.detach()  # what the checkpoint keeps (it detaches anything that needs grad)
                try:
                    return pack_hook(kept)
                finally:  # (its early stop raises once the last tensor needed is kept)
                    recorder._count_recomputed(kept)

            hooks.pack_hook = pack

        return __init__

    def _count_recomputed(self, kept: torch.Tensor) -> None:
        with self._lock:
            with self.at_work():
                sid = next(self._sids)
                event = self._saved_event(sid, kept)
                if event["kind"] == "input":  # detached by the checkpoint: a parameter's, by its storage
                    event["kind"] = "param" if event["storage"] in self._parameter_storages() else "activation"
                if self._recompute:
                    event["recompute"] = self._recompute[-1]
                self._emit_fn(event)
                self._recomputed_refs[sid] = weakref.ref(kept, partial(self._recomputed_gone, sid))

    def _recomputed_gone(self, sid: int, ref) -> None:
        self._recomputed_refs.pop(sid, None)
        self._release(sid)

    def _counting_scripts_hooks(self, original_enter):
        """A script's own ``saved_tensors_hooks`` (``with save_on_cpu():``, a pair that compresses
        or offloads) sit above the recorder's, and torch runs only the innermost pair: every saved
        tensor was hidden (0 B saved, a memory chart of nothing). Entered while recording, such a
        pair is pushed wrapped (:meth:`_counted`), wherever it was made. Torch's own pairs are not
        (checkpoint's hold nothing until the recompute, which :meth:`_counting_recompute` counts),
        except ``save_on_cpu``."""
        recorder_ref = self._self_ref
        scripts = (autograd_graph.saved_tensors_hooks, autograd_graph.save_on_cpu)

        def __enter__(hooks):
            recorder = recorder_ref()
            kind = type(hooks)
            if recorder is None or not recorder._active or (kind not in scripts and kind.__module__.startswith("torch")):
                return original_enter(hooks)
            pack_hook, unpack_hook = hooks.pack_hook, hooks.unpack_hook
            hooks.pack_hook, hooks.unpack_hook = recorder._counted(pack_hook, unpack_hook)
            try:
                return original_enter(hooks)  # (it pushes the pair it holds now)
            finally:
                hooks.pack_hook, hooks.unpack_hook = pack_hook, unpack_hook

        return __enter__

    def _counted(self, pack_hook, unpack_hook):
        """``pack_hook`` and ``unpack_hook`` that report each tensor as saved, with the bytes of the
        tensors the pack hook returned (each storage once; none: kept outside memory, 0 B), while
        the recorder is installed; the script's own pair alone before and after (the pair holds the
        recorder weakly, as every handle does)."""
        recorder_ref = self._self_ref

        def pack(t: torch.Tensor):
            recorder = recorder_ref()
            if recorder is None or recorder._stack is None or not recorder._active or tracing():
                return _Own(pack_hook(t))
            recorder.saved_devices.add(t.device.type)
            inner = pack_hook(t)
            kept = [leaf for leaf in tree_leaves(inner) if isinstance(leaf, torch.Tensor)]
            return recorder._pack(t, kept=kept, inner=_Own(inner))

        def unpack(packed):
            if isinstance(packed, _Packed):
                return unpack_hook(packed.inner.value)
            return unpack_hook(packed.value)

        return pack, unpack

    def _pack(self, t: torch.Tensor, kept: list | None = None, inner: "_Own | None" = None):
        """``kept``, ``inner``: what the script's own pack hook returned for ``t`` (see :meth:`_counted`),
        and the tensors in it."""
        if tracing():
            return t.detach()  # a fake tensor of a compile trace: nothing to count
        with self.at_work():
            sid = next(self._sids)
            # bytes, storage, device, kind, shape, dtype
            fields = self._saved_fields(sid, t, self._op_inputs)
            if inner is not None:
                fields = self._kept_fields(sid, t, fields, kept)
            recompute = self._recompute[-1] if self._recompute else None
            src = None
            gf = t.grad_fn
            token = None
            if gf is not None:
                metadata = gf.metadata
                token = metadata.setdefault(TOKEN_KEY, next(self._tokens))
                # the node that made its memory: a view's is its base's (a Linear saves the view
                # of its input that it reshaped; the memory is the layer before's output)
                base = t._base
                maker = base.grad_fn if base is not None and base.grad_fn is not None else gf
                src = maker.metadata.get(VID_KEY)
                # (none yet: the op's own result; an earlier recording's: unknown here)
                if src is not None and maker.metadata[LIFE_KEY].rec is not self._self_ref:
                    src = None
            version, output_nr, gf_name = t._version, t.output_nr, gf.name() if gf is not None else None
            self._emit_fn(("saved", sid, *fields, None, None, recompute, src))
        # what autograd gets back: detached as torch would, a subclass keeps its type
        # its finaliser reports the release (see NOTE [Deaths reported by finalisers] in state.py)
        if inner is not None:  # the script's hooks keep the tensor (or its copy): hold only what they made
            packed = _Packed(None, sid, version, token, output_nr, gf_name, weakref.ref(t), inner, self._self_ref)
        else:
            packed = _Packed(t.detach(), sid, version, token, output_nr, gf_name, weakref.ref(t), None, self._self_ref)
        return packed

    def _kept_fields(self, sid: int, t: torch.Tensor, fields: tuple, kept: list) -> tuple:
        """A ``saved`` event's ``fields`` (see :meth:`_saved_fields`) for ``t`` when the script's own
        pack hook keeps ``kept``: the memory of those (a CPU copy: its bytes, storage, device and
        dtype; all of their bytes), or none (a file it wrote)."""
        nbytes, storage, device, kind, shape, dtype = fields
        if [k for k in kept if k is not t]:  # kept elsewhere (a CPU copy)
            held = {}
            for k in kept:
                where = self._saved_fields(sid, k, None)
                held.setdefault((where[2], where[1]), where)
            first = next(iter(held.values()))  # its device and dtype; the bytes of all
            nbytes, storage, device, dtype = sum(w[0] for w in held.values()), first[1], first[2], first[5]
        elif not kept:  # the script's pack hook kept no tensor (a file)
            nbytes = 0
        return nbytes, storage, device, kind, shape, dtype

    def _release(self, sid: int) -> None:
        if self._active:  # after the run, the script's leftovers die with its module: not events
            self.emit(("release", sid))

    def _unpack(self, packed):
        if not isinstance(packed, _Packed):  # packed before the recorder started
            return packed
        current = packed.t._version
        if current != packed.version:
            raise RuntimeError(self._version_message(packed, current))
        return packed.t

    @staticmethod
    def _version_message(packed: _Packed, current: int) -> str:
        """torch's own message for a saved tensor modified in place (torch skips the check under hooks)."""
        t = packed.t
        node = torch._C._current_autograd_node()
        is_output = node is not None and packed.token is not None and node.metadata.get(TOKEN_KEY) == packed.token
        gf_name, output_nr = None, packed.output_nr
        if is_output:
            gf_name = packed.gf_name
        else:
            source = packed.source()
            if source is not None:
                gf = source.grad_fn
                gf_name = gf.name() if gf is not None else None
                output_nr = source.output_nr
            else:
                gf_name = packed.gf_name
        message = (
            "one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [{t.type()} {list(t.shape)}]"
        )
        if gf_name:
            message += f", which is output {output_nr} of {_BACKWARD_SUFFIX.sub('', gf_name)},"
        message += f" is at version {current}; expected version {packed.version} instead."
        if torch.is_anomaly_enabled():
            message += (" Hint: the backtrace further above shows the operation that failed to compute "
                        "its gradient. The variable in question was changed in there or anywhere later. Good luck!")
        else:
            message += (" Hint: enable anomaly detection to find the operation that failed to compute its "
                        "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
        return message
