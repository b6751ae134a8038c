"""A whole Kineto trace decoded straight into the fields the Kineto reader reads (msgspec structs).

orjson builds a dict for every event and every ``args`` with all their keys (a cpu_op's ``Input Dims``,
``Input type``, ``Concrete Inputs``...), which the reader then reads back with a dozen ``dict.get`` per
event: on the 2 x 100 MB benchmark set that decode alone was most of the floor's cost. msgspec decodes
the same text into small structs holding only the fields the reader uses and skips the rest unread;
``Input Dims``, needed only for a matrix multiplication's FLOPs, is kept as its raw text and decoded
for those rows alone. The values are the ones the stdlib parser gives (integers of any size stay
exact). A text the structs do not fit (an event or ``args`` that is not an object, NaN, a number beyond
a float, a lone surrogate, bytes that are not UTF-8, any malformed JSON) gives None: the caller then
reads the file the usual way, which notes what it finds.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec

from reportgen.readers.framework_decode import valid_utf8
from reportgen.traces.stream import events_array_bounds

UNSET = msgspec.UNSET


class KinetoArgs(msgspec.Struct, gc=False):  # gc=False: decoded JSON holds no reference cycle
    """An event's ``args``: the keys the reader uses. UNSET marks a key whose absence the reader tells
    apart from a null (``device`` falls back to the pid; ``In msg nelems`` and ``flops`` are looked for)."""

    device: Any = UNSET
    bytes: Any = None
    msg_nelems: Any = msgspec.field(name="In msg nelems", default=UNSET)
    dtype: Any = None
    correlation: Any = None
    flops: Any = UNSET
    input_dims: msgspec.Raw = msgspec.field(name="Input Dims", default=msgspec.Raw(b"null"))  # absent: as null
    input_type: msgspec.Raw = msgspec.field(name="Input type", default=msgspec.Raw(b"null"))  # only searched
    # a [memory] event's
    mem_bytes: Any = msgspec.field(name="Bytes", default=None)
    total_allocated: Any = msgspec.field(name="Total Allocated", default=None)
    total_reserved: Any = msgspec.field(name="Total Reserved", default=None)
    device_type: Any = msgspec.field(name="Device Type", default=None)
    device_id: Any = msgspec.field(name="Device Id", default=None)
    addr: Any = msgspec.field(name="Addr", default=None)


class KinetoEvent(msgspec.Struct, gc=False):
    """One event: the keys the reader uses, with the defaults of the reader's ``dict.get`` calls."""

    ph: Any = None
    cat: Any = ""
    name: Any = ""
    ts: Any = None
    dur: Any = None
    pid: Any = None
    tid: Any = None
    args: Union[KinetoArgs, None] = None


class KinetoDocument(msgspec.Struct, gc=False):
    """A trace written as an object: its events and the metadata the reader reads (UNSET: absent)."""

    traceEvents: list[KinetoEvent] = UNSET  # (not a list: the text does not fit; the usual path notes it)
    deviceProperties: Any = UNSET
    distributedInfo: Any = UNSET
    baseTimeNanoseconds: Any = UNSET


NO_ARGS = KinetoArgs()
EVENT_FIELDS = KinetoEvent.__struct_fields__
_DECODER = msgspec.json.Decoder(Union[KinetoDocument, list[KinetoEvent]])
META_KEYS = ("deviceProperties", "distributedInfo", "baseTimeNanoseconds")


def decode_trace(raw: bytes) -> tuple[list, dict] | None:
    """The events of a trace's whole text as ``KinetoEvent`` structs and its metadata (the keys of
    ``META_KEYS`` it has), or None (see the module docstring)."""
    if not valid_utf8(raw):
        return None
    try:
        doc = _DECODER.decode(raw)
    except (msgspec.MsgspecError, ValueError, RecursionError):  # ValueError: UnicodeDecodeError of a decoded string
        return None
    if isinstance(doc, list):
        return doc, {}
    if doc.traceEvents is UNSET:
        return None
    return doc.traceEvents, {k: getattr(doc, k) for k in META_KEYS if getattr(doc, k) is not UNSET}


_EVENTS_DECODER = msgspec.json.Decoder(list[KinetoEvent])


class KinetoFrame(msgspec.Struct, gc=False):
    """A trace written as an object, its events left as their text (``frame_document``)."""

    traceEvents: msgspec.Raw = msgspec.Raw(b"")  # empty: absent
    deviceProperties: Any = UNSET
    distributedInfo: Any = UNSET
    baseTimeNanoseconds: Any = UNSET


_FRAME_DECODER = msgspec.json.Decoder(KinetoFrame)


def frame_document(raw: bytes) -> tuple[memoryview, dict] | None:
    """A whole trace's events array as its text (a view of ``raw``) and its metadata, exactly as ``decode_trace``
    gives them, for a text that is a JSON object whose ``traceEvents`` is an array; None for anything else (a
    top-level array, malformed JSON, no such array: ``decode_trace`` then decides). The document is checked
    whole here (UTF-8, well-formed JSON), its events only as JSON: the caller decodes them a run at a time."""
    if not valid_utf8(raw):
        return None
    try:
        doc = _FRAME_DECODER.decode(raw)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return None
    events = memoryview(doc.traceEvents)
    if not events or events[0] != 0x5B:  # "["
        return None
    return events, {k: getattr(doc, k) for k in META_KEYS if getattr(doc, k) is not UNSET}


def split_document(raw: bytes) -> tuple[memoryview, dict] | None:
    """``frame_document``'s answer without its pass over the events: where the events array lies is guessed
    (``traces.stream.events_array_bounds``) and the document is decoded with an empty array in its place, which must
    come back as its ``traceEvents``; the events are left to the caller's ``ArrayRuns``, which takes them only when
    they are a JSON array. So when both take the text, the document is JSON with this array as its events, exactly
    what ``frame_document`` gives; None when the guess is not sure (the caller then asks ``frame_document``)."""
    if not valid_utf8(raw):
        return None
    bounds = events_array_bounds(raw)
    if bounds is None:
        return None
    start, end = bounds
    head, tail = raw[:start], raw[end + 1:]
    hole = b"[]"  # the empty array put in place of the events: a text found nowhere else in the document
    while hole in head or hole in tail:
        hole = hole[:-1] + b" ]"
    try:
        doc = _FRAME_DECODER.decode(b"".join((head, hole, tail)))
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return None
    if bytes(doc.traceEvents) != hole:  # another "traceEvents" is the document's (one in the metadata was found)
        return None
    return memoryview(raw)[start:end + 1], {k: getattr(doc, k) for k in META_KEYS if getattr(doc, k) is not UNSET}


def decode_events(raw: bytes) -> list | None:
    """A run of a streamed trace's events (``[<events>]``, UTF-8 checked by the caller) as ``KinetoEvent``
    structs, or None when the text does not fit them (``traces.stream.FramedEvents`` then gives up)."""
    try:
        return _EVENTS_DECODER.decode(raw)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return None


FLOAT64_TYPE = b'"double"'  # how record_shapes writes a float64 tensor's type in ``Input type``


def has_float64_input(args: KinetoArgs) -> bool:
    """Whether an operator has a float64 tensor of one or more dimensions among its inputs (``Input type`` and
    ``Input Dims``, decoded only when the types' text names one): a Python number passed to an operator
    (``x.mul_(0.9)``) is a 0-dimensional double, not float64 work."""
    if FLOAT64_TYPE not in bytes(args.input_type):
        return False
    try:
        return float64_tensor(msgspec.json.decode(args.input_type), input_dims(args))
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return False


def float64_tensor(types, dims) -> bool:
    """Whether parsed ``Input type`` / ``Input Dims`` lists hold a float64 input with one or more dimensions."""
    if not isinstance(types, list) or not isinstance(dims, list):
        return False
    return any(t == "double" and isinstance(d, list) and len(d) > 0 for t, d in zip(types, dims))


def input_dims(args: KinetoArgs):
    """``Input Dims`` decoded (None when absent), as a parser would give it."""
    return msgspec.json.decode(args.input_dims)


__all__ = ["KinetoArgs", "KinetoEvent", "KinetoFrame", "decode_events", "decode_trace", "frame_document", "split_document", "input_dims", "NO_ARGS", "EVENT_FIELDS", "META_KEYS", "UNSET", "FLOAT64_TYPE", "float64_tensor", "has_float64_input"]
