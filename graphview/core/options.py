"""Run options: the toggles a user flips between runs. Plain data, shared by CLI and runner."""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field

#: steps of a step script the app runs when it opens one, and every ``graphview`` command (record,
#: export, check, diff) by default: a trace or an export holds the run the user watched, and a graph
#: kept from step to step or a gradient growing across optimizer steps shows only after a first step
APP_STEPS = 3
GRAD_MODES = ("grad", "no_grad", "inference_mode")
#: the grad modes in which an op makes no graph (its outputs get no grad_fn)
NO_GRAPH_MODES = frozenset(GRAD_MODES[1:])
AUTOCAST_DTYPES = ("bfloat16", "float16")  # torch.autocast's dtypes (float16 needs an accelerator)


#: :meth:`RunOptions.label` of options that change nothing
DEFAULT_LABEL = "default"


@dataclass
class RunOptions:
    retain_graph: bool = False  # force retain_graph=True on every backward
    create_graph: bool = False  # force create_graph=True on every backward
    detach_at: list[str] = field(default_factory=list)  # "op:N", "line:N" or a module path
    grad_mode: str = "grad"  # forward grad mode: grad | no_grad | inference_mode
    accumulate: bool = False  # step scripts: do not zero grads between steps
    device: str | None = None  # torch.set_default_device(...) before the script runs
    steps: int = 1  # step scripts: how many times step() is called
    args: list[str] = field(default_factory=list)  # the script's arguments: sys.argv[1:]
    # what-if memory: module paths (``encoder.layers.*``) whose forward runs under
    # torch.utils.checkpoint.checkpoint(..., use_reentrant=False)
    checkpoint: list[str] = field(default_factory=list)
    autocast: str | None = None  # the forward under torch.autocast(device_type, dtype=...)
    save_on_cpu: bool = False  # each step under torch.autograd.graph.save_on_cpu()

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "RunOptions":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def validate(self) -> None:
        if self.grad_mode not in GRAD_MODES:
            raise ValueError(f"grad mode must be one of {', '.join(GRAD_MODES)}, not {self.grad_mode!r}")
        if self.steps < 1:
            raise ValueError(f"--steps must be at least 1, not {self.steps}")
        for spec in self.detach_at:
            parse_detach_spec(spec)
        for pattern in self.checkpoint:
            check_module_pattern(pattern)
        if self.autocast is not None and self.autocast not in AUTOCAST_DTYPES:
            raise ValueError(f"--autocast must be one of {', '.join(AUTOCAST_DTYPES)}, not {self.autocast!r}")

    def label(self) -> str:
        """A short label for this run's options, e.g. ``retain_graph=on, detach at fc2``."""
        parts = []
        if self.retain_graph:
            parts.append("retain_graph=on")
        if self.create_graph:
            parts.append("create_graph=on")
        if self.grad_mode != "grad":
            parts.append(self.grad_mode)
        for spec in self.detach_at:
            parts.append(f"detach at {spec}")
        for pattern in self.checkpoint:
            parts.append(f"checkpoint {pattern}")
        if self.autocast:
            parts.append(f"autocast {self.autocast}")
        if self.save_on_cpu:
            parts.append("save_on_cpu")
        if self.accumulate:
            parts.append("accumulate")
        if self.device:
            parts.append(self.device)
        if self.args:
            parts.append("args " + args_text(self.args))
        return ", ".join(parts) or DEFAULT_LABEL


def args_text(args: list[str]) -> str:
    """The arguments as a shell would show them: ``--lr 0.1 --name 'my run'``."""
    return shlex.join(args)


def parse_args_text(text: str) -> list[str]:
    """What a shell makes of ``text`` (the window's Arguments field); raises ValueError for an
    unclosed quote."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"arguments: {exc} in {text!r}") from None


def parse_detach_spec(spec: str) -> tuple[str, object]:
    """``"op:12"`` -> ("op", 12), ``"line:7"`` -> ("line", 7), ``"fc2"`` -> ("module", "fc2")."""
    spec = spec.strip()
    if not spec:
        raise ValueError("empty --detach-at value")
    kind, _, rest = spec.partition(":")
    if kind in ("op", "line") and rest:
        try:
            return kind, int(rest)
        except ValueError:
            raise ValueError(f"--detach-at {spec!r}: expected a number after '{kind}:'") from None
    return "module", spec


def check_module_pattern(pattern: str) -> str:
    """A ``--checkpoint`` value: a module path (``encoder.layers.0``), ``*`` standing for one
    part of it (``encoder.layers.*``); raises ValueError for an empty one."""
    pattern = pattern.strip()
    if not pattern or any(not part for part in pattern.split(".")):
        raise ValueError(f"--checkpoint {pattern!r}: expected a module path such as encoder.layers.0 "
                         "or encoder.layers.*")
    return pattern


def module_matches(pattern: str, path: str) -> bool:
    """Whether module ``path`` is what ``pattern`` names: the same parts, ``*`` matching any one part
    (``encoder.layers.*`` matches ``encoder.layers.0``, not ``encoder.layers.0.linear1``)."""
    want, have = pattern.strip().split("."), path.split(".")
    return len(want) == len(have) and all(w == "*" or w == h for w, h in zip(want, have))
