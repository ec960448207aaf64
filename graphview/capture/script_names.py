"""Names for tensors: the script's variables that hold them (``h``), and the short lists and dicts
its variables hold (``feats[1]``, ``batch['ids']``).

The recorder looks for the names of the tensors it has not named yet before each op it records
(``TensorIdentity.flush_names``), in the script's frames on the stack and its module's globals.
That is a look before every op: a 256-layer MLP's forward makes 514, each with a result waiting for
a name for a few ops. So the look is cheap where nothing can be found:

* a scope whose values are none of the tensors looked for is passed over in one C call
  (``isdisjoint`` over the ids of its values);
* the containers of a scope (its lists, tuples and dicts) are found once for as long as its
  variables hold the same objects (:class:`ContainersSeen`), not by a loop over all of its
  variables at every op; their items are read each time (a list the script appends to);
* a scope seen twice (the module's globals: a frame's and the module's own) is read once.

Nothing of the script's is kept: the containers are remembered by their variables' names.
"""

from __future__ import annotations

import torch

#: a list, tuple or dict of the script's holding more items than this is not looked into for names
CONTAINER_NAMES_MAX = 32
_CONTAINERS = (list, tuple, dict)
#: scopes whose containers are remembered at once (frames come and go: the oldest are forgotten)
_SCOPES_REMEMBERED = 64


def script_scopes(script: str, frame, extra_scopes: list[dict], depth: int = 16) -> list[dict]:
    """The namespaces to look in, first to last: ``extra_scopes`` (module globals), then the
    script's frames from ``frame`` outwards, the outermost first (the caller's variable, ``inp``,
    wins over a callee's parameter, ``t``); each namespace once."""
    frames = []
    f = frame
    while f is not None and depth > 0:
        if f.f_code.co_filename == script:
            try:
                frames.append(f.f_locals)
            except Exception:  # noqa: BLE001 - exotic frames
                pass
        f = f.f_back
        depth -= 1
    frames.reverse()
    scopes, seen = [], set()
    for scope in (*extra_scopes, *frames):
        if id(scope) not in seen:
            seen.add(id(scope))
            scopes.append(scope)
    return scopes


def bound(scope: dict):
    """(name, tensor) for the tensors a scope's variables hold (looked at only where the ids of its
    values hold one looked for: ``isdisjoint`` over them, C calls only)."""
    for name, value in list(scope.items()):
        if isinstance(value, torch.Tensor) and not name.startswith("__"):
            yield name, value


class ContainersSeen:
    """The names of each scope's variables that hold a container worth looking into, found again
    only when the scope's variables change (a name bound, rebound or deleted)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[int, tuple] = {}  # id(scope) -> (its keys, their values' ids and types, container names)

    def names_in(self, scope: dict) -> list[str]:
        # (the types too: a scope made anew at a freed one's address, holding a list where the
        # other held an object now freed, at the same address, is not taken for the other)
        keys, ids, types = tuple(scope), tuple(map(id, scope.values())), tuple(map(type, scope.values()))
        seen = self._seen.get(id(scope))
        if seen is not None and seen[0] == keys and seen[1] == ids and seen[2] == types:
            return seen[3]
        # (an empty one too: the script may fill it while its variables stay the same)
        names = [name for name, value in scope.items() if type(value) in _CONTAINERS and not name.startswith("__")]
        if len(self._seen) >= _SCOPES_REMEMBERED:
            self._seen.clear()
        self._seen[id(scope)] = (keys, ids, types, names)
        return names

    def items(self, scope: dict):
        """(``feats[1]``, tensor) for the tensors in a scope's short lists and tuples, and
        (``batch['ids']``, tensor) in its short dicts with string keys: a micro-batch taken from a
        list (``model(feats[micro])``) has no variable of its own."""
        for name in self.names_in(scope):
            value = scope.get(name)
            kind = type(value)
            if (kind is not list and kind is not tuple and kind is not dict) or not value \
                    or len(value) > CONTAINER_NAMES_MAX:
                continue
            if not isinstance(next(iter(value.values())) if kind is dict else value[0], torch.Tensor):
                continue  # (numbers, names: a container of tensors starts with one)
            for key, item in (value.items() if kind is dict else enumerate(value)):
                if isinstance(item, torch.Tensor) and isinstance(key, (int, str)):
                    yield f"{name}[{key!r}]", item
