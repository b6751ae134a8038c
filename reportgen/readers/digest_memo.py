"""Each trace file's SHA-256 remembered by the file's identity, so a warm run reads no trace byte to name its entry.

The trace cache (``readers/trace_cache.py``) names an entry by the file's content; hashing that content was most of
what a warm ``generate`` still read: ~0.2 of 0.4 CPU s over 2 x 100 MB, ~12 s over 64 x 200 MB (issue 51). The
memo keeps, for each file hashed, its identity on disk (device, inode, size, mtime and ctime in ns) and the digest
then found: the same identity again is the same digest, so the content is not read. The caches stay keyed by
content: the memo only spares recomputing a digest, and a miss costs exactly the hash it spares. The page cache's
code digest (``render/page_cache.py``) takes reportgen's own files' digests from it too.

Why the identity is trusted: no write leaves a file's ctime as it was (``utime`` sets it too, so a file rewritten
with its size and mtime put back, ``cp -p``, is a miss), unless the write falls in the same tick of the file
system's clock as the one before it. That is git's "racy" case, guarded the same way: an entry is kept, and
trusted, only when the file's mtime and ctime are safely older (``RACY_NS``) than the moment its hashing began;
a file changed later gets a ctime after that moment. A file whose identity changed while it was hashed is not
kept. Clocks: the file system's (a network file system's server) must not run more than ``RACY_NS`` behind this
machine's; ``REPORTGEN_DIGEST_MEMO=0`` turns the memo off.

One memo is one file of the trace cache's folder (``file-digests.memo``), a log of fixed records, each with its
own checksum, appended with ``O_APPEND`` (two runs at once each add whole records). A record that does not check
out is never used, and the log is rewritten without it; past ``MAX_RECORDS`` the log is rewritten with the most
recent ``KEEP_RECORDS`` (under a temporary name, renamed into place). A link, a FIFO or any file that is not a
regular one under its name is neither followed, read nor replaced. A read-only folder's memo is read, never
written.
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import time
from pathlib import Path
from typing import Callable

from reportgen.kept_file import read_kept, regular_or_absent

MEMO_NAME = "file-digests.memo"
MEMO_ENV = "REPORTGEN_DIGEST_MEMO"
RACY_NS = 2_000_000_000  # file systems that keep times in whole seconds (2 s for FAT) and a little clock skew
KEEP_RECORDS = 4096  # what a rewrite keeps: 64 ranks x 2 cycles x 32 sets of traces
MAX_RECORDS = 2 * KEEP_RECORDS  # the log is rewritten past this (~0.7 MB)
HASH_BLOCK = 1 << 20
_IDENTITY = struct.Struct("<QQQqqq")  # device, inode, size, mtime_ns, ctime_ns, when its hashing began (ns)
_CHECK = 8
RECORD = _IDENTITY.size + 32 + _CHECK  # the identity, the digest, the record's checksum
_PERSON = b"reportgen-dm1"  # the format, in every record's checksum: a record of another format never checks out


def identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What says a file is unchanged: device, inode, size, mtime and ctime (ns)."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def safely_older(st: os.stat_result, began_ns: int) -> bool:
    """The file's last change (mtime or ctime) is more than ``RACY_NS`` before ``began_ns``: a later write would
    give it another ctime."""
    return max(st.st_mtime_ns, st.st_ctime_ns) < began_ns - RACY_NS


def _checksum(body: bytes) -> bytes:
    return hashlib.blake2b(body, digest_size=_CHECK, person=_PERSON).digest()


def pack(ident: tuple[int, int, int, int, int], began_ns: int, digest: bytes) -> bytes:
    """One record of the log."""
    body = _IDENTITY.pack(*ident, began_ns) + digest
    return body + _checksum(body)


def unpack(record: bytes) -> tuple[tuple[int, int, int, int, int], int, bytes] | None:
    """A record's identity, when its hashing began and the digest; None when it does not check out."""
    body = record[:-_CHECK]
    if len(record) != RECORD or _checksum(body) != record[-_CHECK:]:
        return None
    *ident, began = _IDENTITY.unpack_from(body)
    return tuple(ident), began, body[_IDENTITY.size:]  # type: ignore[return-value]


class DigestMemo:
    """The memo of one cache folder, read on first use; ``writable`` False: nothing is added; ``clock``: the time
    in ns (this machine's wall clock)."""

    def __init__(self, folder: Path, writable: bool = True, clock: Callable[[], int] = time.time_ns) -> None:
        self.path = Path(folder) / MEMO_NAME
        self.writable = writable
        self.clock = clock
        self._known: dict | None = None  # identity -> record, read from the log once
        self._records = 0

    def __getstate__(self) -> dict:  # sent to a Dask worker: the folder, not what this process read of it
        return {**self.__dict__, "_known": None, "_records": 0}

    def digest(self, path: Path) -> tuple[str, os.stat_result] | None:
        """SHA-256 (hex) of a regular file's bytes and its stat as hashed: from the memo when the file's identity is
        one it holds (safely older than its hashing), else hashed and remembered. None for anything but a
        regular file (a FIFO is not waited on) or a file that cannot be read."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        known = self.lookup(st)
        if known is not None:
            return known, st
        began = self.clock()
        found = hash_file(path)
        if found is None:
            return None
        digest, before, after = found
        if identity(before) == identity(after) and safely_older(after, began):
            self.remember(after, began, bytes.fromhex(digest))
        return digest, before

    def lookup(self, st: os.stat_result) -> str | None:
        """The digest remembered for this identity, when its record checks out and was safely after the file's
        last change; else None."""
        record = self._load().get(identity(st))
        found = unpack(record) if record is not None else None
        if found is None or not safely_older(st, found[1]):
            return None
        return found[2].hex()

    def remember(self, st: os.stat_result, began_ns: int, digest: bytes) -> None:
        """Add a record (best effort: a read-only or full folder, or no regular file under the name, keeps none)."""
        record = pack(identity(st), began_ns, digest)
        known = self._load()
        known.pop(identity(st), None)  # the most recent last: what a rewrite keeps
        known[identity(st)] = record
        if not self.writable:
            return
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
        except OSError:
            return
        try:
            st = os.fstat(fd)
            aligned = stat.S_ISREG(st.st_mode) and st.st_size % RECORD == 0
            if aligned:
                os.write(fd, record)
                self._records += 1
        except OSError:
            aligned = False
        finally:
            os.close(fd)
        if not aligned or self._records > MAX_RECORDS:  # another writer cut short, or too long: rewritten
            self._rewrite(list(known.values())[-KEEP_RECORDS:])

    def _load(self) -> dict:
        if self._known is None:
            self._known = {}
            raw = read_kept(self.path, 2 * MAX_RECORDS * RECORD)
            if raw is not None:
                good = [raw[i:i + RECORD] for i in range(0, len(raw) - RECORD + 1, RECORD)]
                good = [r for r in good if unpack(r) is not None]
                for record in good:
                    self._known[_IDENTITY.unpack_from(record)[:5]] = record
                self._records = len(good)
                if len(good) * RECORD != len(raw) or len(good) > MAX_RECORDS:  # damage, a cut append, too long
                    self._rewrite(list(self._known.values())[-KEEP_RECORDS:])
        return self._known

    def _rewrite(self, records: list[bytes]) -> None:
        """The log replaced by ``records`` (the damaged and the oldest left out); best effort."""
        if not self.writable or not regular_or_absent(self.path):
            return
        tmp = self.path.with_name(f".{MEMO_NAME}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(b"".join(records))
            os.replace(tmp, self.path)
            self._records = len(records)
        except OSError:
            tmp.unlink(missing_ok=True)


def hash_file(path: Path) -> tuple[str, os.stat_result, os.stat_result] | None:
    """SHA-256 (hex) of a regular file's bytes, with its stat before and after the read; None for anything else
    (opened without blocking: a FIFO is not waited on) or a file that cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    digest = hashlib.sha256()
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            return None
        buffer = bytearray(HASH_BLOCK)
        view = memoryview(buffer)
        with open(fd, "rb", buffering=0, closefd=False) as handle:
            while n := handle.readinto(buffer):
                digest.update(view[:n])
        after = os.fstat(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    return digest.hexdigest(), before, after


def memo_for(folder: Path, writable: bool, environ=None) -> DigestMemo | None:
    """The memo of a cache folder; None when ``$REPORTGEN_DIGEST_MEMO`` is ``0`` (every file hashed in full)."""
    environ = os.environ if environ is None else environ
    if environ.get(MEMO_ENV, "").strip() == "0":
        return None
    return DigestMemo(folder, writable)


__all__ = ["DigestMemo", "KEEP_RECORDS", "MAX_RECORDS", "MEMO_ENV", "MEMO_NAME", "RACY_NS", "RECORD", "hash_file",
           "identity", "memo_for", "pack", "safely_older", "unpack"]
