"""Gzip bombs: small files that decompress to gigabytes (used by tests/e2e/test_bombs.py and
benchmarks/bench_bombs.py).

A bomb is built without ever holding (or compressing) its text: deflate is given one 1 MiB block,
flushed with Z_FULL_FLUSH (which makes what follows independent of what came before), so every
further copy of the block compresses to the same bytes and is appended as such. The CRC is computed
over the real text, so each member is a valid gzip member (``gzip -t`` passes) whose trailer ISIZE
is the size modulo 2**32, as a real writer would leave it.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

MIB = 1 << 20


def member(prefix: bytes, block: bytes, copies: int, suffix: bytes) -> bytes:
    """One gzip member of ``prefix + block * copies + suffix``."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    parts = [c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH)]
    first = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    assert first == again  # a full flush makes each copy compress alike
    parts.append(first * copies)
    parts.append(c.compress(suffix) + c.flush())
    crc = zlib.crc32(prefix)
    for _ in range(copies):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(suffix, crc)
    size = len(prefix) + len(block) * copies + len(suffix)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + b"".join(parts) + struct.pack("<II", crc, size & 0xFFFFFFFF)


def _events(n: int, start: int = 0) -> bytes:
    return b"".join(json.dumps({"ph": "X", "cat": "cpu_op", "name": f"op{i % 7}", "pid": 1, "tid": 1,
                                "ts": 1_700_000_000_000_000 + 10 * i, "dur": 5}).encode() + b",\n"
                    for i in range(start, start + n))


def event_block(size: int = MIB) -> bytes:
    """About ``size`` bytes of one valid event repeated (whole events only)."""
    one = json.dumps({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
                      "ts": 1_700_000_000_000_000, "dur": 5}).encode() + b",\n"
    return one * (size // len(one))


HEAD = b'{"traceEvents": [\n' + _events(100)
TAIL = _events(100, 100) + _events(1, 200)[:-2] + b'\n]}\n'
BLANKS = b" " * MIB


def kineto_isize_lie(root: Path) -> Path:
    """The issue's case: one member of 4 GiB + 8 MiB of text (blanks inside the events array), so
    ISIZE says 8 MiB; ~4.2 MB on disk."""
    path = root / "rank0.pt.trace.json.gz"
    path.write_bytes(member(HEAD, BLANKS, 4096 + 8, TAIL))
    return path


def tf_isize_lie(root: Path) -> Path:
    """The same in a TF profiler trace (framework/tensorflow/..., read by the framework reader)."""
    step = root / "framework" / "tensorflow" / "detailed_profiling" / "2020080513" / "000000001"
    prof = step / "plugins" / "profile" / "2020_08_05_13_37_44"
    prof.mkdir(parents=True)
    (step / "algo-1_1596634664000000_1596634665000000.metadata").write_text("")
    path = prof / "algo-1.trace.json.gz"
    path.write_bytes(member(HEAD, BLANKS, 4096 + 8, TAIL))
    return path


def two_members(root: Path) -> Path:
    """3 GiB of blanks in a first member, then a small member holding the events (ISIZE: the small one's)."""
    path = root / "rank0.pt.trace.json.gz"
    path.write_bytes(member(b"", BLANKS, 3072, b"") + member(HEAD, b"", 0, TAIL))
    return path


def blank_member(root: Path) -> Path:
    """One member of 5 GiB of blanks inside the events array (~5 MB on disk)."""
    path = root / "rank0.pt.trace.json.gz"
    path.write_bytes(member(HEAD, BLANKS, 5120, TAIL))
    return path


def event_member(root: Path) -> Path:
    """Valid events only: ~10 MB on disk of one event repeated, ~10 GB of text."""
    path = root / "rank0.pt.trace.json.gz"
    block = event_block()
    one = len(member(b"", block, 1, b"")) - len(member(b"", block, 0, b""))
    path.write_bytes(member(HEAD, block, (10 * MIB) // one, TAIL))
    return path


KINDS = {"kineto-isize-lie": kineto_isize_lie, "tf-isize-lie": tf_isize_lie, "two-members": two_members,
         "blank-member": blank_member, "event-member": event_member}
