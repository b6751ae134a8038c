"""S3 listing and cached, parallel, resumable downloads that never write outside the cache.

Cache layout (``root`` = ``--cache-dir`` or :func:`default_cache_dir`)::

    <root>/s3/<namespace>/<bucket>/<key as path>          the files, mirroring the S3 keys
    <root>/manifests/<namespace>/<bucket>.json            {key: {"etag", "size", "path"}}

``namespace`` is the AWS partition (``aws``, ``aws-cn``, ...) or, for a custom endpoint such as
``AWS_ENDPOINT_URL``, ``endpoint-<host>-<port>``, so buckets of different services never mix.
A file is reused when its manifest entry has the listed ETag and size and the file on disk has
that size; otherwise it is downloaded to ``<name>.<etag8>.part`` (resumed with an HTTP Range
request if a part is already there, pinned to the ETag with If-Match) and renamed into place.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import urlparse

from reportgen.errors import InputError, expanduser
from reportgen.locking import folder_lock
from reportgen.sources.aws import aws_errors

CHUNK = 1024 * 1024
DEFAULT_WORKERS = 8
MAX_SEGMENT_BYTES = 255
_BUCKET_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,253}[a-zA-Z0-9]$")
_SIMPLE_ETAG_RE = re.compile(r"^[0-9a-f]{32}$")
_WINDOWS_BAD = set('<>:"|?*')


# ----------------------------------------------------------------------------------------- URIs


@dataclass(frozen=True)
class S3Uri:
    bucket: str
    key: str  # a key prefix ("" = whole bucket); no leading "/"

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def child(self, *parts: str) -> "S3Uri":
        key = self.key
        for part in parts:
            part = part.strip("/")
            if part:
                key = f"{key.rstrip('/')}/{part}" if key.strip("/") else part
        return S3Uri(self.bucket, key)

    def as_prefix(self) -> "S3Uri":
        """The same location as a folder prefix (ends with "/" unless it is the bucket root)."""
        key = self.key.strip("/")
        return S3Uri(self.bucket, f"{key}/" if key else "")


def parse_s3_uri(text: str) -> S3Uri:
    """``s3://bucket/prefix`` -> :class:`S3Uri`; one-line InputError when it is not one."""
    raw = text.strip()
    if not raw.lower().startswith("s3://"):
        raise InputError(f"Not an S3 URI: {raw!r} (expected s3://bucket/prefix).")
    rest = raw[5:]
    bucket, _, key = rest.partition("/")
    if not _BUCKET_RE.match(bucket) or ".." in bucket:
        raise InputError(f"Invalid S3 bucket name {bucket!r} in {raw!r}.")
    key = key.lstrip("/")
    if key:
        try:
            key_segments(key.rstrip("/"))
        except UnsafeKey as err:
            raise InputError(f"Refusing S3 prefix {raw!r}: {err}.") from None
    return S3Uri(bucket, key)


# ----------------------------------------------------------------------------------------- safe paths


class UnsafeKey(ValueError):
    """An S3 key that cannot be mapped to a path inside the cache."""


def key_segments(key: str) -> list[str]:
    """Split an S3 key into path segments, refusing anything that could leave the cache folder.

    Refused: absolute keys, backslashes, empty / "." / ".." segments, non-printable characters
    (control characters, line separators), segments longer than 255 bytes, and on Windows the
    characters that Windows paths give meaning to.
    """
    if not key:
        raise UnsafeKey("empty key")
    if key.startswith("/"):
        raise UnsafeKey("absolute path")
    if "\\" in key:
        raise UnsafeKey("backslash in key")
    if not key.isprintable():
        raise UnsafeKey("control or non-printable character in key")
    parts = key.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise UnsafeKey(f"{'empty' if not part else repr(part)} path segment")
        if len(part.encode("utf-8")) > MAX_SEGMENT_BYTES:
            raise UnsafeKey("path segment longer than 255 bytes")
        if part.endswith(".part"):
            raise UnsafeKey("name ends with .part (reserved for partial downloads)")
        if os.name == "nt" and (_WINDOWS_BAD & set(part) or part[-1] in ". "):
            raise UnsafeKey("character not allowed in Windows paths")
    return parts


def _inside(path: Path, root: Path) -> bool:
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


# ----------------------------------------------------------------------------------------- cache dir


def default_cache_dir() -> Path:
    """``$REPORTGEN_CACHE_DIR``, else the platform's user cache folder + ``reportgen``.

    Linux/BSD: ``$XDG_CACHE_HOME/reportgen`` (default ``~/.cache/reportgen``); macOS:
    ``~/Library/Caches/reportgen``; Windows: ``%LOCALAPPDATA%\\reportgen\\Cache``.
    """
    env = os.environ.get("REPORTGEN_CACHE_DIR")
    if env:
        return expanduser(env)
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "reportgen" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "reportgen"
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "reportgen"


def client_namespace(client: Any) -> str:
    """Cache namespace for the S3 service this client talks to."""
    url = urlparse(getattr(client.meta, "endpoint_url", "") or "")
    host = (url.hostname or "").lower()
    if host.endswith((".amazonaws.com", ".amazonaws.com.cn", ".api.aws", ".c2s.ic.gov", ".sc2s.sgov.gov")):
        return re.sub(r"[^a-z0-9-]", "-", getattr(client.meta, "partition", "aws") or "aws")
    port = url.port or (443 if url.scheme == "https" else 80)
    return "endpoint-" + re.sub(r"[^a-zA-Z0-9.-]", "-", f"{host}-{port}")


# ----------------------------------------------------------------------------------------- listing


@dataclass(frozen=True)
class S3Object:
    key: str
    size: int
    etag: str  # without quotes


def list_objects(client: Any, uri: S3Uri) -> list[S3Object]:
    """Every object under ``uri`` (paginated ListObjectsV2)."""
    objects: list[S3Object] = []
    with aws_errors(f"listing {uri}"):
        paginator = client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=uri.bucket, Prefix=uri.key):
            for item in page.get("Contents", ()):
                objects.append(S3Object(item["Key"], int(item.get("Size", 0)), str(item.get("ETag", "")).strip('"')))
    return objects


# ----------------------------------------------------------------------------------------- downloads


@dataclass(frozen=True)
class Progress:
    """Snapshot handed to the progress callback (called from worker threads, serialised)."""

    files_done: int
    files_total: int
    bytes_done: int
    bytes_total: int
    key: str | None = None


ProgressCallback = Callable[[Progress], None]


@dataclass
class SyncResult:
    downloaded: int = 0
    reused: int = 0
    bytes_downloaded: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)  # (key, reason)
    vanished: list[str] = field(default_factory=list)  # keys listed, then deleted before their download
    paths: dict[str, Path] = field(default_factory=dict)  # key -> local file (downloaded or reused)


class _Cancelled(Exception):
    pass


class _Vanished(Exception):
    """The object was listed, then deleted before its download (a cleanup job, a lifecycle rule): it costs
    that object, as a local file deleted between listing and reading costs that file."""


_GONE_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


class S3Cache:
    """Mirror of S3 objects under ``root``; see the module docstring for layout and keying."""

    def __init__(self, root: Path, client: Any, *, max_workers: int = DEFAULT_WORKERS):
        self.root = expanduser(root)
        self.client = client
        self.namespace = client_namespace(client)
        self.max_workers = max(1, max_workers)

    # paths
    def bucket_dir(self, bucket: str) -> Path:
        if not _BUCKET_RE.match(bucket) or ".." in bucket:
            raise InputError(f"Invalid S3 bucket name {bucket!r}.")
        return self.root / "s3" / self.namespace / bucket

    def local_path(self, bucket: str, key: str) -> Path:
        """Where ``key`` lives in the cache; raises :class:`UnsafeKey` when it would escape."""
        base = self.bucket_dir(bucket)
        path = base.joinpath(*key_segments(key))
        if not _inside(path, base):
            raise UnsafeKey("resolves outside the cache")
        return path

    def prefix_dir(self, uri: S3Uri) -> Path:
        key = uri.key.strip("/")
        if not key:
            return self.bucket_dir(uri.bucket)
        try:
            return self.local_path(uri.bucket, key)
        except UnsafeKey as err:
            raise InputError(f"Refusing S3 prefix {uri}: {err}.") from None

    def _manifest_path(self, bucket: str) -> Path:
        return self.root / "manifests" / self.namespace / f"{bucket}.json"

    def _load_manifest(self, bucket: str) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self._manifest_path(bucket).read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _save_manifest(self, bucket: str, updates: dict[str, dict[str, Any] | None]) -> None:
        if not updates:
            return
        path = self._manifest_path(bucket)
        path.parent.mkdir(parents=True, exist_ok=True)
        merged = self._load_manifest(bucket)  # merge with what another run may have written meanwhile
        for key, entry in updates.items():
            if entry is None:
                merged.pop(key, None)
            else:
                merged[key] = entry
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".manifest-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(merged, fh, indent=0, sort_keys=True)
        os.replace(tmp, path)

    # sync
    def sync(self, bucket: str, objects: Iterable[S3Object], progress: ProgressCallback | None = None) -> SyncResult:
        """Make every object available locally; download only what is missing or changed.

        Two runs sharing the cache take turns per bucket (a lock on the bucket's folder): the second
        finds the files the first downloaded, so no ``.part`` file or manifest is written by both."""
        with folder_lock(self.bucket_dir(bucket)):
            return self._sync(bucket, list(objects), progress)

    def _sync(self, bucket: str, objects: list[S3Object], progress: ProgressCallback | None) -> SyncResult:
        result = SyncResult()
        manifest = self._load_manifest(bucket)
        updates: dict[str, dict[str, Any] | None] = {}
        todo: list[tuple[S3Object, Path]] = []
        for obj in objects:
            if obj.key.endswith("/"):
                continue  # "folder" marker objects carry no data
            try:
                dest = self.local_path(bucket, obj.key)
            except UnsafeKey as err:
                result.refused.append((obj.key, str(err)))
                continue
            if self._is_current(dest, obj, manifest.get(obj.key)):
                result.reused += 1
                result.paths[obj.key] = dest
                if manifest.get(obj.key, {}).get("etag") != obj.etag:
                    updates[obj.key] = {"etag": obj.etag, "size": obj.size}
            else:
                todo.append((obj, dest))

        lock = threading.Lock()
        cancel = threading.Event()
        state = {"files": 0, "bytes": 0}
        files_total, bytes_total = len(todo), sum(o.size for o, _ in todo)

        def report(nbytes: int, finished: bool, key: str | None) -> None:
            with lock:
                state["bytes"] += nbytes
                state["files"] += int(finished)
                if progress is not None:
                    progress(Progress(state["files"], files_total, state["bytes"], bytes_total, key))

        if progress is not None and todo:
            progress(Progress(0, files_total, 0, bytes_total, None))
        completed: dict[str, tuple[S3Object, Path, int]] = {}

        def task(obj: S3Object, dest: Path) -> None:
            try:
                transferred = self._fetch(bucket, obj, dest, report, cancel)
            except UnsafeKey as err:  # e.g. a key that is both a file and a folder: skip it, go on
                with lock:
                    result.refused.append((obj.key, str(err)))
                return
            except _Vanished:
                with lock:
                    result.vanished.append(obj.key)
                return
            with lock:
                completed[obj.key] = (obj, dest, transferred)

        first_error: BaseException | None = None
        try:
            if todo:
                workers = min(self.max_workers, len(todo))
                with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="reportgen-s3") as pool:
                    futures = {pool.submit(task, obj, dest): obj for obj, dest in todo}
                    try:
                        done, pending = wait(futures, return_when=FIRST_EXCEPTION)
                        if pending:  # a worker failed: stop the others between chunks
                            cancel.set()
                    except BaseException:  # KeyboardInterrupt while waiting
                        cancel.set()
                        raise
                    finally:
                        for fut in futures:
                            fut.cancel()  # not started yet: never start
                for fut, obj in futures.items():
                    if fut.cancelled() or not fut.done():
                        continue
                    err = fut.exception()
                    if err is not None and first_error is None and not isinstance(err, _Cancelled):
                        first_error = err
        finally:
            with lock:
                for key, (obj, dest, transferred) in completed.items():
                    result.downloaded += 1
                    result.bytes_downloaded += transferred
                    result.paths[key] = dest
                    updates[key] = {"etag": obj.etag, "size": obj.size}
            self._save_manifest(bucket, updates)
        if first_error is not None:
            raise first_error
        return result

    @staticmethod
    def _is_current(dest: Path, obj: S3Object, entry: dict[str, Any] | None) -> bool:
        try:
            st = dest.stat()
        except OSError:
            return False
        if not dest.is_file() or st.st_size != obj.size:
            return False
        if entry is not None:
            return entry.get("etag") == obj.etag and entry.get("size") == obj.size
        # No manifest entry (e.g. the run was killed before writing it): adopt the file if its MD5
        # equals a plain (single-part, unencrypted) ETag; otherwise download it again.
        if not _SIMPLE_ETAG_RE.match(obj.etag):
            return False
        digest = hashlib.md5(usedforsecurity=False)
        with open(dest, "rb") as fh:
            for chunk in iter(lambda: fh.read(CHUNK), b""):
                digest.update(chunk)
        return digest.hexdigest() == obj.etag

    def _fetch(self, bucket: str, obj: S3Object, dest: Path, report, cancel: threading.Event) -> int:
        """Download one object to ``dest`` via a ``.part`` file; returns the bytes transferred."""
        from botocore.exceptions import ClientError

        uri = f"s3://{bucket}/{obj.key}"
        tag = hashlib.sha256(obj.etag.encode()).hexdigest()[:8]
        part = dest.with_name(f"{dest.name}.{tag}.part")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise UnsafeKey("conflicts with another key (a file is where a folder must be)") from None
        if dest.is_dir():
            raise UnsafeKey("conflicts with another key (a folder is where the file must be)")
        if not _inside(part, self.bucket_dir(bucket)):
            raise UnsafeKey("resolves outside the cache")
        for stale in dest.parent.glob(f"{_glob_escape(dest.name)}.*.part"):
            if stale != part:
                stale.unlink(missing_ok=True)
        offset = part.stat().st_size if part.exists() else 0
        if offset > obj.size:
            part.unlink()
            offset = 0
        transferred = 0
        if offset < obj.size or not part.exists():
            kwargs: dict[str, Any] = {"Bucket": bucket, "Key": obj.key}
            if obj.etag:
                kwargs["IfMatch"] = f'"{obj.etag}"'
            if offset:
                kwargs["Range"] = f"bytes={offset}-"
            with aws_errors(f"downloading {uri}"):
                try:
                    response = self.client.get_object(**kwargs)
                except ClientError as err:
                    code = err.response.get("Error", {}).get("Code")
                    if code in _GONE_CODES:
                        part.unlink(missing_ok=True)
                        raise _Vanished() from None
                    if code == "PreconditionFailed":
                        raise InputError(f"{uri} changed while it was being downloaded; run again.") from None
                    if code == "InvalidRange" and offset:
                        part.unlink(missing_ok=True)
                        kwargs.pop("Range")
                        offset = 0
                        response = self.client.get_object(**kwargs)
                    else:
                        raise
                body = response["Body"]
                with open(part, "ab" if offset else "wb") as fh:
                    for chunk in body.iter_chunks(CHUNK):
                        if cancel.is_set():
                            raise _Cancelled()
                        fh.write(chunk)
                        transferred += len(chunk)
                        report(len(chunk), False, obj.key)
        size = part.stat().st_size
        if size != obj.size:
            part.unlink(missing_ok=True)
            raise InputError(f"Incomplete download of {uri}: got {size} of {obj.size} bytes; run again.")
        os.replace(part, dest)
        report(0, True, obj.key)
        return transferred

    def prune(self, uri: S3Uri, keep: Iterable[str]) -> int:
        """Delete cached files under ``uri``'s folder that are not in ``keep`` (keys no longer in S3)."""
        base = self.prefix_dir(uri)
        if not base.is_dir():
            return 0
        with folder_lock(self.bucket_dir(uri.bucket)):
            return self._prune(base, uri, keep)

    def _prune(self, base: Path, uri: S3Uri, keep: Iterable[str]) -> int:
        wanted = set()
        for key in keep:
            try:
                wanted.add(os.path.normpath(self.local_path(uri.bucket, key)))
            except UnsafeKey:
                continue
        removed = 0
        for dirpath, _dirs, files in os.walk(base):
            for name in files:
                path = os.path.normpath(os.path.join(dirpath, name))
                if path not in wanted and not name.endswith(".part"):
                    os.unlink(path)
                    removed += 1
        return removed


def _glob_escape(name: str) -> str:
    import glob

    return glob.escape(name)
