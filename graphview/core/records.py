"""Records: the compact form events travel and are stored in (trace format version 2 and later).

A *record* is one line of JSON: an array ``[kind, v1, v2, ...]`` holding the values of the
kind's required fields (:data:`FIELDS`, the order of :data:`~graphview.core.events.SCHEMA`)
and, when the event has more (optional fields, value statistics), an object of them last. A
record may also carry the events that came with it, under keys that start with ``+`` (no event
field does), so that one record tells what the schema spreads over several events:

``+with``   records that came just before an ``op``, a ``value`` or a ``bw_node`` (what the op made:
            its saved tensors, its tensors and their nodes, the module it entered; the ``tensor``
            an optimizer's ``value`` updates): they come first
``+own``    ``[[sid, attr], ...]`` of a ``node``: ``own`` events of the saved tensors it holds
``+in``     records that came while a ``bw_node`` ran (a leaf's ``accumulate``, released tensors)
``+done``   the ``grads_out`` of the ``bw_node_done`` that ended that ``bw_node``
``+gone``   ``[letters, ids]``: what died just after (``r`` release sid, ``n`` node_dead vid,
            ``t`` tensor_dead tid), one letter an id, in order
``+enter``  ``[path, type]`` of a ``module_exit``: the ``module_enter`` that came next

A summary's full ``values`` of at least :data:`PACK_MIN` floats travel as the base64 of their
little-endian float32 bytes (``"f4"``), or float64 (``"f8"``) where float32 would not give back
the very same floats, in place of ``values`` (in the summary slots of :data:`SUMMARY_SLOTS`):
encoding a float as JSON costs about a microsecond (its shortest decimal form), and a 256-layer
MLP's step sent 33,000 of them (its biases' gradients and new values), most of the encoding's
time. Reading turns them back into the same ``values`` list of floats (trace version 3).

:func:`expand` gives back exactly the events, in the order they came: every index a view knows
(an event's position in its run) is the same as in a version-1 trace, which holds one event a
line as an object. A version-2 line may also be such an object (an event whose required fields
are not all there). :class:`RecordBuffer` is the writer's side: events go in as they come,
merged into the record before them where the order allows, and are encoded as JSON in bulk at
the writer's flush points, never one at a time on the recorder's path (only a summary's full
values are packed as its event comes).

A record is someone else's data, as any trace line is: :func:`expand` checks its shape (a list,
a known kind, as many values as the kind has fields, the parts' shapes) and raises
:class:`~graphview.core.events.SchemaError`; the events it gives are then checked as any event is.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from json.encoder import c_make_encoder, encode_basestring_ascii
from operator import is_ as operator_is

from graphview.core.events import FULL_VALUES_MAX, SCHEMA, SchemaError

#: kind -> its required fields, in the schema's order: the values of a record after its kind
FIELDS: dict[str, tuple[str, ...]] = {kind: tuple(name for name in fields if not name.endswith("?"))
                                      for kind, fields in SCHEMA.items()}
_FIELD_SETS = {kind: frozenset(names) | {"ev"} for kind, names in FIELDS.items()}
#: kind -> the keys of a record's first values: "ev" (the kind), then its fields
_KEYS = {kind: ("ev", *names) for kind, names in FIELDS.items()}
#: the kinds that die, the letter of each in ``+gone`` and the field of its id
_GONE = {"release": ("r", "sid"), "node_dead": ("n", "vid"), "tensor_dead": ("t", "tid")}
_GONE_KINDS = {letter: (kind, field) for kind, (letter, field) in _GONE.items()}
#: records that the next record of another kind takes into its ``+with``, if it is one of the takers
#: (the events of the run's boundaries, its output and its errors stay on lines of their own)
_WITH_KINDS = frozenset({"saved", "tensor", "node", "module_enter", "module_exit", "mode", "name"})
_WITH_TAKERS = frozenset({"op", "value", "bw_node"})
#: records a running ``bw_node`` takes into its ``+in``
_IN_KINDS = frozenset({"accumulate", "release", "node_dead", "tensor_dead"})
#: the kinds of event that may go into the record before them
_MERGING = frozenset(_GONE) | _IN_KINDS | {"bw_node_done", "own", "module_enter"}
#: ids one ``+gone`` holds at most (a freed graph of 10^5 nodes is a few records, not one long line;
#: a reader refuses more: three bytes of a line could otherwise make an event)
GONE_MAX = 4096
#: the order of a record's parts: a part may be added only after the parts of a later stage
_OWN, _IN, _DONE, _GONE_STAGE, _ENTER = 1, 2, 3, 4, 5
#: every part a record may have, for a record made by someone else
_PARTS = frozenset({"+with", "+own", "+in", "+done", "+gone", "+enter"})


#: kind -> where its value summaries are: "" the event itself (its ``values`` or ``stats``), a key
#: (a summary or None), or a key and "[]" (a list of summaries or Nones)
SUMMARY_SLOTS: dict[str, tuple[tuple[str, bool], ...]] = {
    "tensor": (("", False),), "value": (("", False),),
    "bw_node": (("grads_in", True),), "bw_node_done": (("grads_out", True),),
    "backward_start": (("seeds", True),), "accumulate": (("increment", False), ("grad", False)),
    "tensor_grad": (("grad", False),), "grad_result": (("grad", False),), "step_end": (("result", False),),
    "grad_reset": (("value", False),),
}
#: the fewest values worth packing (below, their decimal form costs less than the packing)
PACK_MIN = 8
#: a packed summary's key -> the struct letter and the bytes of one value
_PACKED = {"f4": ("f", 4), "f8": ("d", 8)}


def _packed_values(values: list) -> tuple[str, str] | None:
    """("f4" or "f8", the base64 of ``values`` (PACK_MIN to FULL_VALUES_MAX of them) as
    little-endian floats) where that gives back exactly these floats; None for a list that holds
    anything but floats."""
    if set(map(type, values)) != _ONLY_FLOATS:
        return None
    count = len(values)
    structs = _STRUCTS.get(count)
    if structs is None:
        structs = _STRUCTS[count] = (struct.Struct(f"<{count}f"), struct.Struct(f"<{count}d"))
    try:
        data = structs[0].pack(*values)
        if structs[0].unpack(data) == tuple(values):
            return "f4", base64.b64encode(data).decode("ascii")
    except OverflowError:  # beyond float32's range
        pass
    return "f8", base64.b64encode(structs[1].pack(*values)).decode("ascii")


_ONLY_FLOATS = {float}
#: count -> the float32 and float64 layouts of that many values (at most FULL_VALUES_MAX of each)
_STRUCTS: dict[int, tuple[struct.Struct, struct.Struct]] = {}


def _pack_summary(summary: object) -> object:
    """``summary`` with its full values packed (a copy), or itself where there is nothing to pack."""
    if type(summary) is not dict:
        return summary
    values = summary.get("values")
    if type(values) is not list or not PACK_MIN <= len(values) <= FULL_VALUES_MAX:
        return summary
    packed = _packed_values(values)
    if packed is None:
        return summary
    copy = {key: value for key, value in summary.items() if key != "values"}
    copy[packed[0]] = packed[1]
    return copy


def pack_values(event: dict) -> dict:
    """``event`` with the full values of its summaries packed (see the module's docstring): a
    copy where anything was packed, the event itself otherwise (it is never changed)."""
    changed = None
    for key, many in SUMMARY_SLOTS.get(event.get("ev"), ()):
        if not key:  # (the kinds summarized in themselves have no other slot)
            return _pack_summary(event)
        held = event.get(key)
        if held is None:
            continue
        if many:
            if type(held) is not list:
                continue
            packed = list(map(_pack_summary, held))
            if all(map(operator_is, packed, held)):
                continue
        else:
            packed = _pack_summary(held)
            if packed is held:
                continue
        if changed is None:
            changed = dict(event)
        changed[key] = packed
    return event if changed is None else changed


def _unpack_summary(summary: object) -> None:
    """Put back the ``values`` of a summary whose values were packed (in place)."""
    if type(summary) is not dict:
        return
    for key, (letter, size) in _PACKED.items():
        text = summary.get(key)
        if text is None:
            continue
        if "values" in summary or type(text) is not str or len(text) > _PACKED_TEXT_MAX:
            raise SchemaError(f"a summary with a bad {key!r}")
        try:  # (what base64.b64decode(text, validate=True) does, without its checks of the argument's type)
            data = binascii.a2b_base64(text, strict_mode=True)
        except (binascii.Error, ValueError):
            raise SchemaError(f"a summary whose {key!r} is not base64") from None
        count, rest = divmod(len(data), size)
        if rest:
            raise SchemaError(f"a summary whose {key!r} is not a whole number of values")
        del summary[key]
        layout = _LAYOUTS.get((letter, count))
        if layout is None:
            layout = _LAYOUTS[(letter, count)] = struct.Struct(f"<{count}{letter}")
        summary["values"] = list(layout.unpack(data))


#: (struct letter, count) -> the layout of that many little-endian values (a packed text holds at most
#: _PACKED_TEXT_MAX characters: a few hundred layouts at most)
_LAYOUTS: dict[tuple[str, int], struct.Struct] = {}
#: the longest packed text a reader takes: FULL_VALUES_MAX float64 values (a summary holds no more)
_PACKED_TEXT_MAX = 4 * (8 * FULL_VALUES_MAX + 2) // 3


def _unpack_values(event: dict, slots: tuple) -> None:
    """Put back the ``values`` of ``event``'s summaries (in its kind's ``slots``) that were packed (in place)."""
    for key, many in slots:
        if not key:
            _unpack_summary(event)
        elif many:
            held = event.get(key)
            if type(held) is list:
                for summary in held:
                    _unpack_summary(summary)
        else:
            _unpack_summary(event.get(key))


def event_encoder():
    """``event -> one line of JSON`` (compact, ASCII, anything unknown as its ``str``).

    json's C encoder made once and called directly: ``JSONEncoder.encode`` builds it anew for
    every call and tracks containers against cycles (events are trees), which cost more than
    encoding a small event."""
    if c_make_encoder is None:  # a Python without json's C speedups
        return json.JSONEncoder(separators=(",", ":"), default=str, check_circular=False).encode
    chunks = c_make_encoder(None, str, encode_basestring_ascii, None, ":", ",", False, False, True)
    join = "".join
    return lambda event: join(chunks(event, 0))


def pack(event: dict) -> list | dict:
    """The record of ``event``; the event itself where a required field is missing (or it is
    of no known kind): a version-2 line may be an event object too."""
    kind = event.get("ev")
    names = FIELDS.get(kind) if type(kind) is str else None
    if names is None:
        return event
    try:
        record = [kind, *map(event.__getitem__, names)]
    except KeyError:
        return event
    if len(event) > len(names) + 1:
        required = _FIELD_SETS[kind]
        record.append({key: value for key, value in event.items() if key not in required})
    return record


def _maker(keys: tuple[str, ...]):
    """``record -> event`` for a record whose first values are those of ``keys``: one dict display,
    written out for the kind (half the time of ``dict(zip(keys, record))``, 10^6 times for a big trace)."""
    source = "def make(r):\n    return {" + ", ".join(f"{key!r}: r[{i}]" for i, key in enumerate(keys)) + "}\n"
    env: dict = {}
    exec(source, env)  # noqa: S102 - code written here from the schema's field names: no input in it
    return env["make"]


#: kind -> (the maker of its events from its records, how many values a record's first part holds,
#: its summary slots or None), for the kinds read so far (each made at its kind's first record: a
#: trace holds a dozen kinds)
_MAKERS: dict[str, tuple] = {}


def _first_maker(record: list) -> tuple:
    """The maker of the events of ``record``'s kind, made now; :class:`SchemaError` for a record of no kind."""
    if record and type(record[0]) is str:
        keys = _KEYS.get(record[0])
        if keys is None:
            raise SchemaError(f"unknown kind of event {record[0][:40]!r}")
        maker = _MAKERS[record[0]] = (_maker(keys), len(keys), SUMMARY_SLOTS.get(record[0]))
        return maker
    raise SchemaError("not an event (a JSON object) nor a record (an array that starts with a kind)")


def expand(record: object) -> list[dict]:
    """The events of one record (a line of a version-2 trace), in the order they came."""
    events: list[dict] = []
    packed: list = []  # (event, its kind's summary slots) of the events that may hold packed values, in order
    _expand_into(record, events, packed, nested=False)
    for event, slots in packed:  # (after the record's shape is checked whole, in the order of the events)
        _unpack_values(event, slots)
    return events


def _expand_into(record: object, events: list, packed: list, nested: bool) -> None:
    """Add the events of ``record`` to ``events``, and to ``packed`` those of a kind with summary
    slots, with the slots (their values are put back once the whole record's shape is checked)."""
    if type(record) is not list:
        if type(record) is dict:
            kind = record.get("ev")  # (an event object's kind may be a list or an object: the checker refuses it)
            slots = SUMMARY_SLOTS.get(kind) if type(kind) is str else None
            if slots is not None:
                packed.append((record, slots))
            events.append(record)
            return
        raise SchemaError("not an event (a JSON object) nor a record (an array that starts with a kind)")
    try:
        make, count, slots = _MAKERS[record[0]]
    except (IndexError, KeyError, TypeError):  # (no first value, a kind not read yet, a value that is no key)
        make, count, slots = _first_maker(record)
    kind = record[0]
    if len(record) == count:
        event = make(record)
        if slots is not None:
            packed.append((event, slots))
        events.append(event)
        return
    extras = record[-1]
    if len(record) != count + 1 or type(extras) is not dict:
        raise SchemaError(f"{kind} record with {len(record) - 1} values for the kind's {count - 1} fields")
    event = make(record)
    parts = None
    for key, value in extras.items():
        if type(key) is not str or key in event:
            raise SchemaError(f"{kind} record with a field twice ({str(key)[:40]!r})")
        if key[:1] != "+":
            event[key] = value
        elif key not in _PARTS or (nested and key in ("+with", "+in")):
            raise SchemaError(f"{kind} record with an unknown part {key[:40]!r}")
        elif parts is None:
            parts = {key: value}
        else:
            parts[key] = value
    if parts is None:
        if slots is not None:
            packed.append((event, slots))
        events.append(event)
    else:
        _with_parts(kind, slots, event, parts, events, packed)


def _with_parts(kind: str, slots, event: dict, parts: dict, events: list, packed: list) -> None:
    """``event`` (of ``kind``, whose summary slots are ``slots``) and the events its record's
    ``parts`` carry, in the order they came (see _expand_into)."""
    for nested in _records(parts.get("+with"), kind, "+with"):
        _expand_into(nested, events, packed, nested=True)
    if slots is not None:
        packed.append((event, slots))
    events.append(event)
    if "+own" in parts:
        owns = parts["+own"]
        if kind != "node" or type(owns) is not list or not all(type(o) is list and len(o) == 2 for o in owns):
            raise SchemaError(f"{kind} record with a bad '+own' part")
        owner = event.get("vid")
        events.extend([{"ev": "own", "sid": sid, "owner": owner, "attr": attr} for sid, attr in owns])
    for nested in _records(parts.get("+in"), kind, "+in"):
        _expand_into(nested, events, packed, nested=True)
    if "+done" in parts:
        if kind != "bw_node":
            raise SchemaError(f"{kind} record with a '+done' part")
        done = {"ev": "bw_node_done", "bid": event.get("bid"), "vid": event.get("vid"), "grads_out": parts["+done"]}
        packed.append((done, SUMMARY_SLOTS["bw_node_done"]))
        events.append(done)
    if "+gone" in parts:
        gone = parts["+gone"]
        if (type(gone) is not list or len(gone) != 2 or type(gone[0]) is not str or type(gone[1]) is not list
                or len(gone[0]) != len(gone[1]) or len(gone[1]) > GONE_MAX):
            raise SchemaError(f"{kind} record with a bad '+gone' part")
        for letter, ident in zip(*gone):
            what = _GONE_KINDS.get(letter)
            if what is None:
                raise SchemaError(f"{kind} record with a bad '+gone' part (an unknown letter)")
            events.append({"ev": what[0], what[1]: ident})
    if "+enter" in parts:
        enter = parts["+enter"]
        if kind != "module_exit" or type(enter) is not list or len(enter) != 2:
            raise SchemaError(f"{kind} record with a bad '+enter' part")
        events.append({"ev": "module_enter", "path": enter[0], "type": enter[1]})


def _records(value: object, kind: str, part: str) -> list:
    if value is None:
        return []
    if type(value) is not list or (part == "+with" and kind not in _WITH_TAKERS) or (part == "+in" and kind != "bw_node"):
        raise SchemaError(f"{kind} record with a bad '{part}' part")
    return value


class RecordBuffer:
    """Events on their way to a trace or the event channel, held as records until the writer's
    next flush point (:meth:`take`, which encodes them all).

    :meth:`add` merges an event into the record before it where the order of events allows
    (see the parts in this module's docstring); :attr:`events` and :attr:`records` count what
    went in and what came out."""

    __slots__ = ("_records", "_last", "_last_kind", "_stage", "_parts", "_with_from", "_dumps", "events", "records")

    def __init__(self) -> None:
        self._records: list = []
        self._dumps = event_encoder()
        self.events = 0
        self.records = 0
        self._forget()

    def _forget(self) -> None:
        self._last = None  # the last record, while events may still merge into it
        self._last_kind = None
        self._stage = 0
        self._parts: dict | None = None  # its object of extra fields and parts, once it has one
        self._with_from = len(self._records)  # where the records an op may take into +with begin

    def __len__(self) -> int:
        return len(self._records)

    def add(self, event: dict) -> None:
        self.events += 1
        kind = event.get("ev")
        if kind in SUMMARY_SLOTS:
            event = pack_values(event)
        if kind in _MERGING and self._last is not None and self._merged(kind, event, self._last):
            return
        names = FIELDS.get(kind) if type(kind) is str else None
        record = pack(event) if names is None or len(event) != len(names) + 1 else [kind, *map(event.get, names)]
        records = self._records
        if type(record) is list:
            if kind in _WITH_TAKERS and self._with_from < len(records):
                taken = records[self._with_from:]
                del records[self._with_from:]
                self._parts_of(record)["+with"] = taken
            self._last, self._last_kind, self._stage = record, kind, 0
            self._parts = record[-1] if len(record) > len(names) + 1 else None
        else:
            self._last = self._last_kind = None
        records.append(record)
        if kind not in _WITH_KINDS:
            self._with_from = len(records)

    def _parts_of(self, record: list) -> dict:
        if len(record) > len(FIELDS[record[0]]) + 1:
            return record[-1]
        parts: dict = {}
        record.append(parts)
        return parts

    def _merged(self, kind: str, event: dict, last: list) -> bool:
        """Whether ``event`` went into ``last`` (the record before it) as one of its parts."""
        last_kind, stage = self._last_kind, self._stage
        if last_kind == "bw_node" and stage < _DONE:
            if kind == "bw_node_done" and len(event) == 4 and event["vid"] == last[2] and event["bid"] == last[1]:
                self._part()["+done"] = event["grads_out"]
                self._stage = _DONE
                return True
            if kind in _IN_KINDS:
                parts = self._part()
                inside = parts.get("+in")
                if inside is None:
                    inside = parts["+in"] = []
                inside.append(pack(event))
                self._stage = _IN
                return True
            return False
        gone = _GONE.get(kind)
        if gone is not None:
            if len(event) != 2 or stage > _GONE_STAGE:
                return False
            parts = self._part()
            held = parts.get("+gone")
            if held is None:
                parts["+gone"] = [gone[0], [event[gone[1]]]]
            elif len(held[1]) < GONE_MAX:
                held[0] += gone[0]
                held[1].append(event[gone[1]])
            else:
                return False
            self._stage = _GONE_STAGE
            return True
        if kind == "own":
            if last_kind != "node" or stage > _OWN or len(event) != 4 or event["owner"] != last[1]:
                return False
            parts = self._part()
            owns = parts.get("+own")
            if owns is None:
                owns = parts["+own"] = []
            owns.append([event["sid"], event["attr"]])
            self._stage = _OWN
            return True
        if kind == "module_enter" and last_kind == "module_exit" and stage < _ENTER and len(event) == 3:
            self._part()["+enter"] = [event["path"], event["type"]]
            self._stage = _ENTER
            return True
        return False

    def _part(self) -> dict:
        if self._parts is None:
            self._parts = self._parts_of(self._last)
        return self._parts

    def take(self, keep_open: bool = False) -> str:
        """The records held, encoded: one JSON line each, each ending in a newline ("" if none).

        ``keep_open``: keep the records that events still to come may merge into (a ``bw_node``
        waiting for its end, the records waiting for the op that made them): what a writer does
        at a flush point of its own clock, where nothing depends on the events being out.

        The records leave the buffer before they are encoded: an event that a finaliser adds
        meanwhile (see NOTE [Deaths reported by finalisers] in capture/state.py) goes into a new
        record, and if encoding fails (a Stop raised in it, no memory left) they are put back."""
        records = self._records
        cut = len(records)
        if keep_open:
            cut = self._with_from
            if self._last_kind == "bw_node" and self._stage < _DONE:
                cut = min(cut, len(records) - 1)
        if not cut:
            return ""
        if cut == len(records):
            self._records = []
            self._forget()
        else:
            self._records = records[cut:]
            del records[cut:]
            self._with_from -= cut
        try:
            text = "\n".join(map(self._dumps, records)) + "\n"
        except BaseException:
            records.extend(self._records)
            self._records = records
            self._forget()
            raise
        self.records += len(records)
        return text

    def first_line(self) -> str:
        """The first record held, encoded (no newline): for writing one record at a time."""
        return self._dumps(self._records[0])

    def drop_first(self) -> None:
        """Drop the first record held (written by itself)."""
        del self._records[0]
        self.records += 1
        self._forget()
