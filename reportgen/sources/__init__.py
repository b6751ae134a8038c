"""Sources layer: turn what the user gives into local folders.

Accepted sources: a ProfilerReport processing-job ARN, a training-job ARN or name, an ``s3://`` prefix,
or a local folder. See ``docs/sources.md``. boto3 is imported only for remote sources.
"""

from reportgen.sources.resolve import ResolvedSource, classify, locate_local, resolve_source

__all__ = ["ResolvedSource", "classify", "locate_local", "resolve_source"]
