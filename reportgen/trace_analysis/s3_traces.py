"""Traces left in S3 for the Dask workers, kept in the trace cache by the object's identity: a warm run downloads none.

With ``--scheduler`` and an S3 source the client lists the trace objects and each worker downloads its task's keys
(``cluster/s3_objects.py``); the trace cache (``readers/trace_cache.py``) keys a local file by its content, which a
worker would have to download to hash, so every run downloaded and read every key whole again (issue 51). An
object's bucket, key, size and ETag already name one write of it: S3 gives every write a new ETag, a multipart
upload's ``<digest of its parts' digests>-<parts>`` as much as a single upload's MD5 (and an encrypted object's
opaque one). So an object's file entry, its head (``readers/trace_heads.py``) and, through them, its rank's analysis
(``trace_analysis/rank_cache.py``, keyed by its files' keys) are kept under ``trace_cache.object_key``: a rank whose
every object is listed as it was is served from its heads and its rank entry with no GET; an object listed with
another ETag or size is a miss and downloaded again, alone.

Only bytes that are the listed write are kept (``s3_objects.download_listed``: every GET that served them answered
with the listed ETag, and the file has the listed size): an object rewritten between the listing and its download
is read and reported as before, never kept under the old identity. The SHA-256 of the bytes downloaded is recorded
in the object's head (its header's ``content_sha256``), so an entry says what content it was made from.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from reportgen.cluster.s3_objects import S3System, download_listed
from reportgen.problems import DataProblem, ProblemLog
from reportgen.readers.digest_memo import hash_file
from reportgen.readers.trace_cache import TraceCache, load_entry, object_key, store_entry
from reportgen.readers.trace_files import read_trace_file
from reportgen.readers.trace_heads import has_head, store_head


@dataclass
class ObjectRead:
    """One object read (or served from the cache) for ``job.read_file``."""

    trace: object  # TraceColumns, or None when the key is unsafe as a path (not fetched)
    problems: ProblemLog
    key: str | None  # the trace cache's key of the object (None: no cache, or bytes not the listed write)
    nbytes: int  # its size (0: not fetched)


def object_entry(s3: S3System, name: str, cap: int) -> tuple[str, int] | None:
    """The trace cache's key of the listed object ``name`` and its listed size (None: not listed)."""
    listed = s3.listed(name)
    if listed is None:
        return None
    return object_key(cap, s3.bucket, s3.key(name), *listed), listed[0]


def object_path(s3: S3System, name: str) -> Path:
    """What the object's columns and head are named by: its URI (the file name, all the analysis takes of a path, is
    the key's last part, as in the worker's temporary folder)."""
    return Path(s3.uri(name))


def read_object(s3: S3System, name: str, cap: int, cache: TraceCache | None) -> ObjectRead:
    """The object ``name`` as columns: its kept entry when ``cache`` holds this write of it, else downloaded into a
    temporary folder (deleted after), read, and kept there when the bytes are the listed write. Data problems name
    it by its ``s3://`` URI. Never raises on bad content (the reader records it); S3 errors do."""
    display = s3.uri(name)
    log = ProblemLog(cap)
    entry = object_entry(s3, name, cap) if cache is not None else None
    if cache is not None and entry is not None:
        hit = load_entry(cache, entry[0], object_path(s3, name))
        if hit is not None:
            trace, own = hit
            log.merge(own)
            if not has_head(cache, entry[0]):
                store_head(cache, entry[0], trace, own)
            return ObjectRead(trace, log, entry[0], entry[1])
    with tempfile.TemporaryDirectory(prefix="reportgen-traces-") as tmp:
        path, exact = download_listed(s3, name, Path(tmp))
        if path is None:
            log.add(display, None, "unsafe S3 key (not fetched)")
            return ObjectRead(None, log, None, 0)
        own = ProblemLog(cap)
        trace = read_trace_file(path, own)
        nbytes = path.stat().st_size
        # kept only from the listed write, read as itself (not from a sibling copy, which the key does not cover)
        keep = cache is not None and entry is not None and exact and trace.path == path
        hashed = hash_file(path) if keep and cache is not None and cache.writable else None
    own.items = [DataProblem(display if p.file == str(path) else p.file, p.line, p.reason) for p in own.items]
    log.merge(own)
    if trace.path == path:  # the temporary folder is gone; the analysis takes the file name only
        trace.path = object_path(s3, name)
    if not keep or cache is None or entry is None:
        return ObjectRead(trace, log, None, nbytes)
    if cache.writable:
        if trace.start_us.size:
            store_entry(cache, entry[0], trace, own)
        store_head(cache, entry[0], trace, own, content_sha256=hashed[0] if hashed is not None else None)
    return ObjectRead(trace, log, entry[0], nbytes)


__all__ = ["ObjectRead", "object_entry", "object_path", "read_object"]
