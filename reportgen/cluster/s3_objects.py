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


def download_objects(s3: S3System, rels: list[str], dest: Path) -> list[tuple[str, Path]]:
    """Worker side: fetch ``rels`` (keys relative to ``s3.root_key``) into ``dest`` with the worker's own
    boto3 session; ``(rel, local path)`` of each (a key unsafe as a path is skipped)."""
    from reportgen.sources.aws import aws_errors, make_client, make_session
    from reportgen.sources.s3 import UnsafeKey, key_segments

    client = make_client(make_session(s3.session_kwargs), "s3", s3.region)
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
