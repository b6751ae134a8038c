"""A tiny XSpace (``.xplane.pb``) writer of the tests' own: planes -> lines -> events with metadata tables,
for what a CPU-only recording cannot hold (device planes), for damage and for impossible times."""

from __future__ import annotations


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def int_field(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def len_field(number: int, payload: bytes | str) -> bytes:
    payload = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def plane(name: str, lines: list[tuple[str, int, list[tuple[int, int, int, bytes]]]], events: dict[int, str],
          stats: dict[int, str] | None = None, plane_stats: bytes = b"") -> bytes:
    body = len_field(2, name)
    for line_id, (line_name, ts_ns, evs) in enumerate(lines):
        line = int_field(1, line_id) + len_field(2, line_name) + int_field(3, ts_ns)
        for meta, offset_ps, dur_ps, stat in evs:
            line += len_field(4, int_field(1, meta) + int_field(2, offset_ps) + int_field(3, dur_ps) + stat)
        body += len_field(3, line)
    for key, label in events.items():
        body += len_field(4, int_field(1, key) + len_field(2, int_field(1, key) + len_field(2, label)))
    for key, label in (stats or {}).items():
        body += len_field(5, int_field(1, key) + len_field(2, int_field(1, key) + len_field(2, label)))
    return body + plane_stats


def space(*planes: bytes) -> bytes:
    return b"".join(len_field(1, p) for p in planes)
