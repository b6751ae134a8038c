"""Per-file-group results of the system reader ("records") and their on-disk cache for live jobs.

A *piece* of work is a list of system files (normally one node's files). Reading it gives
:class:`Records`: the series catalog, per node the parsed ``(series id, timestamp, value)`` arrays
and the data problems met. Records of several pieces concatenate exactly: ``tables_from_records``
hands every node's chunks, in piece order, to the same ``build_table`` the single-machine path
uses, so the tick tables are the ones a single read of all files gives.

``--incremental`` keeps the records of every piece in a :class:`RecordCache`, keyed by the
fingerprints of its files (path relative to the profile root + size + mtime + a digest of the
file's first and last 64 KiB for local files; key + size + ETag for S3 objects). A piece is reused only when every one of its files still has
the fingerprint it had when it was read. The newest file of each node is always a piece of its own
(the one a live job may still be appending to), so when it grows only that file is read again and
the node's older files keep their cached piece.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from reportgen.problems import DataProblem, ProblemLog

# Bump when what the reader produces for the same bytes changes (parsing rules, problem reasons):
# cached pieces of another version are ignored.
CACHE_VERSION = 2  # 2: local fingerprints carry a content digest
CACHE_SUBDIR = "system-records"


@dataclass
class Records:
    """What reading one piece gave: records by node, the series catalog they index, problems."""

    keys: list[tuple[str, str, str, str]]  # series id -> (node, type, name, dimension)
    nodes: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]  # node -> (series ids, ts, values)
    problem_counts: dict[str, int] = field(default_factory=dict)
    problem_items: list[tuple[str, int | None, str]] = field(default_factory=list)
    files_read: int = 0
    # Set instead of ``nodes`` when the worker built the node's tick table itself (see distributed.py)
    tables: dict = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for arrs in self.nodes.values() for a in arrs)


def records_from_reader(reader, problems: ProblemLog, files_read: int) -> Records:
    """Take the parsed, not yet tabled, chunks out of a ``SystemReader`` (``streaming=False``)."""
    nodes = {}
    for node, chunks in reader.acc.chunks.items():
        if not chunks:
            continue
        nodes[node] = tuple(np.concatenate([c[i] for c in chunks]) for i in range(3))
        chunks.clear()
    return Records(keys=list(reader.acc.keys), nodes=nodes, problem_counts=dict(problems.counts),
                   problem_items=[(p.file, p.line, p.reason) for p in problems.items], files_read=files_read)


def merge_problems(into: ProblemLog, counts: dict[str, int], items) -> None:
    for reason, n in counts.items():
        into.counts[reason] += n
    room = max(into.cap - len(into.items), 0)
    into.items.extend(DataProblem(f, line, reason) for f, line, reason in list(items)[:room])


def tables_from_records(pieces: list[Records], problems: ProblemLog) -> dict:
    """Tick tables of every node from the records of all pieces (pieces in file order)."""
    from reportgen.readers.tick_build import build_table, natural_key

    sid_of: dict[tuple, int] = {}
    chunks: dict[str, list] = {}
    for rec in pieces:
        remap = np.array([sid_of.setdefault(k, len(sid_of)) for k in rec.keys], dtype=np.int32)
        for node, (sids, ts, vals) in rec.nodes.items():
            chunks.setdefault(node, []).append((remap[sids] if len(sids) else sids, ts, vals))
    keys = list(sid_of)  # insertion-ordered: position == global series id
    out = {}
    for node in sorted(chunks, key=natural_key):
        table = build_table(node, chunks.pop(node), keys, problems)
        if table is not None:
            out[node] = table
    return out


# ------------------------------------------------------------------------------------------ cache


# Bytes hashed at each end of a local file for its fingerprint (see ``local_fingerprint``).
CONTENT_BLOCK = 64 << 10


def local_fingerprint(root: Path, path: Path) -> tuple[str, int, int, str]:
    """``(relative path, size, mtime ns, content digest)``.

    Size and mtime alone miss a file rewritten in place with both kept (``cp -p``, ``rsync -t``,
    a restored backup), and the cache would serve the old file's numbers. The digest (BLAKE2b of
    the first and last CONTENT_BLOCK bytes) catches any such rewrite that changes either end; a
    metrics file smaller than 128 KiB (a minute of a node, usually) is hashed whole. It cannot see a
    same-size change that touches only the middle of a bigger file with the mtime put back; reading
    whole files would (``--incremental`` would then cost a full read of every file)."""
    try:
        rel = str(path.relative_to(root))
    except ValueError:
        rel = str(path)
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        digest = hashlib.blake2b(digest_size=16)
        digest.update(fh.read(CONTENT_BLOCK))
        if st.st_size > CONTENT_BLOCK:
            fh.seek(max(CONTENT_BLOCK, st.st_size - CONTENT_BLOCK))
            digest.update(fh.read(CONTENT_BLOCK))
    return rel, int(st.st_size), int(st.st_mtime_ns), digest.hexdigest()


def cache_folder(cache_root: Path, source_id: str) -> Path:
    """One folder per profile (its absolute path, or s3://bucket/prefix) under the cache root."""
    digest = hashlib.sha256(source_id.encode("utf-8")).hexdigest()[:20]
    return Path(cache_root) / CACHE_SUBDIR / digest


class RecordCache:
    """Cached :class:`Records` of pieces of one profile, in ``folder``.

    Each piece is ``<id>.npz`` (the arrays) + ``<id>.json`` (fingerprints of its files, series
    catalog, problems), both written to a temporary name and renamed into place, the JSON last: a
    piece exists once its JSON does. Two runs sharing the folder never write the same file (ids are
    random); if both read the same new files, a later run uses one of the two pieces and removes
    the other. Pieces whose files changed or vanished are removed by the next run that sees it.
    """

    def __init__(self, folder: Path, source_id: str):
        self.folder = Path(folder)
        self.source_id = source_id
        self.hits = 0  # pieces reused by the last ``lookup``
        self.stored = 0

    def _entries(self) -> list[tuple[str, dict]]:
        out = []
        if not self.folder.is_dir():
            return out
        for meta in sorted(self.folder.glob("*.json")):
            try:
                doc = json.loads(meta.read_text(encoding="utf-8"))
            except (OSError, ValueError):  # zero bytes or cut: what a crash before the rename cannot leave,
                self._remove(meta.stem)  # but a crashed file system or a copy can; read again, not fatal
                continue
            if not isinstance(doc, dict) or doc.get("version") != CACHE_VERSION or doc.get("source") != self.source_id:
                continue
            if not _valid_doc(doc):
                self._remove(meta.stem)
                continue
            out.append((meta.stem, doc))
        return out

    def lookup(self, fingerprints: dict[str, tuple]) -> tuple[list[tuple[list[str], Records]], set[str]]:
        """Cached pieces whose every file is unchanged: ``([(files, records)], covered files)``.

        ``fingerprints``: file id (relative path or key) -> its current fingerprint."""
        usable, stale = [], []
        for sid, doc in self._entries():
            files = [tuple(f) for f in doc.get("files", [])]
            if files and all(fingerprints.get(f[0]) == f for f in files):
                usable.append((sid, doc, [f[0] for f in files]))
            else:
                stale.append(sid)
        covered: set[str] = set()
        chosen = []
        # bigger pieces first, so a duplicate small piece (two runs raced) is the one dropped
        for sid, doc, names in sorted(usable, key=lambda u: (-len(u[2]), u[0])):
            if covered.intersection(names):
                stale.append(sid)
                continue
            rec = self._load(sid, doc)
            if rec is None:
                stale.append(sid)
                continue
            covered.update(names)
            chosen.append((names, rec))
        for sid in stale:
            self._remove(sid)
        self.hits = len(chosen)
        return chosen, covered

    def _load(self, sid: str, doc: dict) -> Records | None:
        """The piece's arrays, or None (then it is removed and its files read again) for anything unusable:
        a missing, cut or foreign ``.npz``, arrays of the wrong kind or lengths."""
        try:
            with np.load(self.folder / f"{sid}.npz", allow_pickle=False) as z:
                nodes = {node: (z[f"s{i}"], z[f"t{i}"], z[f"v{i}"]) for i, node in enumerate(doc["nodes"])}
        except Exception:  # noqa: BLE001 - OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError...
            return None
        n_keys = len(doc["keys"])
        for s, t, v in nodes.values():
            if not (s.ndim == t.ndim == v.ndim == 1 and len(s) == len(t) == len(v)
                    and s.dtype.kind in "iu" and t.dtype.kind == "f" and v.dtype.kind == "f"
                    and (not len(s) or (int(s.min()) >= 0 and int(s.max()) < n_keys))):
                return None
        return Records(keys=[tuple(k) for k in doc["keys"]], nodes=nodes,
                       problem_counts=dict(doc.get("problem_counts", {})),
                       problem_items=[tuple(p) for p in doc.get("problem_items", [])], files_read=0)

    def store(self, files: list[tuple], rec: Records) -> None:
        """Keep ``rec`` for the files with these fingerprints (best effort: a full disk only costs
        the caching)."""
        sid = uuid.uuid4().hex
        names = list(rec.nodes)
        arrays = {}
        for i, node in enumerate(names):
            s, t, v = rec.nodes[node]
            arrays[f"s{i}"], arrays[f"t{i}"], arrays[f"v{i}"] = s, t, v
        doc = {"version": CACHE_VERSION, "source": self.source_id, "files": [list(f) for f in files],
               "nodes": names, "keys": [list(k) for k in rec.keys], "problem_counts": rec.problem_counts,
               "problem_items": [list(p) for p in rec.problem_items]}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{sid}.", suffix=".npz.tmp")
            try:
                with os.fdopen(fd, "wb") as handle:
                    np.savez(handle, **arrays)
                    handle.flush()
                    os.fsync(handle.fileno())  # whole on disk before it has its name: a crash leaves no half
                os.replace(tmp, self.folder / f"{sid}.npz")
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            from reportgen.atomic import write_text_atomic

            write_text_atomic(self.folder / f"{sid}.json", json.dumps(doc), durable=True)
            self.stored += 1
        except OSError:
            self._remove(sid)

    def _remove(self, sid: str) -> None:
        for suffix in (".json", ".npz"):  # the JSON first: without it the piece no longer exists
            try:
                (self.folder / f"{sid}{suffix}").unlink()
            except OSError:
                pass


def _valid_doc(doc: dict) -> bool:
    """A piece's JSON of the shape ``store`` writes (wrong types there made every later run exit 3)."""
    def is_str_list(value, n=None):
        return isinstance(value, list) and (n is None or len(value) == n) and all(isinstance(x, str) for x in value)

    files, keys, counts, items = (doc.get(k) for k in ("files", "keys", "problem_counts", "problem_items"))
    return (isinstance(files, list) and all(isinstance(f, list) and f and isinstance(f[0], str) for f in files)
            and is_str_list(doc.get("nodes"))
            and isinstance(keys, list) and all(is_str_list(k, 4) for k in keys)
            and isinstance(counts, dict) and all(isinstance(c, int) and not isinstance(c, bool) for c in counts.values())
            and isinstance(items, list) and all(
                isinstance(p, list) and len(p) == 3 and isinstance(p[0], str) and isinstance(p[2], str)
                and (p[1] is None or (isinstance(p[1], int) and not isinstance(p[1], bool))) for p in items))

