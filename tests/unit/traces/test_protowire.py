"""The protobuf wire walker (``traces.protowire.fields``): one-byte varints are read in place, longer ones by
``varint``; both give the values on the wire, and a message cut anywhere raises after its good fields."""

from __future__ import annotations

import pytest

from reportgen.traces.protowire import I32, I64, LEN, VARINT, WireError, fields, signed64
from tests.support.xspace_writer import varint as _varint


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return _varint(number << 3 | wire) + payload


MESSAGE = (_field(1, VARINT, _varint(5)) + _field(2, VARINT, _varint(300)) + _field(3, VARINT, _varint(2**64 - 2))
           + _field(4, LEN, _varint(3) + b"abc") + _field(5, LEN, _varint(200) + b"x" * 200)
           + _field(20, VARINT, _varint(127)) + _field(2000, VARINT, _varint(128))  # a two-byte key
           + _field(6, I64, (7).to_bytes(8, "little")) + _field(7, I32, (9).to_bytes(4, "little")))


def test_every_field_as_on_the_wire():
    got = [(n, w, bytes(v) if isinstance(v, memoryview) else v) for n, w, v in fields(MESSAGE)]
    assert got == [(1, VARINT, 5), (2, VARINT, 300), (3, VARINT, 2**64 - 2), (4, LEN, b"abc"), (5, LEN, b"x" * 200),
                   (20, VARINT, 127), (2000, VARINT, 128), (6, I64, 7), (7, I32, 9)]
    assert signed64(got[2][2]) == -2


@pytest.mark.parametrize("cut", range(1, len(MESSAGE)))
def test_a_message_cut_anywhere_keeps_the_fields_before_and_raises(cut):
    whole = list(fields(MESSAGE))
    seen = []
    try:
        for field in fields(MESSAGE[:cut]):
            seen.append(field)
    except WireError:
        pass
    else:  # the cut fell between two fields
        assert len(seen) < len(whole)
    assert [(n, w) for n, w, _ in seen] == [(n, w) for n, w, _ in whole[:len(seen)]]


@pytest.mark.parametrize("raw", [b"\x08", b"\x12", b"\x80", b"\x08\x80", b"\x12\x05ab", b"\x00\x01"])
def test_what_is_no_message_raises(raw):
    with pytest.raises(WireError):
        list(fields(raw))
