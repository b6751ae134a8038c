"""Many small protobuf messages of one buffer decoded at once with numpy: the millions of events of an XSpace.

Why: walked one field at a time in Python (``protowire.fields``), an XSpace read at ~1.3 MB/s, 65-108x
a plain protobuf parse. Here each step works on every message at once: a varint is decoded from the eight
bytes at its position read as one little-endian word (its end is the first byte without the high bit,
its 7-bit groups are packed by three shift-and-mask steps), and a message's fields are read one per
round, a round for all the messages still unfinished. The last few messages of a long tail are finished
by ``protowire.field_at`` (one at a time, the same rules), so a message with a thousand fields costs no
thousand rounds.

A repeated field of small records (XLine's events) is found by speculation checked exactly: every byte
that could start a record is a candidate, a run of candidates each ending where the next begins is taken
whole once its first is known to be a record, and anything else is walked field by field.

The rules are ``protowire``'s: the same values (varints modulo 2^64), the same fields judged damaged.
A message found damaged is only marked; the caller asks ``protowire.fields`` for the words of the error.

XEvents have their own :func:`events`: the usual layout (fields 1, 2, 3, then stats) read in fewer numpy calls than
:func:`scan` takes, any event that strays from it handed to :func:`scan`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reportgen.traces.protowire import LEN, WireError, field_at

PAD = 32  # zero bytes after the data: a word read anywhere up to ten bytes past the end stays inside the buffer
_HIGH = np.uint64(0x8080808080808080)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_ONE = np.uint64(1)
_PACK = [(np.uint64(0x007F007F007F007F), np.uint64(0x7F007F007F007F00), np.uint64(1)),
         (np.uint64(0x00003FFF00003FFF), np.uint64(0x3FFF00003FFF0000), np.uint64(2)),
         (np.uint64(0x000000000FFFFFFF), np.uint64(0x0FFFFFFF00000000), np.uint64(4))]
_MAX_FIELD = (1 << 29) - 1
_TAIL = 64  # fewer unfinished messages than this are finished one at a time
_FIRST_KEYS = np.isin(np.arange(256), [0x08, 0x10, 0x18, 0x22, 0x28])  # by byte: a key XEvent's fields 1-5 open with
WINDOW = 1 << 22  # bytes of a message searched for candidate records at once (their arrays take ~40 bytes each)


class Buffer:
    """The data (``size`` bytes, then :data:`PAD` zeros) as bytes and as a word at every byte position."""

    def __init__(self, padded: np.ndarray, size: int) -> None:
        self.bytes = padded
        self.size = size
        self.view = memoryview(padded)[:size]
        self.words = np.ndarray(shape=(size + PAD - 7,), dtype="<u8", buffer=padded, strides=(1,))

    @classmethod
    def of(cls, data: bytes) -> Buffer:
        padded = np.zeros(len(data) + PAD, np.uint8)
        padded[:len(data)] = np.frombuffer(data, np.uint8)
        return cls(padded, len(data))


def varints(buf: Buffer, pos: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The varints at ``pos`` (each within its message's ``end``): (values, positions after them, damaged).
    In place where it can be: each new array of a chunk costs as much as the step that fills it."""
    word = buf.words[pos]
    stops = np.invert(word)
    stops &= _HIGH
    low = np.negative(stops)  # each one's first byte without the high bit
    low &= stops
    length = np.frexp(low.astype(np.float64))[1]
    length >>= 3  # 0: no such byte in the first eight
    mask = np.left_shift(low, _ONE)
    mask -= _ONE
    value = word
    value &= mask
    value &= _LOW7
    part = mask
    for keep, move, by in _PACK:
        np.bitwise_and(value, move, out=part)
        part >>= by
        value &= keep
        value |= part
    long = np.flatnonzero(length == 0)
    if long.size:  # nine or ten bytes (a negative int64 takes ten): the bits past 64 dropped
        at = pos[long]
        b8, b9 = buf.bytes[at + 8].astype(np.uint64), buf.bytes[at + 9].astype(np.uint64)
        nine = b8 < 0x80
        ten = ~nine & (b9 < 0x80)
        value[long] |= ((b8 & np.uint64(0x7F)) << np.uint64(56)) | np.where(ten, (b9 & _ONE) << np.uint64(63), 0
                                                                            ).astype(np.uint64)
        length[long] = np.where(nine, 9, np.where(ten, 10, 11))
    damaged = np.minimum(length, 10) + pos > end  # cut short, or no end within ten bytes
    if long.size:
        damaged |= length == 11
    return value, pos + length, damaged


@dataclass
class Scan:
    """What :func:`scan` read: per message, the last value of each asked varint field and the round it came
    in (-1: absent), whether the message is damaged, and the asked length-delimited fields in order."""

    values: dict[int, np.ndarray]
    rounds: dict[int, np.ndarray]
    damaged: np.ndarray
    records: tuple[np.ndarray, np.ndarray, np.ndarray] = field(default=(np.zeros(0, np.int64),) * 3)


def scan(buf: Buffer, starts: np.ndarray, ends: np.ndarray, numbers: tuple[int, ...], record: int | None = None
         ) -> Scan:
    """The varint fields ``numbers`` of the messages ``starts[i]:ends[i]`` and the payloads (message index,
    start, end) of their length-delimited field ``record``, in message order then wire order."""
    count = starts.size
    out = Scan({n: np.zeros(count, np.uint64) for n in numbers}, {n: np.full(count, -1, np.int64) for n in numbers},
               np.zeros(count, bool))
    found: list[tuple[np.ndarray, ...]] = []
    live = np.flatnonzero(starts < ends)
    pos, end = starts[live].astype(np.int64), ends[live].astype(np.int64)
    step = 0
    while live.size >= _TAIL:
        key, after, bad = buf.bytes[pos].astype(np.uint64), pos + 1, np.zeros(live.size, bool)
        multi = np.flatnonzero(key >= 0x80)  # a key of two bytes or more (field 16 on): rare
        if multi.size:
            key[multi], after[multi], bad[multi] = varints(buf, pos[multi], end[multi])
        number, wire = (key >> np.uint64(3)).astype(np.int64), (key & np.uint64(7)).astype(np.int64)
        bad |= (number == 0) | (number > _MAX_FIELD)
        value, past, bad_value = varints(buf, after, end)  # a varint's value or a length (else unused)
        is_len = wire == LEN
        nxt = np.where(wire == 0, past, np.where(is_len, past + value.astype(np.int64),
                                                 after + np.where(wire == 1, 8, 4)))
        bad |= ((wire == 0) | is_len) & bad_value
        bad |= (wire != 0) & ~is_len & (wire != 1) & (wire != 5)
        bad |= is_len & (value > np.maximum(end - past, 0).astype(np.uint64))
        bad |= nxt > end
        ok = ~bad
        for n in numbers:
            hit = ok & (key == np.uint64(n << 3))  # field n as a varint
            out.values[n][live[hit]] = value[hit]
            out.rounds[n][live[hit]] = step
        if record is not None:
            hit = ok & is_len & (number == record)
            found.append((np.full(np.count_nonzero(hit), step, np.int64), live[hit], past[hit], nxt[hit]))
        out.damaged[live[bad]] = True
        go = ok & (nxt < end)
        live, pos, end = live[go], nxt[go], end[go]
        step += 1
    for i, at, stop in zip(live.tolist(), pos.tolist(), end.tolist()):  # the tail, one at a time
        turn = step
        try:
            while at < stop:
                number, wire, value, at = field_at(buf.view, at, stop)
                if wire == 0 and number in out.values:
                    out.values[number][i], out.rounds[number][i] = value, turn
                elif wire == LEN and number == record:
                    found.append((np.array([turn]), np.array([i]), np.array([at - len(value)]), np.array([at])))
                turn += 1
        except WireError:
            out.damaged[i] = True
    if found:
        turn, msg, begin, finish = (np.concatenate(part) for part in zip(*found))
        order = np.lexsort((turn, msg))
        out.records = (msg[order], begin[order], finish[order])
    return out


@dataclass
class Repeated:
    """A message's length-delimited field ``number`` (payload starts and ends, in order), its other fields
    (number, wire type, value) and the error that stopped the walk (None: read to its end)."""

    starts: np.ndarray
    ends: np.ndarray
    others: list[tuple[int, int, object]]
    error: str | None


def _candidates(buf: Buffer, start: int, end: int, key: int, message_end: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The bytes of ``start:end`` that could start a record (its key, a one- or two-byte size, a body within
    the message that opens with a record's field or is empty), less those inside an earlier one's span:
    (start, body start, body end, the candidates after which a run ends)."""
    cand = np.flatnonzero(buf.bytes[start:end] == key) + start
    b1, b2 = buf.bytes[cand + 1], buf.bytes[cand + 2]
    one = b1 < 0x80
    body = cand + np.where(one, 2, 3)
    nxt = body + np.where(one, b1, (b1 & 0x7F) | (b2.astype(np.int64) << 7))
    plausible = (one | (b2 < 0x80)) & (nxt <= message_end)
    plausible &= (nxt == body) | _FIRST_KEYS[buf.bytes[body]]  # a record's first key (XEvent's fields 1-5), or nothing
    cand, body, nxt = cand[plausible], body[plausible], nxt[plausible]
    if cand.size > 1:  # one inside an earlier one's span is a nested field (an event's stats), unless that one is
        inside = np.zeros(cand.size, bool)  # false; either way no record follows the run it would break
        inside[1:] = np.maximum.accumulate(nxt)[:-1] > cand[1:]
        cand, body, nxt = cand[~inside], body[~inside], nxt[~inside]
    return cand, body, nxt, np.flatnonzero(nxt[:-1] != cand[1:])


def repeated(buf: Buffer, start: int, end: int, number: int) -> Repeated:
    """The fields of the message ``start:end``, the repeated small records ``number`` found by runs (see the
    module's docstring), candidates looked for in windows of :data:`WINDOW` bytes; ``number`` must have a
    one-byte key."""
    key = number << 3 | LEN
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    others: list[tuple[int, int, object]] = []
    pos, error, window = start, None, start
    while pos < end:
        if pos >= window:  # the next window's candidates; a run ends at its last one
            window = min(pos + WINDOW, end)
            cand, body, nxt, breaks = _candidates(buf, pos, window, key, end)
        i = int(np.searchsorted(cand, pos))
        if i < cand.size and cand[i] == pos:  # a record: the run from it is taken whole
            b = int(np.searchsorted(breaks, i))
            j = int(breaks[b]) if b < breaks.size else cand.size - 1
            starts.append(body[i:j + 1])
            ends.append(nxt[i:j + 1])
            pos = int(nxt[j])
            continue
        try:
            got, wire, value, pos = field_at(buf.view, pos, end)
        except WireError as err:
            error = str(err)
            break
        if got == number and wire == LEN:
            starts.append(np.array([pos - len(value)], np.int64))
            ends.append(np.array([pos], np.int64))
        else:
            others.append((got, wire, value))
    if not starts:
        return Repeated(np.zeros(0, np.int64), np.zeros(0, np.int64), others, error)
    return Repeated(np.concatenate(starts).astype(np.int64), np.concatenate(ends).astype(np.int64), others, error)


@dataclass
class Events:
    """What :func:`events` read of each XEvent: fields 1-3 (metadata id, offset, duration; 0 when absent, the
    last one when repeated), whether it is damaged, and its stats' payloads (event index, start, end), each
    event's in wire order (events apart from one another in no particular order)."""

    meta: np.ndarray
    offset: np.ndarray
    duration: np.ndarray
    damaged: np.ndarray
    records: tuple[np.ndarray, np.ndarray, np.ndarray]


def _lengths(buf: Buffer, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The one- or two-byte varint after the key at ``pos`` (a size, a small id) and where it ends (-1: longer)."""
    b1, b2 = buf.bytes[pos + 1].astype(np.int64), buf.bytes[pos + 2].astype(np.int64)
    one = b1 < 0x80
    size = np.where(one, b1, (b1 & 0x7F) | (b2 << 7))
    body = np.where(one, pos + 2, np.where(b2 < 0x80, pos + 3, -1))
    return size, body


def _optional(buf: Buffer, pos: np.ndarray, end: np.ndarray, number: int, other: np.ndarray, small: bool = False
              ) -> tuple[np.ndarray, np.ndarray]:
    """The varint field ``number`` where it is at ``pos`` (value, position after it; 0 and ``pos`` where it is
    not: proto3 leaves a zero out); ``other`` set where it is damaged. ``small``: most values take one or two
    bytes (metadata ids), read as such, only the others as varints."""
    here = buf.bytes[pos] == number << 3
    if small:  # one or two bytes
        value, after = _lengths(buf, pos)
        short = here & (after >= 0)
        value, after = np.where(short, value, 0).astype(np.uint64), np.where(short, after, pos)
        other |= short & (after > end)
        more = np.flatnonzero(here & ~short)
        if more.size:
            value[more], after[more], bad = varints(buf, pos[more] + 1, end[more])
            other[more] |= bad
        return value, np.minimum(after, end)
    value, after, bad = varints(buf, pos + 1, end)
    np.minimum(after, end, out=after)
    if here.all():  # the usual chunk: every event has it
        other |= bad
        return value, after
    other |= here & bad
    return np.where(here, value, np.uint64(0)), np.where(here, after, pos)


def _hits(buf: Buffer, lo: int, hi: int, low7: tuple[int, ...]) -> np.ndarray:
    """The positions in ``lo:hi`` of the bytes whose low seven bits are one of ``low7``."""
    seven = buf.bytes[lo:hi] & 0x7F
    mark = seven == low7[0]
    for value in low7[1:]:
        mark |= seven == value
    return np.flatnonzero(mark) + lo


def _holding(hits: np.ndarray, begin: np.ndarray, finish: np.ndarray) -> np.ndarray:
    """Whether each span ``begin[i]:finish[i]`` holds one of the positions ``hits`` (sorted)."""
    return np.searchsorted(hits, finish) > np.searchsorted(hits, begin)


def _stats_tail(view: memoryview, live: list[int], pos: list[int], end: list[int], other: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stats of the events ``live`` from ``pos`` on, as the rounds of :func:`events` read them; an event
    that strays from them is marked in ``other``."""
    msg: list[int] = []
    begin: list[int] = []
    finish: list[int] = []
    for i, at, stop in zip(live, pos, end):
        while at < stop:
            size = view[at + 1] if at + 1 < stop else 0x80
            body = at + 2
            if size >= 0x80 and at + 2 < stop and view[at + 2] < 0x80:
                size, body = (size & 0x7F) | view[at + 2] << 7, at + 3
            if view[at] != 0x22 or size >= 0x80 and body == at + 2 or body + size > stop:
                other[i] = True
                break
            msg.append(i)
            begin.append(body)
            finish.append(body + size)
            at = body + size
    return np.array(msg, np.int64), np.array(begin, np.int64), np.array(finish, np.int64)


def events(buf: Buffer, starts: np.ndarray, ends: np.ndarray, ids: tuple[int, ...] | None) -> Events:
    """XEvents ``starts[i]:ends[i]`` decoded as :func:`scan` decodes them with fields (1, 2, 3) and record 4,
    the records (stats) only those that could hold a field whose value is one of ``ids`` (a byte of them
    has the low seven bits of one of ``ids``: any varint of that value starts so); no records if None.

    Why not :func:`scan` for all: almost every event is written as fields 1, 2, 3 (each left out when 0) then
    its stats (field 4, a size of one or two bytes), and rounds that expect that layout take fewer numpy calls
    than general ones. An event that strays from it anywhere (a field repeated or out of order, another field,
    a longer size, damage) is decoded by :func:`scan` whole, so the values are the same whatever the layout."""
    count = starts.size
    other = np.zeros(count, bool)  # left to scan
    s, e = starts.astype(np.int64, copy=False), ends.astype(np.int64, copy=False)
    other |= s >= e
    v1, p1 = _optional(buf, s, e, 1, other, small=True)
    v2, p2 = _optional(buf, p1, e, 2, other)
    v3, p3 = _optional(buf, p2, e, 3, other)
    low7 = tuple(sorted({i & 0x7F for i in ids})) if ids else ()
    records = bool(low7)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    live = np.flatnonzero(~other & (p3 < e))
    if records:  # stats are collected only of the events holding such a byte after their fields 1-3
        hits = _hits(buf, int(s.min()), int(e.max()), low7) if count else np.zeros(0, np.int64)
        collect = np.zeros(count, bool)
        collect[live] = _holding(hits, p3[live], e[live])
    pos, end = p3[live], e[live]
    while live.size >= _TAIL:  # the stats, one a round: key 0x22, a size, a payload within the event
        size, body = _lengths(buf, pos)
        nxt = body + size
        ok = (buf.bytes[pos] == 0x22) & (body >= 0) & (nxt <= end)
        other[live[~ok]] = True
        if records:
            take = ok & collect[live]
            found.append((live[take], body[take], nxt[take]))
        go = ok & (nxt < end)
        live, pos, end = live[go], nxt[go], end[go]
    if live.size:  # a long tail of stats, one event at a time
        tail = _stats_tail(buf.view, live.tolist(), pos.tolist(), end.tolist(), other)
        if records and tail[0].size:
            take = collect[tail[0]]
            found.append((tail[0][take], tail[1][take], tail[2][take]))
    meta, offset, duration = v1, v2, v3  # the events left to scan get scan's values below
    slow = np.flatnonzero(other)
    damaged = np.zeros(count, bool)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    if found:
        msg, begin, finish = (np.concatenate(part) for part in zip(*found))
        keep = ~other[msg]
        parts.append((msg[keep], begin[keep], finish[keep]))
    if slow.size:
        got = scan(buf, s[slow], e[slow], (1, 2, 3), 4 if records else None)
        meta[slow], offset[slow], duration[slow] = got.values[1], got.values[2], got.values[3]
        damaged[slow] = got.damaged
        msg, begin, finish = got.records
        parts.append((slow[msg], begin, finish))
    if records and parts:
        msg, begin, finish = (np.concatenate(part) for part in zip(*parts))
        could = _holding(hits, begin, finish)  # a stat none of whose bytes could begin such a varint: unread
        msg, begin, finish = msg[could], begin[could], finish[could]
    else:
        msg = begin = finish = np.zeros(0, np.int64)
    return Events(meta, offset, duration, damaged, (msg, begin, finish))
