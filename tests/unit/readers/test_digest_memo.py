"""The digest memo (readers/digest_memo.py): a file known by its identity is not read again to name its trace cache
entry; a file changed in any way a write can leave (ctime), or written too close to its hashing (git's racy case),
is hashed again; damaged records are never used; the log keeps to its bound; links and FIFOs are not followed."""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import time
from pathlib import Path

import pytest

from reportgen.problems import ProblemLog
from reportgen.readers import digest_memo, trace_cache
from reportgen.readers.digest_memo import MEMO_NAME, RACY_NS, RECORD, DigestMemo, identity, pack
from reportgen.readers.trace_cache import TraceCache, file_key, read_trace_cached, trace_cache_for
from tests.support.paths import ROOT

SHORT = (ROOT / "tests" / "recordings" / "cpu-torch" / "short" / "pytorch-traces"
         / "vm_25557.1795718343710566171.pt.trace.json.gz")
LATER = 10 * RACY_NS  # a clock this far ahead of the files' times: every file is safely older than its hashing


def later() -> int:
    return time.time_ns() + LATER


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def folder(tmp_path) -> Path:
    where = tmp_path / "cache"
    where.mkdir()
    return where


@pytest.fixture
def hashed(monkeypatch) -> list[Path]:
    """The files hashed in full from now on."""
    seen: list[Path] = []
    real = digest_memo.hash_file

    def counting(path):
        seen.append(Path(path))
        return real(path)
    monkeypatch.setattr(digest_memo, "hash_file", counting)
    return seen


def _file(tmp_path: Path, name: str = "rank0.pt.trace.json", data: bytes = b'{"traceEvents": [1, 2, 3]}') -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_known_file_is_not_read_again(folder, tmp_path, hashed):
    path = _file(tmp_path)
    digest, st = DigestMemo(folder, clock=later).digest(path)
    assert digest == _sha(path) and identity(st) == identity(os.stat(path)) and hashed == [path]
    assert (folder / MEMO_NAME).stat().st_size == RECORD
    assert DigestMemo(folder, clock=later).digest(path)[0] == digest  # another run, the memo read from disk
    assert hashed == [path]


def test_a_file_changed_in_place_with_its_size_and_mtime_put_back_is_hashed_again(folder, tmp_path, hashed):
    path = _file(tmp_path)
    before = os.stat(path)
    digest = DigestMemo(folder, clock=later).digest(path)[0]
    time.sleep(0.05)  # past the file system clock's tick
    path.write_bytes(b'{"traceEvents": [1, 2, 4]}')  # the same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime put back (cp -p): only the ctime moved
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert after.st_ctime_ns != before.st_ctime_ns
    found = DigestMemo(folder, clock=later).digest(path)[0]
    assert found == _sha(path) != digest and hashed == [path, path]


def test_a_file_written_within_the_racy_window_is_hashed_again(folder, tmp_path, hashed):
    path = _file(tmp_path)  # written just now: a write in the same clock tick would keep its identity
    assert DigestMemo(folder).digest(path)[0] == _sha(path)
    assert not (folder / MEMO_NAME).exists()  # not remembered
    assert DigestMemo(folder).digest(path)[0] == _sha(path)
    assert hashed == [path, path]


def test_a_record_taken_within_the_racy_window_is_not_trusted(folder, tmp_path, hashed):
    """The race itself: the file rewritten in the tick its hashing began, so the record holds its identity and a
    digest of what it held before. Recorded safely after the file's last change, the same record is trusted."""
    path = _file(tmp_path)
    st = os.stat(path)
    stale = hashlib.sha256(b"what the file held before").digest()
    changed = max(st.st_mtime_ns, st.st_ctime_ns)
    (folder / MEMO_NAME).write_bytes(pack(identity(st), changed + RACY_NS // 2, stale))
    assert DigestMemo(folder).digest(path)[0] == _sha(path) and hashed == [path]
    (folder / MEMO_NAME).write_bytes(pack(identity(st), changed + RACY_NS + 1, stale))
    assert DigestMemo(folder).digest(path)[0] == stale.hex() and hashed == [path]


@pytest.mark.parametrize("damage", ["flipped", "cut", "foreign"])
def test_damaged_records_are_never_used_and_the_log_is_rewritten(damage, folder, tmp_path, hashed):
    a, b = _file(tmp_path, "a.json", b"a" * 100), _file(tmp_path, "b.json", b"b" * 100)
    memo = DigestMemo(folder, clock=later)
    memo.digest(a), memo.digest(b)
    log = folder / MEMO_NAME
    raw = bytearray(log.read_bytes())
    if damage == "flipped":
        raw[RECORD + 40] ^= 0x01  # b's record: its digest
        log.write_bytes(bytes(raw))
    elif damage == "cut":
        log.write_bytes(bytes(raw) + bytes(raw[:RECORD // 2]))  # half a record appended
    else:
        log.write_bytes(os.urandom(RECORD * 3))
    hashed.clear()
    memo = DigestMemo(folder, clock=later)
    assert memo.digest(a)[0] == _sha(a) and memo.digest(b)[0] == _sha(b)
    assert hashed == {"flipped": [b], "cut": [], "foreign": [a, b]}[damage]
    kept = log.read_bytes()
    assert len(kept) % RECORD == 0 and all(digest_memo.unpack(kept[i:i + RECORD]) is not None
                                           for i in range(0, len(kept), RECORD))
    hashed.clear()
    DigestMemo(folder, clock=later).digest(a), DigestMemo(folder, clock=later).digest(b)
    assert hashed == []  # the rewritten log serves both


def test_the_log_keeps_to_its_bound_the_most_recent_kept(folder, tmp_path, hashed, monkeypatch):
    monkeypatch.setattr(digest_memo, "KEEP_RECORDS", 3)
    monkeypatch.setattr(digest_memo, "MAX_RECORDS", 5)
    files = [_file(tmp_path, f"{i}.json", bytes([i]) * 10) for i in range(12)]
    memo = DigestMemo(folder, clock=later)
    for path in files:
        memo.digest(path)
        assert (folder / MEMO_NAME).stat().st_size <= 5 * RECORD
    hashed.clear()
    fresh = DigestMemo(folder, clock=later)
    for path in files:
        assert fresh.digest(path)[0] == _sha(path)
    assert files[-1] not in hashed and files[0] in hashed


def test_a_link_or_fifo_under_the_memos_name_is_neither_followed_nor_replaced(folder, tmp_path):
    path = _file(tmp_path)
    elsewhere = _file(tmp_path, "elsewhere", b"")
    (folder / MEMO_NAME).symlink_to(elsewhere)
    assert DigestMemo(folder, clock=later).digest(path)[0] == _sha(path)
    assert (folder / MEMO_NAME).is_symlink() and elsewhere.read_bytes() == b""
    (folder / MEMO_NAME).unlink()
    os.mkfifo(folder / MEMO_NAME)  # opened without blocking: no hang
    assert DigestMemo(folder, clock=later).digest(path)[0] == _sha(path)
    assert not (folder / MEMO_NAME).is_file()


def test_no_digest_for_what_is_not_a_regular_file(folder, tmp_path):
    fifo = tmp_path / "rank0.pt.trace.json"
    os.mkfifo(fifo)
    memo = DigestMemo(folder, clock=later)
    assert memo.digest(fifo) is None and memo.digest(tmp_path / "missing") is None and memo.digest(tmp_path) is None


def test_a_read_only_memo_is_used_and_never_written(folder, tmp_path, hashed):
    path = _file(tmp_path)
    DigestMemo(folder, clock=later).digest(path)
    before = (folder / MEMO_NAME).read_bytes()
    other = _file(tmp_path, "other.json", b"other")
    read_only = DigestMemo(folder, writable=False, clock=later)
    assert read_only.digest(path)[0] == _sha(path) and read_only.digest(other)[0] == _sha(other)
    assert hashed == [path, other] and (folder / MEMO_NAME).read_bytes() == before


def test_a_memo_sent_to_a_worker_carries_its_folder_not_what_was_read(folder, tmp_path):
    path = _file(tmp_path)
    memo = DigestMemo(folder, clock=time.time_ns)
    memo.digest(path)
    copy = pickle.loads(pickle.dumps(memo))
    assert copy.path == memo.path and copy.writable and copy.__getstate__()["_known"] is None


def test_the_trace_cache_names_the_content_and_a_warm_read_reads_no_byte(folder, tmp_path, hashed, monkeypatch):
    path = Path(shutil.copyfile(SHORT, tmp_path / SHORT.name))
    cache = TraceCache(folder, 1 << 30, memo=DigestMemo(folder, clock=later))
    assert file_key(path, 200, cache.memo) == file_key(path, 200)  # the memo names the same entry
    cold = read_trace_cached(path, ProblemLog(), cache)
    hashed.clear()

    def refuse(p, problems=None):
        raise AssertionError("the reader ran on a warm read")
    monkeypatch.setattr(trace_cache, "read_trace_file", refuse)
    warm_cache = TraceCache(folder, 1 << 30, memo=DigestMemo(folder, clock=later))  # the next run
    warm = read_trace_cached(path, ProblemLog(), warm_cache)
    assert hashed == [] and warm.events_in_file == cold.events_in_file and warm.start_us.size == cold.start_us.size


def test_the_memo_follows_the_caches_switches(tmp_path):
    assert trace_cache_for(tmp_path, None, {}).memo.path == tmp_path / "traces" / MEMO_NAME
    assert trace_cache_for(tmp_path, None, {"REPORTGEN_DIGEST_MEMO": "0"}).memo is None
    assert trace_cache_for(tmp_path, None, {"REPORTGEN_NO_CACHE": "1"}) is None
