"""Raw-data objects in S3 that the Dask workers fetch themselves: the client lists them and passes their
keys, each worker downloads its own task's objects with its own boto3 session, so no profile data passes
through the client (docs/distributed.md, "S3 sources").

boto3 is imported only where a worker downloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class S3System:
    """Raw-data objects in S3 that the workers fetch themselves: the system metrics, or (the same
    class, other objects) the framework traces."""

    bucket: str
    root_key: str  # the profile root ("" or ".../profiler-output"), no trailing slash
    objects: tuple[tuple[str, int, str], ...]  # (key, size, etag) of every object under <root>/system/ (or the traces)
    region: str | None = None
    session_kwargs: dict | None = None

    @property
    def source_id(self) -> str:
        return f"s3://{self.bucket}/{self.root_key}"

    def rel(self, key: str) -> str:
        return key[len(self.root_key) + 1:] if self.root_key else key

    def key(self, rel: str) -> str:
        return f"{self.root_key}/{rel}" if self.root_key else rel

    def uri(self, rel: str) -> str:
        """How data problems and the trace cache name the object: its ``s3://`` URI."""
        return f"s3://{self.bucket}/{self.key(rel)}"

    def listed(self, rel: str) -> tuple[int, str] | None:
        """The size and ETag the client's listing gave ``rel`` (None: not listed)."""
        key = self.key(rel)
        return next(((int(size), str(etag)) for k, size, etag in self.objects if k == key), None)


def download_objects(s3: S3System, rels: list[str], dest: Path, served: list[str] | None = None) -> list[tuple[str, Path]]:
    """Worker side: fetch ``rels`` (keys relative to ``s3.root_key``) into ``dest`` with the worker's own
    boto3 session; ``(rel, local path)`` of each (a key unsafe as a path is skipped). ``served``: receives the
    ETag of every GET response that brought bytes (what says which write of an object was downloaded)."""
    from reportgen.sources.aws import aws_errors, make_client, make_session
    from reportgen.sources.s3 import UnsafeKey, key_segments

    client = make_client(make_session(s3.session_kwargs), "s3", s3.region)
    if served is not None:
        def seen(parsed=None, **_) -> None:  # boto3's transfer threads call it: list.append is atomic
            served.append(str((parsed or {}).get("ETag", "")).strip('"'))

        client.meta.events.register("after-call.s3.GetObject", seen)
    out = []
    for rel in rels:
        try:
            path = dest.joinpath(*key_segments(rel))
        except UnsafeKey:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        with aws_errors(f"downloading s3://{s3.bucket}/{s3.key(rel)}"):
            client.download_file(s3.bucket, s3.key(rel), str(path))
        out.append((rel, path))
    return out


def download_listed(s3: S3System, rel: str, dest: Path) -> tuple[Path | None, bool]:
    """Worker side: fetch one listed object into ``dest``; its local path (None: a key unsafe as a path) and whether
    the bytes are the object the listing named: every GET that served them answered with the listed ETag and the
    file has the listed size (an object rewritten since the listing is downloaded as it is now, and is not that).
    What a cache keyed by key, size and ETag may keep (``trace_analysis/s3_traces.py``)."""
    served: list[str] = []
    got = dict(download_objects(s3, [rel], dest, served)).get(rel)
    listed = s3.listed(rel)
    if got is None or listed is None:
        return got, False
    try:
        size = got.stat().st_size
    except OSError:
        return got, False
    return got, bool(served) and size == listed[0] and all(tag == listed[1] for tag in served)
