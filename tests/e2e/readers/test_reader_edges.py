"""Engine reader edges from the second adversarial pass (issue #20): folders a normal user cannot
list, a system-metrics file that is one endless line, ``--incremental`` and files rewritten in place.

The bad-input corpus (tests/support/corpus/) holds the same shapes as whole-report cases; these tests check
what the corpus cannot: the real permission check as an unprivileged user (the corpus simulates it
at the ``os.scandir`` boundary when run as root), memory measured from outside the process on a
2 GB line, and the incremental cache's content check.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reportgen.engine import analyze, load_data
from reportgen.readers.incremental import CONTENT_BLOCK, local_fingerprint
from tests.support.corpus.make_corpus import good_framework, good_system, instants, write
from tests.support.paths import ROOT

REPO = ROOT
T = 1_700_000_040


def _as_unprivileged(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``python -c code`` where mode 000 means what it says: as this user when it is not root;
    as root, with the capabilities that let root ignore file modes (CAP_DAC_OVERRIDE,
    CAP_DAC_READ_SEARCH) dropped by ``setpriv`` (root in a CI container keeps them; a user who
    copied another user's job folder has neither). The code must itself show that the drop worked."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-c", code]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root can read mode 000 and setpriv (util-linux) is not there to drop that")
        cmd = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--", *cmd]
    return subprocess.run(cmd, cwd=str(cwd), env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def shared_tmp(tmp_path):
    yield tmp_path
    for p in tmp_path.rglob("*"):
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)


@pytest.mark.parametrize("kind", ["system", "framework"])
def test_unreadable_hour_folder_is_counted_when_read_by_a_normal_user(shared_tmp, kind):
    """Issue #20 item 5: an <hour>/ folder of mode 000 lost its files silently (Data quality said 0
    problems). As a real unprivileged user, the folder is now one problem and the other hour is used."""
    prof = shared_tmp / "profile"
    planted_sys = good_system(prof)
    planted_events = good_framework(prof)
    if kind == "system":
        hidden = prof / "system/incremental/2023111423"
        write(prof, f"system/incremental/2023111423/{T + 3600}.algo-1.json",
              "\n".join(instants(10, start=T + 3600)) + "\n")
    else:
        hidden = prof / "framework/pevents/2023111423"
        write(prof, f"framework/pevents/2023111423/{T * 1_000_000 + 3_660_000_000}_27-algo-1_pythontimeline.json",
              json.dumps([{"name": "x", "ph": "X", "ts": 1, "dur": 1, "pid": 1}]))
    hidden.chmod(0)
    code = (
        "import json, os, numpy as np\n"
        "try:\n"
        f"    os.listdir({str(hidden)!r}); raise SystemExit('the folder is readable: not a real test')\n"
        "except PermissionError:\n"
        "    pass\n"
        "from reportgen.engine import load_data\n"
        f"data, problems = load_data({str(prof)!r})\n"
        "print(json.dumps({'counts': dict(problems.counts),"
        " 'items': [[p.file, p.reason] for p in problems.items],"
        " 'values': int(sum(np.count_nonzero(~np.isnan(n.values)) for n in data.nodes.values())),"
        " 'events': int(data.framework.n_events)}))\n"
    )
    proc = _as_unprivileged(code, shared_tmp)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    rel = str(hidden.relative_to(prof))
    assert got["counts"] == {"unreadable folder: Permission denied": 1}
    assert got["items"] == [[rel, "unreadable folder: Permission denied"]]
    assert got["values"] == planted_sys and got["events"] == planted_events


@pytest.mark.slow
def test_two_gigabyte_line_without_newline_is_skipped_in_bounded_memory(tmp_path):
    """Issue #20 item 1 (system part): a 2 GB metrics file with no newline was read as one line
    (4.0 GB peak). The file here is sparse (2 GiB of NUL bytes after a record's start, no disk
    used); the careful path now reads it in 1 MiB pieces and counts one skipped line, and the node's
    other file is used. Peak RSS is the child's own since its exec, as the kernel reports it (``VmHWM``, and
    ``RUSAGE_CHILDREN`` for any process it forked): ``wait4``'s ``ru_maxrss`` also counts the address space the
    child had before its exec, a copy of this pytest process (656 MB once pytest had run other files, against
    140 MB for the child itself: the test failed under pytest-xdist's file order)."""
    prof = tmp_path / "p"
    planted = good_system(prof)
    big = prof / f"system/incremental/2023111422/{T + 60}.algo-1.json"
    with open(big, "wb") as fh:
        fh.write(b'{"Type": "cpu", "Name": "')
        fh.truncate(2 << 30)
    code = (
        "import json, numpy as np\n"
        "from reportgen.engine import load_data\n"
        f"data, problems = load_data({str(prof)!r})\n"
        "import resource\n"
        "own = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) * 1024\n"
        "forked = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
        "print(json.dumps({'counts': dict(problems.counts),"
        " 'values': int(sum(np.count_nonzero(~np.isnan(n.values)) for n in data.nodes.values())),"
        " 'peak': max(own, forked)}))\n"
    )
    out = tmp_path / "out.txt"
    with open(out, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=sink, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
        _, status, _ = os.wait4(proc.pid, 0)
    text = out.read_text()
    assert os.waitstatus_to_exitcode(status) == 0, text
    got = json.loads(text.splitlines()[-1])
    peak = got.pop("peak")
    assert got == {"counts": {"line longer than 1 MiB (skipped)": 1}, "values": planted}
    print(f"2 GiB line: peak RSS {peak / 1e6:.0f} MB")
    assert peak < 600e6  # before the fix: the whole line and its copy (4.0 GB)


def _rewrite_in_place(path: Path, old: bytes, new: bytes) -> None:
    """Change bytes with the size and the mtime kept (what ``cp -p`` or ``rsync -t`` leave)."""
    st = path.stat()
    data = path.read_bytes()
    assert len(old) == len(new) and old in data
    path.write_bytes(data.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def _values(folder: Path) -> dict:
    return {p.name: json.loads(p.read_text()) for p in sorted((folder / "profiler-reports").glob("*.json"))}


def test_incremental_sees_a_file_rewritten_with_size_and_mtime_kept(tmp_path):
    """Issue #20 item 11: the cache keyed files by size + mtime only, so a file rewritten in place
    with both kept served the old numbers. The fingerprint now holds a digest of the head and tail
    blocks: the rewritten file is read again and the numbers equal a fresh read."""
    prof = tmp_path / "p"
    good_system(prof, n=40)
    good_framework(prof)
    cache = tmp_path / "cache"
    first = analyze(prof, tmp_path / "o1", cache_root=cache)
    assert first.system_files_read == 1
    victim = next((prof / "system").rglob("*.json"))
    _rewrite_in_place(victim, b'"Value": 80.0', b'"Value": 20.0')  # every GPU sample: 80 % -> 20 %
    second = analyze(prof, tmp_path / "o2", cache_root=cache)
    assert second.system_files_read == 1
    analyze(prof, tmp_path / "fresh")
    assert _values(tmp_path / "o2") == _values(tmp_path / "fresh")
    assert _values(tmp_path / "o2") != _values(tmp_path / "o1")
    gpu = _values(tmp_path / "fresh")["OverallSystemUsage.json"]["Details"]["GPU"]
    assert all(v["max"] == 20.0 for v in gpu.values())


def test_incremental_fingerprint_covers_head_and_tail_but_not_the_middle(tmp_path):
    """What the content check can and cannot see (docs/reliability.md): a change in the first or
    last 64 KiB changes the fingerprint; a same-size change only in the middle of a bigger file,
    mtime put back, does not (reading every byte of every file would)."""
    path = tmp_path / "f.json"
    size = 3 * CONTENT_BLOCK
    path.write_bytes(b"a" * size)
    base = local_fingerprint(tmp_path, path)
    assert base[:2] == ("f.json", size) and len(base) == 4
    for offset, expect_change in ((10, True), (size - 10, True), (size // 2, False)):
        data = bytearray(b"a" * size)
        data[offset] = ord("b")
        _rewrite_in_place(path, bytes(path.read_bytes()), bytes(data))
        assert (local_fingerprint(tmp_path, path) != base) is expect_change, offset
        _rewrite_in_place(path, bytes(data), b"a" * size)
    small = tmp_path / "s.json"  # a file up to two blocks long is hashed whole
    small.write_bytes(b"x" * (2 * CONTENT_BLOCK))
    before = local_fingerprint(tmp_path, small)
    _rewrite_in_place(small, b"x" * (2 * CONTENT_BLOCK), b"x" * CONTENT_BLOCK + b"y" + b"x" * (CONTENT_BLOCK - 1))
    assert local_fingerprint(tmp_path, small) != before


def test_pre2001_clock_gives_a_time_axis_and_step_windows(tmp_path):
    """Issue #20 item 4: a clock before 2001-09-09 (8-9 digit epoch) lost the time axis (StepOutlier
    IndexError) and the system files were skipped. Both are now read, on one axis."""
    t = 968_895_960
    prof = tmp_path / "p"
    lines = instants(20, start=t)
    write(prof, f"system/incremental/2000091401/{t}.algo-1.json", "\n".join(lines) + "\n")
    write(prof, f"system/incremental/2000091401/{t // 10}.algo-2.json",
          "\n".join(instants(4, start=t // 10, node="algo-2")) + "\n")  # 8 digits: 1973
    data, problems = load_data(prof)
    assert set(data.nodes) == {"algo-1"}  # algo-2's only file is 27 years away (below)
    assert data.t0_us == t * 1_000_000
    assert int(np.count_nonzero(~np.isnan(data.nodes["algo-1"].values))) == len(lines)
    # the 1973 file (read: 8 digits match the name pattern) is 27 years outside the main run of
    # files: its 24 records are counted as a clock jump, not silently skipped
    assert problems.counts == {"timestamp more than 30 days outside the files' time range (clock jump; dropped)": 24}
