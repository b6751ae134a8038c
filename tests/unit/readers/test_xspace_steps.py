"""Which XSpace events are steps: an event with an integer ``step_num`` stat, however its stat is written. The
reader leaves unread the stats none of whose bytes could begin the ``step_num`` id's varint; a stat written
with a longer varint than needed (protobuf allows it), a uint64 value, or two metadata ids (the last counts)
must still be judged as protobuf reads it."""

from __future__ import annotations

from reportgen.problems import ProblemLog
from reportgen.readers.trace_model import USER_ANNOTATION
from reportgen.readers.xspace_trace import read_xspace
from tests.support.xspace_writer import int_field, len_field, plane, space, varint

MS = 10**9  # ps
STEP = 300  # the step_num stat's id: a two-byte varint, 0xAC 0x02


def _stat(meta: bytes, value: bytes) -> bytes:
    return len_field(4, meta + value)


def test_steps_are_found_however_their_stat_is_written(tmp_path):
    events = [
        (1, 0, MS, _stat(int_field(1, STEP), int_field(4, 3))),  # plain
        (1, 2 * MS, MS, _stat(b"\x08" + b"\xac\x82\x80\x00", int_field(3, 4))),  # id in five bytes, a uint64 value
        (1, 4 * MS, MS, _stat(int_field(1, 7), int_field(4, 5))),  # another stat: no step
        (1, 6 * MS, MS, _stat(int_field(1, 7) + int_field(1, STEP), int_field(4, 6))),  # the last id counts
        (1, 8 * MS, MS, _stat(int_field(1, STEP) + int_field(1, 7), int_field(4, 7))),  # ... both ways
        (1, 10 * MS, MS, _stat(int_field(1, STEP), b"")),  # no value: no step
        (1, 12 * MS, MS, _stat(int_field(1, 7), int_field(4, 1)) + _stat(int_field(1, STEP), int_field(4, -2))),
    ]
    host = plane("/host:CPU", [("python", 0, events)], {1: "train"}, {STEP: "step_num", 7: "other"})
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(space(host))
    problems = ProblemLog()
    trace = read_xspace(path, problems)
    names = [trace.names[i] for i in trace.name]
    assert names == ["ProfilerStep#3", "ProfilerStep#4", "train", "ProfilerStep#6", "train", "train",
                     "ProfilerStep#-2"]
    assert [int(c) == USER_ANNOTATION for c in trace.cat] == [n.startswith("Profiler") for n in names]
    assert problems.total == 0 and varint(STEP) == b"\xac\x02"
