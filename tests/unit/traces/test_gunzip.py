"""gunzip.GunzipStream: gzip.decompress's bytes for an undamaged file, everything before the damage
otherwise, and the same bytes whatever the read size (whole-file and streamed reads agree)."""

from __future__ import annotations

import gzip
import io
import zlib

import pytest

from reportgen.traces import gunzip
from reportgen.traces.gunzip import GunzipStream

TEXT = b"".join(b'{"ph": "X", "name": "op%d", "ts": %d, "dur": 3},\n' % (i % 97, i * 7) for i in range(40_000))
GZ_TEXT = gzip.compress(TEXT, mtime=0)  # made once: each test that damages it starts from these bytes


def _read(data: bytes, size: int = -1) -> tuple[bytes, GunzipStream]:
    src = GunzipStream(io.BytesIO(data))
    if size < 0:
        return src.read(), src
    parts = []
    while part := src.read(size):
        assert len(part) <= size
        parts.append(part)
    return b"".join(parts), src


@pytest.mark.parametrize("data", [
    GZ_TEXT,
    gzip.compress(TEXT[:1000], mtime=0) + gzip.compress(TEXT[1000:], mtime=0),  # two members
    GZ_TEXT + b"\0" * 300,  # zero padding after the member
    gzip.compress(b"", mtime=0),
    b"",
], ids=["one member", "two members", "zero padding", "empty member", "empty file"])
@pytest.mark.parametrize("size", [-1, 7, 4096, 1 << 20])
def test_undamaged_files_give_gzip_decompress_bytes(data, size):
    out, src = _read(data, size)
    assert out == gzip.decompress(data) and not src.broken and src.produced == len(out)


def test_a_cut_stream_keeps_every_byte_before_the_cut():
    data = GZ_TEXT
    for frac in (0.05, 0.5, 0.999):
        cut = data[: int(len(data) * frac)]
        expected = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut)
        for size in (-1, 100, 4 << 20):
            out, src = _read(cut, size)
            assert src.broken and out == expected and TEXT.startswith(out) and len(out) > 0


def _bad_block_at(at: int) -> bytes:
    """gzip of TEXT with an invalid deflate block (reserved type) where TEXT[at:] starts."""
    co = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    first = co.compress(TEXT[:at]) + co.flush(zlib.Z_FULL_FLUSH)  # ends on a byte boundary
    return first + b"\x07" + (co.compress(TEXT[at:]) + co.flush())[1:]


@pytest.mark.parametrize("damage, kept", [
    (lambda d: d[:-6] + bytes([d[-6] ^ 1]) + d[-5:], len(TEXT) - 1),  # CRC mismatch: all but the last byte
    (lambda d: _bad_block_at(1_000_003), 1_000_002),  # corrupt block mid-member: all but the byte before
    (lambda d: _bad_block_at(100), 99),  # ... also within zlib's first step
    (lambda d: d + b"garbage", len(TEXT)),  # bytes after the member that are not gzip
    (lambda d: b"<html>404</html>", 0),  # not gzip at all
], ids=["crc", "bad block", "bad block early", "trailing garbage", "not gzip"])
def test_damage_is_flagged_and_what_precedes_it_kept(damage, kept):
    """zlib gives nothing of a call that fails; the failed step is redone a byte at a time, so all but
    the byte zlib decodes in the call that meets the damage is kept."""
    out, src = _read(damage(GZ_TEXT))
    assert src.broken and out == TEXT[:kept] and src.produced == kept
    for size in (1000, 1 << 22):  # the same bytes whatever the read size
        assert _read(damage(GZ_TEXT), size)[0] == out


def test_limit_stops_decompression_at_what_was_produced():
    """A gzip bomb: decompression stops once ``limit`` bytes are out (within one step), whatever the
    trailer says and however many members follow; below the limit nothing changes."""
    blanks = gzip.compress(b" " * (8 << 20), mtime=0) + gzip.compress(b"[]", mtime=0)
    src = GunzipStream(io.BytesIO(blanks), limit=1 << 20)
    out = src.read()
    assert src.capped and not src.broken and (1 << 20) <= len(out) < (1 << 20) + gunzip.STEP
    assert out == b" " * len(out)
    src = GunzipStream(io.BytesIO(GZ_TEXT), limit=len(TEXT) + gunzip.STEP)
    assert src.read() == TEXT and not src.capped
