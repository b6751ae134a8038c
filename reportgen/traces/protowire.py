"""The protocol-buffer wire format, walked without the ``protobuf`` package: enough to read XSpace.

Why our own (~80 lines) rather than ``protobuf`` + the ``.proto`` files: XSpace needs five message
types and four wire types; the generated ``xplane_pb2`` ships only inside the tensorflow wheel, and
``protobuf``'s parser rejects a damaged message whole, where this walker hands out every field before
the damage and says where it stopped (the project's salvage policy, docs/reliability.md).

XSpace's events, millions of small messages, are decoded many at once by ``traces.protovec`` with these
rules; this walker reads the rest (planes, metadata, line headers) and names the damage protovec finds.

A message is walked field by field: ``(number, wire type, value)``, ``value`` an int for varint /
fixed fields (unsigned, as on the wire) and a zero-copy ``memoryview`` for length-delimited ones
(strings, bytes, nested messages, packed arrays). Malformed input raises :class:`WireError` at the
first bad byte, after every good field before it was yielded.
"""

from __future__ import annotations

VARINT, I64, LEN, I32 = 0, 1, 2, 5
_MAX_FIELD = (1 << 29) - 1


class WireError(ValueError):
    """The bytes stop being a protobuf message here (truncated, or not protobuf at all)."""


_U64 = (1 << 64) - 1


def varint(buf, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it; the bits past 64 of a ten-byte varint are dropped,
    as protobuf's own parsers drop them (every value fits a uint64, so a vectorised decoder gives the same)."""
    result = shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise WireError("varint cut short")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & _U64, pos
        shift += 7
        if shift >= 70:
            raise WireError("varint longer than 10 bytes")


def _varint_within(view: memoryview, pos: int, end: int) -> tuple[int, int]:
    """:func:`varint` of a message ending at ``end``; a one-byte one read in place."""
    if pos < end and view[pos] < 0x80:
        return view[pos], pos + 1
    return varint(view[:end], pos)


def field_at(view: memoryview, pos: int, end: int) -> tuple[int, int, int | memoryview, int]:
    """The field at ``pos`` of a message ending at ``end``: (number, wire type, value, position after it)."""
    # a one-byte varint (most keys, sizes and small values) read in place: a call each was most of the walk
    key = view[pos]
    if key < 0x80:
        pos += 1
    else:
        key, pos = varint(view[:end], pos)
    number, wire = key >> 3, key & 7
    if not 0 < number <= _MAX_FIELD:
        raise WireError(f"field number {number}")
    value: int | memoryview
    if wire == VARINT:
        value, pos = _varint_within(view, pos, end)
    elif wire == LEN:
        size, pos = _varint_within(view, pos, end)
        if size > end - pos:
            raise WireError(f"field {number}: {size} bytes announced, {end - pos} left")
        value = view[pos:pos + size]
        pos += size
    elif wire in (I64, I32):
        width = 8 if wire == I64 else 4
        if width > end - pos:
            raise WireError(f"field {number}: fixed value cut short")
        value = int.from_bytes(view[pos:pos + width], "little")
        pos += width
    else:  # groups (3, 4) are not used by any message read here; 6, 7 do not exist
        raise WireError(f"field {number}: wire type {wire}")
    return number, wire, value, pos


def fields(buf):
    """Every field of the message in ``buf`` (bytes or memoryview), in wire order."""
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    pos, end = 0, len(view)
    while pos < end:
        number, wire, value, pos = field_at(view, pos, end)
        yield number, wire, value


def signed64(value: int) -> int:
    """An ``int64`` field's value (negative numbers travel as their 64-bit two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def text(value) -> str:
    """A ``string`` field (bad UTF-8 replaced, never raised on)."""
    return bytes(value).decode("utf-8", errors="replace") if isinstance(value, memoryview) else ""
