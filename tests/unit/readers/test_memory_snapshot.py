"""CUDA memory snapshots (``torch.cuda.memory._dump_snapshot()``) read without running code
(reportgen.readers.memory_snapshot, ``reportgen memory-snapshot``): a snapshot in torch's layout summarised
against its known numbers; a pickle that would run code, a cut one, a huge one and a non-snapshot refused with one
line and exit 2."""

from __future__ import annotations

import json
import os
import pickle

import pytest

from reportgen.cli import main
from reportgen.errors import InputError
from reportgen.readers import memory_snapshot
from reportgen.readers.memory_snapshot import describe, load_snapshot, summarize

MIB = 1 << 20


def _frames(filename, line, name):
    return [{"filename": "/usr/lib/python3/site-packages/torch/nn/modules/linear.py", "line": 125, "name": "forward"},
            {"filename": filename, "line": line, "name": name}]


# torch's layout: segments with their blocks (state, size, frames) and the allocator's trace per device
SNAPSHOT = {
    "segments": [
        {"device": 0, "address": 1 << 40, "total_size": 64 * MIB, "allocated_size": 48 * MIB, "active_size": 48 * MIB,
         "stream": 0, "segment_type": "large", "blocks": [
             {"size": 40 * MIB, "requested_size": 40 * MIB, "address": 1 << 40, "state": "active_allocated",
              "frames": _frames("train.py", 42, "forward")},
             {"size": 8 * MIB, "requested_size": 8 * MIB, "address": (1 << 40) + 40 * MIB, "state": "active_allocated",
              "frames": _frames("model.py", 7, "attention")},
             {"size": 16 * MIB, "address": (1 << 40) + 48 * MIB, "state": "inactive", "frames": []}]},
        {"device": 0, "address": 1 << 41, "total_size": 2 * MIB, "allocated_size": 0, "active_size": 0,
         "stream": 0, "segment_type": "small", "blocks": [{"size": 2 * MIB, "state": "inactive", "frames": []}]},
    ],
    "device_traces": [[{"action": "alloc", "addr": 1 << 40, "size": 40 * MIB, "stream": 0, "time_us": 1},
                       {"action": "oom", "size": 512 * MIB, "device_free": 10 * MIB, "time_us": 9, "frames": []}]],
}


def test_a_snapshot_is_summarised_per_device_with_the_frames_that_allocated(tmp_path):
    path = tmp_path / "snapshot.pickle"
    path.write_bytes(pickle.dumps(SNAPSHOT))
    (d,) = summarize(load_snapshot(path))["devices"]
    assert (d["device"], d["segments"], d["reserved_bytes"], d["allocated_bytes"]) == (0, 2, 66 * MIB, 48 * MIB)
    assert d["unallocated_bytes"] == 18 * MIB and d["unallocated_share"] == pytest.approx(18 / 66)
    assert d["largest_free_bytes"] == 16 * MIB
    assert d["largest_blocks"] == [{"bytes": 40 * MIB, "allocated_at": "train.py:42 forward"},
                                   {"bytes": 8 * MIB, "allocated_at": "model.py:7 attention"}]
    summary = summarize(load_snapshot(path))
    assert summary["out_of_memory"] == [{"device": 0, "bytes": 512 * MIB, "time_us": 9, "free_bytes": 10 * MIB}]
    lines = describe(summary)
    assert lines[0] == ("device 0: reserved 0.06 GiB in 2 segments, allocated 0.05 GiB, reserved but unallocated "
                        "0.02 GiB (27 %), largest free block 16.0 MiB")
    assert lines[1].strip() == "40.0 MiB  train.py:42 forward"
    assert lines[-1] == "out of memory on device 0: asked for 512.0 MiB with 10.0 MiB free"


def test_the_command_prints_the_summary_and_writes_json(tmp_path, capsys):
    path = tmp_path / "snapshot.pickle"
    path.write_bytes(pickle.dumps(SNAPSHOT))
    assert main(["memory-snapshot", str(path), "--json", str(tmp_path / "s.json"), "--quiet"]) == 0
    assert "train.py:42 forward" in capsys.readouterr().out
    assert json.loads((tmp_path / "s.json").read_text())["devices"][0]["reserved_bytes"] == 66 * MIB


class _RunsCode:
    def __reduce__(self):
        return (os.system, ("echo pwned > " + os.devnull,))


@pytest.mark.parametrize("payload, says", [
    (pickle.dumps(_RunsCode()), "memory snapshot refused: it refers to posix.system, which would run code"
     if os.name == "posix" else "which would run code"),
    (pickle.dumps({"segments": [_RunsCode()]}), "which would run code"),
    (pickle.dumps(SNAPSHOT)[:200], "not a readable memory snapshot (damaged or cut pickle"),
    (b"not a pickle at all", "not a readable memory snapshot"),
    (pickle.dumps({"traceEvents": []}), "not a memory snapshot (no list of segments)"),
])
def test_hostile_and_damaged_snapshots_are_refused_with_one_line_and_exit_2(tmp_path, capsys, payload, says):
    path = tmp_path / "bad.pickle"
    path.write_bytes(payload)
    with pytest.raises(InputError):
        load_snapshot(path)
    assert main(["memory-snapshot", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("reportgen: error: ") and says in err[0]


def test_a_huge_snapshot_is_refused_before_it_is_read(tmp_path, monkeypatch, capsys):
    path = tmp_path / "huge.pickle"
    path.write_bytes(pickle.dumps(SNAPSHOT))
    monkeypatch.setattr(memory_snapshot, "MAX_BYTES", 100)
    assert main(["memory-snapshot", str(path)]) == 2
    assert "refused (the limit is" in capsys.readouterr().err
    assert main(["memory-snapshot", str(tmp_path)]) == 2  # a folder: not a file


def test_nothing_in_a_refused_pickle_runs(tmp_path):
    marker = tmp_path / "ran"

    class _OpensAFile:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = tmp_path / "hostile.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "x": _OpensAFile()}))
    with pytest.raises(InputError, match=r"(builtins|io)\.open, which would run code"):
        load_snapshot(path)
    assert not marker.exists()
