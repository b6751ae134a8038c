"""The trace cache (readers/trace_cache.py): a warm read gives the cold read's columns and problems without
reading the file; a changed file, another reader version or a damaged entry is a miss, never trusted; the
folder keeps to its bound; a folder that cannot be written costs only the cache."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import zipfile
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from reportgen.problems import ProblemLog
from reportgen.readers import trace_cache
from reportgen.readers.trace_cache import (STORED_FIELDS, TraceCache, entry_arrays, entry_path, evict, file_key,
                                           load_entry, read_trace_cached, trace_cache_for)
from reportgen.readers.trace_files import READER_VERSION, read_trace_file
from reportgen.readers.trace_model import MemoryEvents, TraceColumns
from tests.support.paths import ROOT

RECORDINGS = ROOT / "tests" / "recordings"
MEMORY = RECORDINGS / "cpu-memory" / "leak" / "worker0.1.pt.trace.json.gz"  # allocator events
SHORT = RECORDINGS / "cpu-torch" / "short" / "pytorch-traces" / "vm_25557.1795718343710566171.pt.trace.json.gz"
JAX = RECORDINGS / "jax-tf" / "jax-cpu" / "logdir" / "plugins" / "profile" / "2026_11_26_18_48_00" / "vm.xplane.pb.gz"


def _copy(source: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copyfile(source, folder / source.name))


def _cut(source: Path, folder: Path) -> Path:
    """The trace's JSON cut at 70 %: events are salvaged and the damage is a Data quality problem."""
    text = gzip.decompress(source.read_bytes())
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name.removesuffix(".gz")
    target.write_bytes(text[: len(text) * 7 // 10])
    return target


def assert_same(a: TraceColumns, b: TraceColumns) -> None:
    """Every field equal: arrays element by element with their dtypes, NaN equal to NaN."""
    for f in fields(TraceColumns):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f.name
        elif f.name == "cpu_collectives":
            assert (x is None and y is None) or (x.pattern, x.flags) == (y.pattern, y.flags)
        elif f.name in ("memory", "flops"):
            assert x == y, f.name
            for column in MemoryEvents.COLUMNS if f.name == "memory" else ("time_us", "flops", "cycle"):
                assert getattr(x, column).dtype == getattr(y, column).dtype, (f.name, column)
        else:
            assert x == y and type(x) is type(y), f.name


def _reader_must_not_run(monkeypatch) -> None:
    def refuse(path, problems=None):
        raise AssertionError(f"the reader ran on {path}: a warm read must not read the file")
    monkeypatch.setattr(trace_cache, "read_trace_file", refuse)


@pytest.mark.parametrize("source", [MEMORY, SHORT, JAX], ids=["kineto-memory", "kineto", "xspace"])
def test_a_warm_read_gives_the_cold_reads_columns_without_reading(source, cache, tmp_path, monkeypatch):
    path = _copy(source, tmp_path / "job")
    expected_problems = ProblemLog()
    expected = read_trace_file(path, expected_problems)
    cold_problems = ProblemLog()
    cold = read_trace_cached(path, cold_problems, cache)
    assert_same(cold, expected)
    assert len(list(cache.folder.glob("*.npz"))) == 1
    _reader_must_not_run(monkeypatch)
    warm_problems = ProblemLog()
    warm = read_trace_cached(path, warm_problems, cache)
    assert_same(warm, expected)
    assert warm_problems.to_json() == expected_problems.to_json()
    assert expected.start_us.size > 100
    if source is MEMORY:
        assert len(warm.memory) > 0


def test_a_damaged_traces_problems_come_back_from_the_cache(cache, tmp_path, monkeypatch):
    path = _cut(MEMORY, tmp_path / "job")
    expected_problems = ProblemLog()
    expected = read_trace_file(path, expected_problems)
    assert expected_problems.total > 0 and not expected.complete and expected.start_us.size > 0
    read_trace_cached(path, ProblemLog(), cache)
    _reader_must_not_run(monkeypatch)
    into = ProblemLog()
    into.add("earlier.json", 3, "a problem met before this file")
    warm = read_trace_cached(path, into, cache)
    assert_same(warm, expected)
    expected_log = ProblemLog()
    expected_log.add("earlier.json", 3, "a problem met before this file")
    expected_log.merge(expected_problems)
    assert into.to_json() == expected_log.to_json()
    assert any(p["file"] == str(path) for p in into.to_json()["problems"])


def test_the_key_follows_the_content_and_the_name_not_the_files_times(tmp_path):
    path = _copy(SHORT, tmp_path / "a")
    key, identity = file_key(path, 200)
    assert identity[0] == path.stat().st_size
    os.utime(path, ns=(1, 1))  # touched (a restored CI artifact): the same content is the same entry
    assert file_key(path, 200)[0] == key
    assert file_key(_copy(SHORT, tmp_path / "b"), 200)[0] != key  # another name: its label and problems differ
    assert file_key(path, 10)[0] != key  # another cap on the problems listed
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte in the middle, size and mtime put back
    stat = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert file_key(path, 200)[0] != key


def test_no_key_for_what_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "rank0.pt.trace.json"
    os.mkfifo(fifo)  # opened without blocking, never read
    assert file_key(fifo, 200) is None
    assert file_key(tmp_path / "missing.pt.trace.json", 200) is None
    assert file_key(tmp_path, 200) is None


def test_another_reader_version_is_a_miss(cache, tmp_path, monkeypatch):
    path = _copy(SHORT, tmp_path / "job")
    read_trace_cached(path, ProblemLog(), cache)
    key = file_key(path, 200)[0]
    monkeypatch.setattr(trace_cache, "READER_VERSION", READER_VERSION + 1)
    bumped = file_key(path, 200)[0]
    assert bumped != key and load_entry(cache, bumped, path) is None
    read_trace_cached(path, ProblemLog(), cache)
    assert {p.stem for p in cache.folder.glob("*.npz")} == {key, bumped}


def _damage_cut(where: Path) -> None:
    where.write_bytes(where.read_bytes()[: where.stat().st_size // 2])


def _damage_empty(where: Path) -> None:
    where.write_bytes(b"")


def _damage_flip(where: Path) -> None:  # one byte of an array: the zip's CRC fails
    data = bytearray(where.read_bytes())
    data[len(data) // 3] ^= 0x55
    where.write_bytes(bytes(data))


def _damage_foreign(where: Path) -> None:  # another entry renamed over this one: its key is not this one's
    with np.load(where) as entry:
        arrays = {name: entry[name] for name in entry.files}
    meta = json.loads(arrays["meta"].tobytes())
    meta["key"] = "0" * 64
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(where, "wb") as handle:
        np.savez(handle, **arrays)


def _damage_meta_types(where: Path) -> None:  # the meta's values of the wrong kinds
    with np.load(where) as entry:
        arrays = {name: entry[name] for name in entry.files}
    meta = json.loads(arrays["meta"].tobytes())
    meta.update(names=[1, 2], label=None, device_memory={"0": "x"}, problem_items=[["f", True, "r"]])
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(where, "wb") as handle:
        np.savez(handle, **arrays)


def _damage_shape(where: Path) -> None:  # a column one row short, a name index past the names
    with np.load(where) as entry:
        arrays = {name: entry[name] for name in entry.files}
    arrays["e_dur_us"] = arrays["e_dur_us"][:-1]
    with open(where, "wb") as handle:
        np.savez(handle, **arrays)


def _damage_pickle(where: Path) -> None:  # an object array: never unpickled
    with open(where, "wb") as handle:
        np.savez(handle, meta=np.array([{"key": "x"}], dtype=object))


def _damage_not_zip(where: Path) -> None:
    with zipfile.ZipFile(where, "w") as z:
        z.writestr("meta.npy", b"not an array")


@pytest.mark.parametrize("damage", [_damage_cut, _damage_empty, _damage_flip, _damage_foreign, _damage_meta_types,
                                    _damage_shape,
                                    _damage_pickle, _damage_not_zip])
def test_a_damaged_entry_is_removed_and_the_file_read_again(damage, cache, tmp_path):
    path = _copy(SHORT, tmp_path / "job")
    expected = read_trace_file(path, ProblemLog())
    read_trace_cached(path, ProblemLog(), cache)
    key = file_key(path, 200)[0]
    damage(entry_path(cache, key))
    assert load_entry(cache, key, path) is None
    assert not entry_path(cache, key).exists()
    problems = ProblemLog()
    assert_same(read_trace_cached(path, problems, cache), expected)
    assert problems.total == 0
    assert load_entry(cache, key, path) is not None  # kept again, whole


def test_the_folder_keeps_to_its_bound_least_recently_used_first(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    paths = [_copy(SHORT, tmp_path / f"job{i}") for i in range(3)]
    big = TraceCache(folder, 1 << 30)
    for path in paths:
        read_trace_cached(path, ProblemLog(), big)
    entries = {path: entry_path(big, file_key(path, 200)[0]) for path in paths}
    for age, path in enumerate(paths):  # job0 the oldest, then job1, job2
        os.utime(entries[path], (1_000_000 + age, 1_000_000 + age))
    size = entries[paths[0]].stat().st_size
    bounded = TraceCache(folder, 2 * size + size // 2)
    assert load_entry(bounded, file_key(paths[0], 200)[0], paths[0]) is not None  # job0 used: now the newest
    stale = folder / ".deadbeef.1234.tmp"  # a crashed writer's, an hour old
    stale.write_bytes(b"x" * 10)
    os.utime(stale, (1, 1))
    assert evict(bounded) == 2
    assert sorted(p.name for p in folder.iterdir()) == sorted([entries[paths[0]].name, entries[paths[2]].name])


def test_an_entry_larger_than_the_bound_is_not_kept(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    tiny = TraceCache(folder, 1000)
    path = _copy(SHORT, tmp_path / "job")
    expected = read_trace_file(path, ProblemLog())
    assert_same(read_trace_cached(path, ProblemLog(), tiny), expected)
    assert list(folder.iterdir()) == []


def test_a_folder_that_cannot_be_written_costs_only_the_cache(cache, tmp_path, monkeypatch):
    path = _copy(SHORT, tmp_path / "job")
    expected = read_trace_file(path, ProblemLog())

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(trace_cache.tempfile, "mkstemp", full)
    assert_same(read_trace_cached(path, ProblemLog(), cache), expected)
    assert list(cache.folder.iterdir()) == []
    monkeypatch.undo()
    read_only = TraceCache(cache.folder, cache.max_bytes, writable=False)
    assert_same(read_trace_cached(path, ProblemLog(), read_only), expected)
    assert list(cache.folder.iterdir()) == []  # read-only: nothing kept
    read_trace_cached(path, ProblemLog(), cache)
    entry = next(cache.folder.iterdir())
    mtime = entry.stat().st_mtime_ns
    os.utime(entry, ns=(mtime - 10**9, mtime - 10**9))
    assert_same(read_trace_cached(path, ProblemLog(), read_only), expected)  # its entries are still used
    assert entry.stat().st_mtime_ns == mtime - 10**9  # and not touched


def test_where_the_cache_is_and_when_it_is_off(tmp_path, monkeypatch):
    said: list[str] = []
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    monkeypatch.delenv("REPORTGEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    found = trace_cache_for(None, said.append, env)
    assert found == TraceCache(tmp_path / "xdg" / "reportgen" / "traces", 2048 << 20, True) and said == []
    assert trace_cache_for(tmp_path / "mine", said.append, {"REPORTGEN_CACHE_MAX_MB": "10"}) == TraceCache(
        tmp_path / "mine" / "traces", 10 << 20, True)
    assert trace_cache_for(None, said.append, {**env, "REPORTGEN_NO_CACHE": "1"}) is None and said == []
    assert trace_cache_for(None, said.append, {**env, "REPORTGEN_NO_CACHE": "0"}) is not None
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert trace_cache_for(blocker, said.append, env) is None
    assert len(said) == 1 and said[0].startswith(f"trace cache off: {blocker / 'traces'} cannot be made")
    monkeypatch.setattr(trace_cache.os, "access", lambda *a, **k: False)
    assert trace_cache_for(tmp_path / "ro", said.append, env).writable is False
    assert said[1] == f"trace cache {tmp_path / 'ro' / 'traces'} is read-only: its entries are used, no new one is kept"


def test_a_file_that_changes_while_read_is_not_kept(cache, tmp_path, monkeypatch):
    path = _copy(SHORT, tmp_path / "job")
    real = trace_cache.read_trace_file

    def growing(p, problems=None):
        trace = real(p, problems)
        with open(p, "ab") as handle:  # a live job's trace, appended to while read
            handle.write(b"\n")
        return trace
    monkeypatch.setattr(trace_cache, "read_trace_file", growing)
    read_trace_cached(path, ProblemLog(), cache)
    assert list(cache.folder.iterdir()) == []


def test_a_file_with_no_event_is_not_kept(cache, tmp_path):
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text('{"traceEvents": []}')
    assert read_trace_cached(path, ProblemLog(), cache).start_us.size == 0
    assert list(cache.folder.iterdir()) == []  # a sibling copy put beside it later must be read


def test_every_field_of_the_model_has_its_place_in_an_entry():
    """A field added to TraceColumns needs its place in entry_arrays / entry_from_arrays, and a CACHE_FORMAT bump."""
    assert {f.name for f in fields(TraceColumns)} == STORED_FIELDS


def _reduction_digest(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        problems = ProblemLog()
        trace = read_trace_file(path, problems)
        for name, array in sorted(entry_arrays(trace, problems, "k").items()):
            if name == "meta":  # the problems name the file where it lies: only its name is the content's
                array = np.frombuffer(array.tobytes().replace(str(path.parent).encode(), b"<dir>"), np.uint8)
            digest.update(f"{name} {array.dtype.str} {array.size};".encode())
            digest.update(array.tobytes())
    return digest.hexdigest()


def test_reader_version_is_bumped_with_the_output(tmp_path):
    """The readers' output for the recordings, as one digest. When a change to a reader fails this test, the
    cache would serve the old output for the same bytes: bump ``READER_VERSION`` (readers/trace_files.py)
    and write the new pair here. When the readers got only faster, the digest stays and so does the number."""
    paths = [_copy(MEMORY, tmp_path), _copy(SHORT, tmp_path), _copy(JAX, tmp_path), _cut(SHORT, tmp_path / "cut")]
    assert (READER_VERSION, _reduction_digest(paths)) == (5, "c3e24533a7c41a993196123fb45849bc3b6ab858951cf5bdde928bf6c2b2704c")


def test_two_readers_at_once_each_get_the_columns_and_leave_one_whole_entry(cache, tmp_path):
    """Two runs sharing the cache (threads here: the same temp-file-and-rename path as two processes)."""
    import threading

    path = _copy(SHORT, tmp_path / "job")
    expected = read_trace_file(path, ProblemLog())
    results: list = []
    start = threading.Barrier(4)

    def run() -> None:
        start.wait()
        for _ in range(3):
            results.append(read_trace_cached(path, ProblemLog(), cache))
    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 12
    for trace in results:
        assert_same(trace, expected)
    assert [p.name for p in cache.folder.iterdir()] == [f"{file_key(path, 200)[0]}.npz"]
    assert load_entry(cache, file_key(path, 200)[0], path) is not None
