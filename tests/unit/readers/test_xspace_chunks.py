"""The XSpace reader decodes a line's events a chunk at a time (``xspace_trace.CHUNK``) and looks for them a
window of bytes at a time (``protovec.WINDOW``), so that its arrays stay small on lines of millions of events.
Where the chunks and windows fall must not show: a real recording, whole and damaged inside a line, reads the
same with chunks of 97 events and windows of 4099 bytes as with the defaults (columns, names, problems)."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from reportgen.problems import ProblemLog
from reportgen.readers import xspace_trace
from reportgen.readers.xspace_trace import read_xspace
from reportgen.traces import protovec
from tests.support.paths import ROOT

RECORDING = ROOT / "tests" / "recordings" / "jax-tf" / "tf-cpu"


def _read(path):
    problems = ProblemLog()
    trace = read_xspace(path, problems)
    columns = {a: getattr(trace, a) for a in ("cat", "name", "start_us", "dur_us", "device", "nbytes", "tid", "corr")}
    return columns, trace.names, ([p.reason for p in problems.items], dict(problems.counts)), trace.events_in_file


@pytest.mark.parametrize("damage", [None, 0.4, 0.9])
def test_chunks_and_windows_do_not_show(tmp_path, monkeypatch, damage):
    data = bytearray(gzip.decompress(next(RECORDING.rglob("*.xplane.pb.gz")).read_bytes()))
    if damage is not None:  # eleven 0xff bytes in the events of a line: a wrong field number, a varint cut short
        at = int(len(data) * damage)
        data[at:at + 11] = b"\xff" * 11
    path = tmp_path / "vm.xplane.pb"
    path.write_bytes(data)
    whole = _read(path)
    monkeypatch.setattr(xspace_trace, "CHUNK", 97)
    monkeypatch.setattr(protovec, "WINDOW", 4099)
    small = _read(path)
    assert whole[1:] == small[1:]
    for attr, column in whole[0].items():
        assert column.dtype == small[0][attr].dtype and np.array_equal(column, small[0][attr]), attr
    assert whole[3] > 8000 and (damage is None) == (not any(r.startswith("XSpace line") for r in whole[2][0]))
