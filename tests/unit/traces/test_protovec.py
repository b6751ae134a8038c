"""The vectorised wire decoder (``traces.protovec``) against the one-field-at-a-time walker it replaces for
XSpace's events (``traces.protowire``): the same values, the same records, the same messages judged
damaged, on messages built to hold every varint length, nested records that look like top-level ones,
and damage of every kind the walker names."""

from __future__ import annotations

import random

import numpy as np
import pytest

from reportgen.traces.protovec import Buffer, events, repeated, scan, varints
from reportgen.traces.protowire import LEN, VARINT, WireError, fields, varint
from tests.support.xspace_writer import int_field, len_field, varint as encode

VALUES = [0, 1, 127, 128, 300, 16383, 16384, 2**21, 2**28 - 1, 2**35, 2**42 + 7, 2**49, 2**56 - 1, 2**56, 2**63 - 1,
          2**63, 2**64 - 1, -1, -2**40]


def test_a_varint_of_every_length_reads_as_the_walker_reads_it():
    data = b"".join(encode(v) for v in VALUES)
    buf = Buffer.of(data)
    pos, want = [], []
    at = 0
    while at < len(data):
        value, nxt = varint(data, at)
        pos.append(at)
        want.append((value, nxt))
        at = nxt
    got, after, bad = varints(buf, np.array(pos), np.full(len(pos), len(data)))
    assert [(int(v), int(a)) for v, a in zip(got, after)] == want and not bad.any()
    assert [int(v) for v in got] == [v & (2**64 - 1) for v in VALUES]


@pytest.mark.parametrize("raw,value", [(b"\xff" * 9 + b"\x7f", 2**64 - 1), (b"\x80" * 9 + b"\x02", 0),
                                       (b"\x81" + b"\x80" * 8 + b"\x03", 2**63 + 1)])
def test_bits_past_64_are_dropped_by_both(raw, value):
    assert varint(raw, 0) == (value, 10)
    got, after, bad = varints(Buffer.of(raw), np.array([0]), np.array([10]))
    assert (int(got[0]), int(after[0]), bool(bad[0])) == (value, 10, False)


@pytest.mark.parametrize("raw,end", [(b"\xff" * 11, 11), (b"\x80" * 10, 10), (b"\x96\x01", 1), (b"\x80", 1),
                                     (b"\xff" * 8 + b"\x01", 8)])
def test_a_varint_cut_short_or_too_long_is_damage_for_both(raw, end):
    with pytest.raises(WireError):
        varint(raw[:end], 0)
    assert varints(Buffer.of(raw), np.array([0]), np.array([end]))[2].tolist() == [True]


def _event(rng: random.Random) -> bytes:
    """An XEvent as XLA writes them (fields 1, 2, 3, then stats), sometimes with fields out of order, a field
    repeated (the last counts), fixed-width and unknown fields."""
    parts = [int_field(1, rng.choice([0, 5, 34, 300, 2**40])), int_field(2, rng.choice(VALUES)),
             int_field(3, rng.choice(VALUES))]
    for _ in range(rng.choice([0, 0, 1, 2, 9])):
        parts.append(len_field(4, int_field(1, rng.choice([1, 2, 34])) + int_field(rng.choice([3, 4]), rng.choice(VALUES))))
    if rng.random() < 0.2:
        parts.append(int_field(1, rng.choice(VALUES)))
    if rng.random() < 0.1:
        parts.append(encode(6 << 3 | 1) + bytes(8) + encode(7 << 3 | 5) + bytes(4) + int_field(2000, 9))
    if rng.random() < 0.1:
        rng.shuffle(parts)
    return b"".join(parts)


def _damage(rng: random.Random, body: bytes) -> bytes:
    kind = rng.randrange(5)
    if kind == 0:
        return body[:rng.randrange(len(body) + 1)]  # cut anywhere
    if kind == 1:
        return body + bytes([rng.choice([0x03, 0x06, 0x07, 0x0E])])  # a group or no wire type at all
    if kind == 2:
        return body + b"\x00\x01"  # field number 0
    if kind == 3:
        return body + encode(4 << 3 | LEN) + encode(rng.randrange(1, 2**40))  # more announced than there is
    return body + b"\x08" + b"\xff" * 10  # a varint longer than ten bytes


def _walk(body: bytes) -> tuple[dict, list, bool]:
    values, records = {}, []
    try:
        for number, wire, value in fields(body):
            if wire == VARINT and number in (1, 2, 3):
                values[number] = value
            elif wire == LEN and number == 4:
                records.append(bytes(value))
    except WireError:
        return values, records, True
    return values, records, False


@pytest.mark.parametrize("count", [5, 300])  # the one-at-a-time tail alone, and rounds then the tail
def test_a_scan_gives_each_message_what_the_walker_gives(count):
    rng = random.Random(count)
    bodies = [_event(rng) for _ in range(count)]
    bodies = [_damage(rng, b) if rng.random() < 0.15 else b for b in bodies]
    data = b"".join(bodies)
    ends = np.cumsum([len(b) for b in bodies])
    starts = ends - [len(b) for b in bodies]
    out = scan(Buffer.of(data), starts, ends, (1, 2, 3), 4)
    msg, begin, finish = out.records
    for i, body in enumerate(bodies):
        values, records, damaged = _walk(body)
        assert bool(out.damaged[i]) is damaged, (i, body)
        if damaged:
            continue
        for number in (1, 2, 3):
            assert bool(out.rounds[number][i] >= 0) is (number in values)
            assert int(out.values[number][i]) == values.get(number, 0)
        mine = [data[b:f] for m, b, f in zip(msg, begin, finish) if m == i]
        assert mine == records
    assert not out.damaged.all() and out.damaged.any()


def _usual_event(rng: random.Random) -> bytes:
    """An XEvent in the layout the fast path expects: fields 1, 2, 3 (each left out when 0), then stats of every
    size (one-, two- and three-byte sizes; a few events with 40, read one at a time after the rounds), or now
    and then any event of :func:`_event`."""
    if rng.random() < 0.05:
        return _event(rng)
    head = b"".join(int_field(n, v) for n, v in ((1, rng.choice([0, 7, 300])), (2, rng.choice(VALUES)),
                                                  (3, rng.choice([0, 1, 2**40, -1]))) if v)
    stats = []
    for _ in range(40 if rng.random() < 0.01 else rng.choice([0, 1, 3, 9])):
        value = rng.choice([int_field(4, rng.choice(VALUES)), len_field(5, "x" * rng.choice([1, 200, 17000]))])
        stats.append(len_field(4, int_field(1, rng.choice([1, 10, 34, 138])) + value))
    return head + b"".join(stats)


@pytest.mark.parametrize("seed", range(4))
def test_events_read_as_the_walker_reads_them_and_hand_out_the_stats_that_may_hold_an_id(seed):
    rng = random.Random(seed)
    bodies = [_usual_event(rng) for _ in range(1500)]
    bodies = [_damage(rng, b) if rng.random() < 0.03 else b for b in bodies]
    data = b"".join(bodies)
    ends = np.cumsum([len(b) for b in bodies])
    starts = ends - [len(b) for b in bodies]
    ids = (10, 34) if seed % 2 else (138,)
    out = events(Buffer.of(data), starts, ends, ids)
    nothing = events(Buffer.of(data), starts, ends, None)
    assert not nothing.records[0].size
    msg, begin, finish = out.records
    low7 = {i & 0x7F for i in ids}
    handed: dict[int, list[bytes]] = {}
    for m, b, f in zip(msg.tolist(), begin.tolist(), finish.tolist()):
        handed.setdefault(m, []).append(data[b:f])
    for i, body in enumerate(bodies):
        values, records, damaged = _walk(body)
        assert bool(out.damaged[i]) is damaged is bool(nothing.damaged[i]), (i, body)
        if damaged:
            continue
        for number, got in ((1, out.meta), (2, out.offset), (3, out.duration)):
            assert int(got[i]) == values.get(number, 0)
        assert handed.get(i, []) == [
            r for r in records if any(bytes([v]) in r or bytes([v | 0x80]) in r for v in low7)]
    assert out.damaged.any() and msg.size > 1000 and len(set(msg.tolist())) > 500


def _line(rng: random.Random, events: list[bytes]) -> bytes:
    head = int_field(1, 3) + len_field(2, "python") + int_field(3, 1_000_000)
    body = bytearray(head)
    for i, event in enumerate(events):
        body += len_field(4, event)
        if rng.random() < 0.02:
            body += len_field(2, f"renamed {i}") + int_field(9, i)  # header fields among the events
    return bytes(body)


@pytest.mark.parametrize("seed", range(6))
def test_the_records_of_a_line_are_the_walkers_before_the_first_damage(seed):
    rng = random.Random(seed)
    events = [_event(rng) for _ in range(400)]
    events[rng.randrange(400)] = b"\x22" * 130 + bytes(range(256)) * 2  # a 2-byte size, false keys inside
    line = _line(rng, events)
    if seed % 2:
        line = line[:rng.randrange(len(line))]
    data = b"junk" + line + b"more"
    got = repeated(Buffer.of(data), 4, 4 + len(line), 4)
    want, others, error = [], [], None
    try:
        for number, wire, value in fields(line):
            if number == 4 and wire == LEN:
                want.append(bytes(value))
            else:
                others.append((number, wire, bytes(value) if isinstance(value, memoryview) else value))
    except WireError as err:
        error = str(err)
    assert [data[s:e] for s, e in zip(got.starts, got.ends)] == want
    assert [(n, w, bytes(v) if isinstance(v, memoryview) else v) for n, w, v in got.others] == others
    assert got.error == error
    assert len(want) > 10
