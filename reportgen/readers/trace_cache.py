"""Each trace file's reduction kept in a user cache, so a second run over the same traces reads nothing twice.

What is kept is what ``readers.trace_files.read_trace_file`` returns (the ``TraceColumns`` of one PyTorch
JSON, gzip'd or XSpace file) and the problems the read met, so a warm run shows the same numbers and the same
Data quality notes as the cold one. Issue 51: a CI pipeline reads the same base traces on every run.

The key is the file's content, not its identity on disk: SHA-256 over every byte (1.3 GB/s on one core
here, ~2 % of a cold read), with its size, the path as given (the label, the rank found in the name and
the problems' file names come from it), ``READER_VERSION``, this module's ``CACHE_FORMAT``, the problem
log's cap and the environment sizes that change what is read. Size + mtime + inode would be cheaper, but
a CI job restores its trace artifacts and the cache folder with new inodes and mtimes (a miss every
run), and a file rewritten in place with its mtime put back (``cp -p``) would be served stale. The digest
itself is remembered by the file's identity, ctime included (``readers/digest_memo.py``), so a warm run over
files unchanged on disk reads none of their bytes; the key stays the content's.

One entry is one ``<key>.npz`` (numpy's zip, CRC-checked, read with ``allow_pickle=False``; its ``meta``
member is UTF-8 JSON), written to a temporary name and renamed into place, so a reader never sees half an
entry and two processes writing the same entry leave one whole. Anything unusable (cut, zero bytes, a
foreign file under the name, arrays of the wrong shape) is removed and the file read again: never trusted.
The folder is bounded (``REPORTGEN_CACHE_MAX_MB``, 2 GiB by default): after a store, the entries least
recently used (file mtime, touched on every hit) go first. A folder that cannot be made costs the cache,
one progress line, never the run; a read-only one is read and never written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

import numpy as np

from reportgen.environment import megabytes
from reportgen.kept_file import open_kept
from reportgen.readers.digest_memo import HASH_BLOCK as HASH_BLOCK  # the block of every hash (render/page_cache.py)
from reportgen.readers.digest_memo import DigestMemo, hash_file, memo_for
from reportgen.problems import DataProblem, ProblemLog
from reportgen.readers.trace_files import READER_VERSION, read_trace_file
from reportgen.readers.trace_model import Float64Ops, FlopEvents, MemoryEvents, TraceColumns
from reportgen.sources.s3 import default_cache_dir

T = TypeVar("T")  # what an entry decodes to (take_entry)

# Bump when the layout of an entry changes (the arrays' names, the meta document).
CACHE_FORMAT = 2  # 2: the float64 operators (d_*)
CACHE_SUBDIR = "traces"
# What the folder holds and bounds together: each file's reduction and its head (``readers/trace_heads.py``), each
# rank's analysis (``trace_analysis/rank_cache.py``), each page with its forecast (``render/page_cache.py``), the page's compiled
# templates (``render/template_cache.py``) and the files' digests (``readers/digest_memo.py``), kept beside them so
# one bound and one eviction cover them all.
ENTRY_SUFFIXES = (".npz", ".head.json", ".rank.json", ".page", ".page-hint", ".memo", ".jinja")
STALE_TEMP_SECONDS = 3600  # a temporary entry this old is a crashed writer's: removed by the next eviction
NO_CACHE_ENV = "REPORTGEN_NO_CACHE"

# The columns of an entry, by prefix: the events, the allocator's events, the FLOP counts, the float64 operators.
EVENT_COLUMNS = ("cat", "name", "start_us", "dur_us", "device", "nbytes", "tid", "corr")
FLOP_COLUMNS = ("time_us", "flops", "cycle")
# Every field of TraceColumns an entry holds (the path is the key's, not the entry's); a field added to the
# model without a place here fails tests/unit/readers/test_trace_cache.py.
META_FIELDS = ("label", "rank", "world_size", "backend", "devices", "compute_capability", "device_memory",
               "time_unit", "names", "events_in_file", "complete", "cpu_collectives")
STORED_FIELDS = frozenset(("path", "memory", "flops", "float64", *EVENT_COLUMNS, *META_FIELDS))


@dataclass(frozen=True)
class TraceCache:
    """Where reductions are kept and how much may be: ``writable`` False for a folder only read; ``memo``: the
    files' digests by their identity (``readers/digest_memo.py``; None: every file hashed in full)."""

    folder: Path
    max_bytes: int
    writable: bool = True
    memo: DigestMemo | None = field(default=None, compare=False)


def trace_cache_for(cache_dir: Path | None = None, progress: Callable[[str], None] | None = None,
                    environ=None) -> TraceCache | None:
    """The cache a run uses: ``<cache_dir>/traces`` (default: ``$REPORTGEN_CACHE_DIR``, else the user cache
    folder + ``reportgen``), None when ``$REPORTGEN_NO_CACHE`` is set or the folder cannot be made (then
    ``progress`` hears why, once)."""
    environ = os.environ if environ is None else environ
    if environ.get(NO_CACHE_ENV, "").strip() not in ("", "0"):
        return None
    folder = Path(cache_dir if cache_dir is not None else default_cache_dir()).expanduser() / CACHE_SUBDIR
    max_bytes = megabytes("REPORTGEN_CACHE_MAX_MB", environ)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        if progress is not None:
            progress(f"trace cache off: {folder} cannot be made ({err.strerror or err}); the traces are read in full")
        return None
    writable = os.access(folder, os.W_OK | os.X_OK)
    if not writable and progress is not None:
        progress(f"trace cache {folder} is read-only: its entries are used, no new one is kept")
    return TraceCache(folder, max_bytes, writable, memo_for(folder, writable, environ))


def read_trace_cached(path: Path, problems: ProblemLog, cache: TraceCache | None) -> TraceColumns:
    """``read_trace_file(path, problems)``, from ``cache`` when it holds this content's reduction, else read and
    kept there. The cache never fails the read: any trouble with it is a miss."""
    return read_trace_keyed(path, problems, cache)[0]


def read_trace_keyed(path: Path, problems: ProblemLog, cache: TraceCache | None) -> tuple[TraceColumns, str | None]:
    """``read_trace_cached`` and the key of the content the columns are (None: no cache, a file that is no regular
    one, that changed while read, or whose columns came from a sibling copy): what ``trace_analysis/rank_cache``
    keys a rank's analysis with."""
    if cache is None:
        return read_trace_file(path, problems), None
    before = file_key(Path(path), problems.cap, cache.memo)
    if before is None:
        return read_trace_file(path, problems), None
    key, identity = before
    hit = load_entry(cache, key, Path(path))
    if hit is not None:
        trace, own = hit
        problems.merge(own)
        return trace, key
    own = ProblemLog(problems.cap)
    trace = read_trace_file(path, own)
    problems.merge(own)
    # Kept only when the file is what was hashed (a live trace may grow while read) and the read is its own (a
    # file with no usable event may have been read from a sibling copy, which the key does not cover).
    if not (trace.path == Path(path) and _identity(Path(path)) == identity):
        return trace, None
    if cache.writable and trace.start_us.size:
        store_entry(cache, key, trace, own)
    return trace, key


# ------------------------------------------------------------------------------------------------ key


def _identity(path: Path) -> tuple[int, int, int, int] | None:
    try:
        return _identity_of(os.stat(path))
    except OSError:
        return None


def file_key(path: Path, cap: int, memo: DigestMemo | None = None) -> tuple[str, tuple[int, int, int, int]] | None:
    """The entry name of ``path``'s content and how the file looked when hashed; None for a file that is not a
    regular one or cannot be read (the reader then says what is wrong with it). ``memo``: the content's digest
    taken from there when it knows the file as it is (none of its bytes read), else remembered there."""
    found = memo.digest(path) if memo is not None else hash_file(path)
    if found is None:
        return None
    return _content_key(path, cap, found[0], found[1].st_size), _identity_of(found[1])


def known_key(path: Path, cap: int, memo: DigestMemo | None) -> str | None:
    """``file_key``'s entry name when ``memo`` knows the file as it is now, else None: no byte of the file is read
    and the file is not even opened (a stat only), so a miss costs nothing (the task plan, ``trace_analysis/job.py``)."""
    if memo is None:
        return None
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    digest = memo.lookup(st) if stat.S_ISREG(st.st_mode) else None
    return _content_key(path, cap, digest, st.st_size) if digest is not None else None


def _content_key(path: Path, cap: int, digest: str, size: int) -> str:
    ident = json.dumps([CACHE_FORMAT, READER_VERSION, cap, _read_sizes(), str(path), size, digest])
    return hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()


def object_key(cap: int, bucket: str, key: str, size: int, etag: str) -> str:
    """The entry name of an S3 object the Dask workers read (``trace_analysis/s3_traces.py``), by its identity
    instead of its content, so that a warm run need not download it to know it: bucket, key, size and ETag (S3 gives
    an object a new ETag on every write, a multipart upload's ``...-N`` too), with what a file's key takes besides
    its content. Another shape than ``_content_key``'s document, so never one of its names."""
    ident = json.dumps([CACHE_FORMAT, READER_VERSION, cap, _read_sizes(), "s3", bucket, key, size, etag])
    return hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()


def _read_sizes() -> list[int]:
    """The environment's sizes that change what a read gives."""
    return [megabytes(name) for name in ("REPORTGEN_STREAM_TRACE_MB", "REPORTGEN_XSPACE_MAX_MB")]


def _identity_of(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev


# ------------------------------------------------------------------------------------------------ entries


def entry_path(cache: TraceCache, key: str) -> Path:
    return cache.folder / f"{key}.npz"


def load_entry(cache: TraceCache, key: str, path: Path) -> tuple[TraceColumns, ProblemLog] | None:
    """The entry ``key`` as the read's columns and problems, or None: absent, or unusable (then removed)."""
    where = entry_path(cache, key)
    handle = open_kept(where, cache.max_bytes)  # absent, no regular file (a link, a FIFO: left alone), too large
    if handle is None:
        return None
    try:
        with handle, np.load(handle, allow_pickle=False) as entry:
            arrays = {name: entry[name] for name in entry.files}
    except Exception:  # noqa: BLE001 - OSError, ValueError, zipfile.BadZipFile (CRC), EOFError...: not trusted
        remove_entry(where)
        return None
    loaded = entry_from_arrays(arrays, key, path)
    if loaded is None:
        remove_entry(where)
        return None
    touch_entry(cache, where)
    return loaded


def touch_entry(cache: TraceCache, where: Path) -> None:
    """An entry just used: the last to go when the folder is over its bound (a read-only folder: unchanged)."""
    if cache.writable:
        try:
            os.utime(where)
        except OSError:
            pass


def store_entry(cache: TraceCache, key: str, trace: TraceColumns, problems: ProblemLog) -> bool:
    """Keep ``trace`` and its problems under ``key`` (best effort: a full or read-only folder costs only the
    caching); then bring the folder back under its bound."""
    try:
        arrays = entry_arrays(trace, problems, key)
    except (TypeError, ValueError, OverflowError):  # a value JSON does not hold (a numpy integer): not kept
        return False
    return put_entry(cache, entry_path(cache, key), lambda handle: np.savez(handle, **arrays))


def take_entry(cache: TraceCache, where: Path, raw: bytes | None, decode: Callable[[bytes], T | None]) -> T | None:
    """What an entry's bytes decode to (``raw`` None: nothing was read), the entry then marked used; None when they
    do not decode, and the damaged entry removed so that the run makes it again."""
    if raw is None:
        return None
    found = decode(raw)
    if found is None:
        remove_entry(where)
        return None
    touch_entry(cache, where)
    return found


def sealed(fmt: int, key: str, body: bytes, **fields) -> bytes:
    """An entry's bytes: a one-line JSON header (its format, its key, ``fields``, the body's SHA-256), then the body.
    Every entry of the folder has this shape, so a reader tells a whole entry of its own key from any other."""
    header = json.dumps({"format": fmt, "key": key, **fields, "sha256": hashlib.sha256(body).hexdigest()})
    return header.encode("ascii") + b"\n" + body


def unsealed(raw: bytes, fmt: int, key: str) -> tuple[dict, bytes] | None:
    """``raw``'s header and body when it is a whole entry of this format and key (:func:`sealed`), else None."""
    head, newline, body = raw.partition(b"\n")
    try:
        header = json.loads(head)
    except (ValueError, RecursionError):
        return None
    if not (newline and isinstance(header, dict) and header.get("format") == fmt and header.get("key") == key
            and header.get("sha256") == hashlib.sha256(body).hexdigest()):
        return None
    return header, body


def put_entry(cache: TraceCache, where: Path, write: Callable) -> bool:
    """Write an entry of the folder: ``write(handle)`` fills a temporary file, renamed to ``where`` when whole and
    within the bound (a reader never sees half an entry; two writers leave one whole); then the folder is brought
    back under its bound. False when it is not kept (the bound, a full or read-only folder)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=cache.folder, prefix=f".{where.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        if os.path.getsize(tmp) > cache.max_bytes:
            Path(tmp).unlink(missing_ok=True)
            return False
        os.replace(tmp, where)
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        return False
    evict(cache)
    return True


def evict(cache: TraceCache, now: float | None = None) -> int:
    """Remove the least recently used entries until the folder holds at most ``max_bytes``, and crashed
    writers' temporary files; returns how many files went."""
    now = time.time() if now is None else now
    entries, removed = [], 0
    try:
        listing = list(os.scandir(cache.folder))
    except OSError:
        return 0
    for item in listing:
        try:
            st = item.stat(follow_symlinks=False)
        except OSError:
            continue
        if item.name.startswith(".") and item.name.endswith(".tmp"):
            if now - st.st_mtime > STALE_TEMP_SECONDS:
                removed += remove_entry(Path(item.path))
        elif item.name.endswith(ENTRY_SUFFIXES) and stat.S_ISREG(st.st_mode):
            entries.append((st.st_mtime_ns, item.name, st.st_size, Path(item.path)))
    total = sum(size for _, _, size, _ in entries)
    for _, _, size, where in sorted(entries):
        if total <= cache.max_bytes:
            break
        removed += remove_entry(where)
        total -= size
    return removed


def remove_entry(where: Path) -> int:
    """Remove an entry (an unusable one, or the least recently used); 1 when it went."""
    try:
        where.unlink()
    except OSError:
        return 0
    return 1


# ------------------------------------------------------------------------------------------------ layout


def entry_arrays(trace: TraceColumns, problems: ProblemLog, key: str) -> dict[str, np.ndarray]:
    """What an entry holds: the columns as arrays (``e_``, ``m_``, ``f_``) and ``meta``, the rest as JSON."""
    pattern = trace.cpu_collectives
    meta = {
        "format": CACHE_FORMAT, "key": key,
        "label": trace.label, "rank": trace.rank, "world_size": trace.world_size, "backend": trace.backend,
        "devices": list(trace.devices), "compute_capability": list(trace.compute_capability),
        "device_memory": [[k, v] for k, v in trace.device_memory.items()], "time_unit": trace.time_unit,
        "names": list(trace.names), "events_in_file": trace.events_in_file, "complete": trace.complete,
        "cpu_collectives": None if pattern is None else [pattern.pattern, pattern.flags],
        "problem_counts": [[reason, n] for reason, n in problems.counts.items()],
        "problem_items": [[p.file, p.line, p.reason] for p in problems.items],
    }
    arrays = {f"e_{c}": np.asarray(getattr(trace, c)) for c in EVENT_COLUMNS}
    arrays.update({f"m_{c}": np.asarray(getattr(trace.memory, c)) for c in MemoryEvents.COLUMNS})
    arrays.update({f"f_{c}": np.asarray(getattr(trace.flops, c)) for c in FLOP_COLUMNS})
    arrays.update({f"d_{c}": np.asarray(getattr(trace.float64, c)) for c in Float64Ops.COLUMNS})
    # ensure_ascii: a name that is not UTF-8 (kept as lone surrogates) is written as an escape, read back the same
    arrays["meta"] = np.frombuffer(json.dumps(meta, ensure_ascii=True).encode("ascii"), dtype=np.uint8)
    return arrays


def entry_from_arrays(arrays: dict[str, np.ndarray], key: str, path: Path) -> tuple[TraceColumns, ProblemLog] | None:
    """The columns and problems an entry's arrays hold, or None unless every part is what ``entry_arrays`` writes."""
    try:
        meta = json.loads(arrays["meta"].tobytes().decode("ascii"))
        if not _valid_meta(meta, key):
            return None
        events = {c: arrays[f"e_{c}"] for c in EVENT_COLUMNS}
        memory = MemoryEvents(*(arrays[f"m_{c}"] for c in MemoryEvents.COLUMNS))
        flops = FlopEvents(*(arrays[f"f_{c}"] for c in FLOP_COLUMNS))
        float64 = Float64Ops(*(arrays[f"d_{c}"] for c in Float64Ops.COLUMNS))
    except Exception:  # noqa: BLE001 - a missing member, JSON that is not, an array that is not one: not trusted
        return None
    if not (_columns_ok(list(events.values())) and _columns_ok([getattr(memory, c) for c in MemoryEvents.COLUMNS])
            and _columns_ok([getattr(flops, c) for c in FLOP_COLUMNS])
            and _columns_ok([getattr(float64, c) for c in Float64Ops.COLUMNS])):
        return None
    names = events["name"]
    if names.size and (names.dtype.kind not in "iu" or int(names.min()) < 0 or int(names.max()) >= len(meta["names"])):
        return None
    pattern = meta["cpu_collectives"]
    try:
        collectives = None if pattern is None else re.compile(pattern[0], pattern[1])
    except (re.error, TypeError, ValueError):
        return None
    trace = TraceColumns(
        path=path, label=meta["label"], rank=meta["rank"], world_size=meta["world_size"], backend=meta["backend"],
        devices=meta["devices"], compute_capability=meta["compute_capability"],
        device_memory={int(k): v for k, v in meta["device_memory"]}, time_unit=meta["time_unit"],
        names=meta["names"], **events, events_in_file=meta["events_in_file"], complete=meta["complete"],
        cpu_collectives=collectives, memory=memory, flops=flops, float64=float64)
    problems = ProblemLog(max(len(meta["problem_items"]), 1))
    problems.counts.update({reason: n for reason, n in meta["problem_counts"]})
    problems.items = [DataProblem(f, line, reason) for f, line, reason in meta["problem_items"]]
    return trace, problems


def _columns_ok(columns: list[np.ndarray]) -> bool:
    """One-dimensional numeric columns of one length."""
    return all(c.ndim == 1 and c.dtype.kind in "biuf" and c.size == columns[0].size for c in columns)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _valid_meta(meta, key: str) -> bool:
    """A meta document of the shape ``entry_arrays`` writes, for this key (a file renamed or copied under
    another entry's name is foreign)."""
    def optional(value, check) -> bool:
        return value is None or check(value)

    def str_list(value) -> bool:
        return isinstance(value, list) and all(isinstance(x, str) for x in value)

    if not isinstance(meta, dict) or meta.get("format") != CACHE_FORMAT or meta.get("key") != key:
        return False
    collectives, counts, items = meta.get("cpu_collectives"), meta.get("problem_counts"), meta.get("problem_items")
    return (isinstance(meta.get("label"), str) and optional(meta.get("rank"), _is_int)
            and optional(meta.get("world_size"), _is_int) and optional(meta.get("backend"), lambda v: isinstance(v, str))
            and str_list(meta.get("devices")) and str_list(meta.get("names"))
            and isinstance(meta.get("compute_capability"), list)
            and all(optional(v, _is_number) for v in meta["compute_capability"])
            and isinstance(meta.get("device_memory"), list)
            and all(isinstance(p, list) and len(p) == 2 and _is_int(p[0]) and _is_number(p[1])
                    for p in meta["device_memory"])
            and isinstance(meta.get("time_unit"), str) and _is_int(meta.get("events_in_file"))
            and isinstance(meta.get("complete"), bool)
            and optional(collectives, lambda v: isinstance(v, list) and len(v) == 2 and isinstance(v[0], str)
                         and _is_int(v[1]))
            and isinstance(counts, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                                 and _is_int(p[1]) for p in counts)
            and isinstance(items, list) and all(isinstance(p, list) and len(p) == 3 and isinstance(p[0], str)
                                                and optional(p[1], _is_int) and isinstance(p[2], str) for p in items))
