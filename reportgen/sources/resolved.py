"""What a source resolved to (``ResolvedSource``): the one result local and remote resolution both return."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


KINDS = ("local", "s3", "processing-job", "training-job")


@dataclass(frozen=True)
class ResolvedSource:
    """What a source resolved to. Paths are local; ``*_uri`` fields say where they came from."""

    kind: str  # one of KINDS
    rule_output_dir: Path | None  # folder that directly holds the rule JSONs (e.g. .../profiler-reports)
    raw_dir: Path | None  # folder holding system/ and/or framework/
    job_name: str | None  # training job name when known, else the processing job name
    instance_type: str | None
    instance_count: int | None
    incomplete: bool  # the job or its rule job is still running: data so far only
    description: str  # one line for the report: what was resolved and from where
    downloads: int  # files downloaded by this call (0 = everything came from the cache)
    source: str = ""  # what the user gave
    region: str | None = None
    processing_job_name: str | None = None
    rule_name: str | None = None
    rule_status: str | None = None
    rule_output_uri: str | None = None  # s3:// of the rule JSONs, when remote
    raw_uri: str | None = None  # s3:// of the raw profiler data, when remote (even if not downloaded)
    raw_available: bool = False  # raw data exists (locally, or in S3 when raw_dir is None)
    end_marker: bool | None = None  # training_job_end.ts seen in the raw data (None: raw not inspected)
    notes: tuple[str, ...] = ()
    refused_keys: tuple[str, ...] = ()  # S3 keys skipped because they could not be stored safely
    bytes_downloaded: int = 0
    trace_files: tuple[Path, ...] = ()  # PyTorch profiler (Kineto) traces found in a local folder
    hyperparameters: tuple[tuple[str, str], ...] = ()  # a SageMaker training job's, as (name, value) text
    # With ``defer_system``: the raw data's system/ objects, left in S3 for Dask workers to fetch
    # (bucket, profile-root key, ((key, size, etag), ...)); raw_dir then holds everything else.
    system_objects: tuple | None = None
    # With ``defer_traces``: the PyTorch profiler traces, left in S3 for Dask workers to fetch
    # (bucket, ((key, size, etag), ...)) in the order ``trace_files`` would have had; trace_files is then ().
    trace_objects: tuple | None = None
    # With ``defer_system``, likewise the framework traces (``layout.is_framework_trace``): the same shape.
    framework_objects: tuple | None = None
