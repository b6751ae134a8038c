"""Local recorder: run a training command and record SageMaker-style system metrics while it runs."""

from reportgen.recorder.run import RecordResult, parse_interval, record
from reportgen.recorder.sampler import Sampler, load_nvml
from reportgen.recorder.writer import MetricsWriter

__all__ = ["MetricsWriter", "RecordResult", "Sampler", "load_nvml", "parse_interval", "record"]
