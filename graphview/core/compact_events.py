"""Compact events: the kinds a recorded step makes by the thousand, made as tuples.

A recorded step of a 256-layer MLP makes about 11,600 events, most of them a dozen kinds (a node
made, run, freed; a tensor made or gone; a saved tensor packed, owned, released; an op, a module
entered and left). Made as a dict, each names its keys again: making one took 1.0 us where a
tuple of the same values takes 0.2, and a batch of them pickles in a quarter less time (9.8 ms
against 7.2 ms a step's batches). So the recorder makes these kinds as tuples, the kind first
and the values in :data:`LAYOUTS` order, and whoever reads them makes each the dict it stands for
with :func:`expand`: the reader of the runner's channel (graphview/core/channel.py), in its own
process, or the recorder itself for an emitter that takes only dicts (a list a test reads). The
dict is the event as the schema (graphview/core/events.py) and a trace hold it, key for key and
in the same order: nothing past the channel sees a tuple.

A layout's field is a key of the event, or:

* ``?key``: a key the event has only when its value is not None (``from_edge`` of a ``bw_node``
  that names the edge its gradient came by);
* ``+``, last: a dict whose items the event carries after the others (a tensor's value summary:
  ``shape`` and ``values`` or ``stats``), or None for none;
* ``*key``: a list of value summaries (a node's gradients), or None;
* ``-key``: a value summary, or None, that the event has only when it is not False (an
  ``accumulate`` event's ``increment`` and ``grad``: left out where the reader takes them from
  another event).

A value summary (``+``, ``-key`` or an item of ``*key``) may come as the values of a small tensor, still to
be summarized (see NOTE [Values sent to be summarized] in graphview/core/value_stats.py): made
here the summary they have.
"""

from __future__ import annotations

from graphview.core.value_stats import NotSentValues, summary_of_values

#: the fields of each compact kind, in the order of the event's keys (after ``ev``)
LAYOUTS: dict[str, tuple[str, ...]] = {
    "node": ("vid", "name", "next", "seq", "leaf", "custom", "line", "module"),
    "node_dead": ("vid",),
    "bw_node": ("bid", "vid", "*grads_in", "?from_edge"),
    "bw_node_done": ("bid", "vid", "*grads_out"),
    "tensor": ("tid", "version", "name", "kind", "shape", "dtype", "device", "requires_grad", "is_leaf",
               "grad_fn", "base", "line", "+"),
    "tensor_dead": ("tid",),
    "saved": ("sid", "bytes", "storage", "device", "kind", "shape", "dtype", "owner", "attr", "?recompute", "?src"),
    "own": ("sid", "owner", "attr"),
    "release": ("sid",),
    "op": ("oid", "op", "line", "module", "inputs", "outputs", "grad_fn", "mode", "inplace", "?recompute"),
    "module_enter": ("path", "type"),
    "module_exit": ("path",),
    "value": ("tid", "version", "reason", "+"),
    "accumulate": ("bid", "tid", "vid", "first", "-increment", "-grad"),
}


class NotCompact(ValueError):
    """A tuple that is not a compact event (an unknown kind, the wrong number of values, a
    summary that is no dict); the message says which."""


def _expander(kind: str, fields: tuple[str, ...]):
    keys = ("ev",) + tuple(field.lstrip("?*-") for field in fields if field != "+")
    optional = tuple(field[1:] for field in fields if field.startswith("?"))
    present = tuple(field[1:] for field in fields if field.startswith("-"))
    summaries = tuple(field[1:] for field in fields if field.startswith("*"))
    merged = fields[-1:] == ("+",)
    length = len(fields) + 1

    def expand(event) -> dict:
        if len(event) != length:
            raise NotCompact(f"a compact {kind} event of {len(event) - 1} values, not {length - 1}")
        if not merged:
            made = dict(zip(keys, event))
        else:
            made = dict(zip(keys, event[:-1]))
            extra = event[-1]
            if extra is not None:
                if type(extra) is tuple:
                    extra = _summarized(extra, kind)
                elif type(extra) is not dict:
                    raise NotCompact(f"a compact {kind} event whose last value is a {type(extra).__name__}, not a dict")
                made.update(extra)
        for key in summaries:
            listed = made[key]
            if type(listed) is list and tuple in map(type, listed):
                made[key] = [_summarized(item, kind) if type(item) is tuple else item for item in listed]
        for key in optional:
            if made[key] is None:
                del made[key]
        for key in present:
            value = made[key]
            if value is False:
                del made[key]
            elif type(value) is tuple:
                made[key] = _summarized(value, kind)
        return made

    return expand


def _summarized(sent: tuple, kind: str) -> dict:
    try:
        return summary_of_values(sent)
    except NotSentValues as exc:
        raise NotCompact(f"a compact {kind} event holding {exc}") from None


_EXPANDERS = {kind: _expander(kind, fields) for kind, fields in LAYOUTS.items()}


def expand(event) -> dict:
    """The event compact ``event`` (a tuple, or the list JSON makes of one) stands for;
    :class:`NotCompact` for one that is not a compact event."""
    kind = event[0] if event else None
    expander = _EXPANDERS.get(kind) if type(kind) is str else None
    if expander is None:
        raise NotCompact(f"a compact event of no compact kind ({str(kind)[:40]!r})")
    return expander(event)


def expanding(emit):
    """``emit`` for an emitter that takes dicts only: compact events made dicts first."""
    def emit_dicts(event) -> None:
        emit(_EXPANDERS[event[0]](event) if type(event) is tuple else event)

    return emit_dicts
