"""What a run's tensors, modules and autograd nodes are called, and which nodes sent NaN or Inf."""

from __future__ import annotations

#: the namespace of the names torch gives the nodes it makes in C++ (AccumulateGrad, CopySlices, GraphRoot)
_CPP_NAMESPACE = "torch::autograd::"


def node_title(name: str) -> str:
    """An autograd node's name as graphview shows it (its box, the words of the timeline, the
    inspector, the graph's data): ``CopySlices``, not ``torch::autograd::CopySlices`` (a box,
    elided to its width, showed "torch::autograd::…Slices"). The run keeps torch's own name."""
    return name[len(_CPP_NAMESPACE):] if name.startswith(_CPP_NAMESPACE) else name


class NameQueries:
    """Names from the run's tensors (``tensors``), the ops that made them (``op_nodes``,
    ``producers``), its backward calls (``backwards``) and its modules (``module_types``)."""

    def tensor_name(self, tid: int | None) -> str | None:
        info = self.tensors.get(tid) if tid is not None else None
        return info.get("name") if info else None

    def tensor_title(self, tid: int, grad_fn: int | None = None) -> str:
        """What to call a tensor: its name in the script; else, made by an op (``grad_fn``, its
        autograd node, or an op without grad), "output of linear"; else "tensor"."""
        name = self.tensor_name(tid)
        if name:
            return name
        op = self.op_nodes.get(grad_fn) if grad_fn is not None else None
        if op is not None and op.op:
            return f"output of {op.op}"
        made = self.producers.get(tid)  # an op without grad (under no_grad, or of no-grad inputs)
        return f"output of {made['op']}" if made is not None and made.get("op") else "tensor"

    def node_made_by(self, ev: dict) -> str | None:
        """The drawn node an ``op`` event made: its autograd node (``op<vid>``), or for an op without
        grad the node of its first output as it stands now."""
        if ev.get("grad_fn") is not None:
            return f"op{ev['grad_fn']}"
        outputs = ev.get("outputs") or ()
        return self._current_tensor_node.get(outputs[0][0]) if outputs else None

    def tensor_by_name(self, name: str) -> int | None:
        for tid, info in self.tensors.items():
            if info.get("name") == name:
                return tid
        return None

    def non_finite_out(self, vid: int, index: int) -> str | None:
        """Whether autograd node ``vid`` sent a gradient holding NaN or Inf by event ``index``, in
        its latest backward call: ``"first"`` where that call's NaN or Inf began (the first node
        in execution order to send one, as the Diagnostics finding says), ``"passed"`` downstream
        of it, else None."""
        op = self.op_nodes.get(vid)
        if op is None:
            return None
        for bid, ran in reversed(op.executed):
            if ran > index:
                continue
            call = self.backwards.get(bid)
            sent = call.non_finite.get(vid) if call is not None else None
            if sent is None or sent > index:
                return None
            return "first" if sent == min(call.non_finite.values()) else "passed"
        return None

    def module_label(self, path: str | None) -> str | None:
        """``encoder.layers.0.linear1 · Linear``: a module's path and, where recorded, its type
        (once, where the path is the type: a module called outside the model's tree)."""
        if not path:
            return path
        kind = self.module_types.get(path)
        return f"{path} · {kind}" if kind and kind != path else path
