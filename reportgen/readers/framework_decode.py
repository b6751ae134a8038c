"""A whole framework trace decoded straight into the fields the column-wise path reads (msgspec).

orjson makes a dict per event and per ``args`` with every key of the file, which the column-wise path
(``readers.framework``) then reads back with ``dict.get``, a dozen lookups per event. msgspec decodes
the same text into small structs holding only those fields, skipping the rest unread, and the columns
come out with ``attrgetter`` (medium benchmark profile, 465 files, 332,000 events: see
benchmarks/HISTORY.md). The values are the ones orjson or the stdlib parser gives for the same text
(integers of any size stay exact, as with the stdlib parser); a text the structs do not fit (an event
that is not an object, ``args`` that is not an object, a document that is not an array, NaN, a lone
surrogate, any malformed JSON) gives None, and the caller reads the file the usual way, which notes
what it finds. msgspec does not check the UTF-8 of the strings it skips: a text that is not valid UTF-8
gives None too, so the usual path notes its replaced bytes.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Union

try:  # optional: without it every file takes the dict path
    import msgspec
except ImportError:  # pragma: no cover - msgspec is a declared dependency
    msgspec = None

if msgspec is not None:
    UNSET = msgspec.UNSET

    class EventArgs(msgspec.Struct, gc=False):  # gc=False: decoded JSON holds no reference cycle
        """An event's ``args``: the keys the reader uses (an absent key holds its default)."""

        step_num: Any = None
        pid: Any = None
        num_workers: Any = None
        pin_memory: Any = None
        name: Any = UNSET  # a metadata event's process name: UNSET where the key is absent
        start_time_since_epoch_in_micros: Any = None

    class Event(msgspec.Struct, gc=False):
        """One event: the keys the reader uses (``dur`` 0 where absent, as ``dict.get("dur", 0)``)."""

        name: Any = None
        ph: Any = None
        pid: Any = None
        tid: Any = None
        ts: Any = None
        dur: Any = 0
        args: Union[EventArgs, None] = None

    NO_ARGS = EventArgs()
    EVENT_FIELDS = Event.__struct_fields__
    ARGS_FIELDS = EventArgs.__struct_fields__
    _astuple = msgspec.structs.astuple
    _DECODER = msgspec.json.Decoder(list[Event])
    # ValueError: UnicodeDecodeError of a decoded string; RecursionError: nested past msgspec's depth limit
    _ERRORS = (msgspec.MsgspecError, ValueError, RecursionError)
else:  # pragma: no cover
    _DECODER = NO_ARGS = UNSET = EVENT_FIELDS = ARGS_FIELDS = None


def decode_events(raw: bytes) -> list | None:
    """The events of a trace's whole text as ``Event`` structs, or None (see the module docstring)."""
    if _DECODER is None or not valid_utf8(raw):
        return None
    try:
        return _DECODER.decode(raw)
    except _ERRORS:
        return None


def valid_utf8(raw: bytes) -> bool:
    """The text is UTF-8 throughout (msgspec does not check the strings it skips)."""
    if raw.isascii():
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def column(items: list, key: str, typed: bool, default=None) -> list:
    """``key`` of every item: of dicts (``dict.get``) or, with ``typed``, of structs (absent: the default)."""
    if typed:
        return list(map(attrgetter(key), items))
    return [e.get(key, default) for e in items]


def struct_columns(items: list, fields: tuple) -> dict:
    """Every one of ``fields`` (all of the structs' fields, in their order: ``EVENT_FIELDS`` or
    ``ARGS_FIELDS``) of every struct in ``items`` as one list per field: the structs' tuples
    transposed, about half the time of an ``attrgetter`` pass per field (300 -> 140 µs for the seven
    fields of a 728-event file)."""
    if not items:
        return {f: [] for f in fields}
    return dict(zip(fields, map(list, zip(*map(_astuple, items)))))


def as_dict(event) -> dict:
    """A struct as the dict the reader's metadata checks read (``name``, ``ph``, ``pid``, ``args``)."""
    args = event.args
    if args is not None:
        args = {"start_time_since_epoch_in_micros": args.start_time_since_epoch_in_micros,
                **({} if args.name is UNSET else {"name": args.name})}
    return {"name": event.name, "ph": event.ph, "pid": event.pid, "args": args}


__all__ = ["decode_events", "valid_utf8", "column", "struct_columns", "as_dict", "NO_ARGS", "EVENT_FIELDS", "ARGS_FIELDS"]
