"""One entry point: any source the user gives -> local folders with rule outputs and/or raw data.

``classify`` tells the kind; local folders are resolved by ``sources/local.py``, S3 prefixes and SageMaker jobs by
``sources/remote.py``; both return a ``ResolvedSource`` (``sources/resolved.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reportgen.errors import InputError, expanduser
from reportgen.sources.arn import JOB_PREFIX, is_job_name, job_name_of, looks_like_arn, parse_arn
from reportgen.sources.local import locate_local, resolve_local
from reportgen.sources.remote import RemoteSource
from reportgen.sources.resolved import KINDS, ResolvedSource

__all__ = ["KINDS", "ResolvedSource", "classify", "locate_local", "resolve_source"]


def classify(source: str) -> str:
    """Which kind of source ``source`` is, without touching AWS."""
    text = source.strip()
    if not text:
        raise InputError("Empty source: give a processing-job or training-job ARN, a training-job name, an s3:// URI or a local folder.")
    if looks_like_arn(text):
        return parse_arn(text).resource_type
    if text.lower().startswith("s3://"):
        return "s3"
    path = expanduser(text)
    if path.exists():
        return "local"
    if job_name_of(text) is not None:
        return "training-job"
    # Anything else names a local path: a typo must read as a missing folder, never reach AWS unasked.
    hint = (f"; for the SageMaker training job of that name write {JOB_PREFIX}{text} (or give its ARN)"
            if is_job_name(text) else "")
    raise InputError(f"no folder {_quoted(text)} here ({Path.cwd()}){hint}")


def _quoted(text: str) -> str:
    """A user's path in a one-line message: as typed when plain, else repr'd (no newline can split the line)."""
    return text if text.isprintable() and len(text) <= 200 and " " not in text else repr(text[:200])


def resolve_source(
    source: str,
    *,
    cache_dir: Path | None = None,
    recompute: bool = False,
    progress: Any = None,
    session_kwargs: dict[str, Any] | None = None,
    max_workers: int = 8,
    defer_system: bool = False,
    defer_traces: bool = False,
) -> ResolvedSource:
    """Resolve ``source`` to local folders.

    ``recompute``: the caller will run the rules on raw data, so raw data is required and downloaded;
    otherwise rule outputs are preferred and raw data is downloaded only when there are none.
    ``progress``: called with :class:`reportgen.sources.s3.Progress` snapshots while downloading.
    ``session_kwargs``: passed to :class:`boto3.Session` (e.g. ``{"profile_name": "dev"}`` for ``--profile``).
    ``defer_system``: do not download the raw data's system metrics (``system/``) and framework
    traces; list them in ``system_objects`` / ``framework_objects`` instead, for Dask workers that
    read S3 themselves (``--scheduler``).
    ``defer_traces``: the same for PyTorch profiler traces (``trace_objects``).
    """
    kind = classify(source)
    if kind == "local":
        return resolve_local(expanduser(source.strip()), recompute=recompute, source=source)
    remote = RemoteSource(source.strip(), cache_dir, recompute, progress, session_kwargs, max_workers)
    remote.defer_system = defer_system
    remote.defer_traces = defer_traces
    return remote.resolve(kind)
