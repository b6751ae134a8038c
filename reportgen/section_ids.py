"""The report's section ids, one enum: the page's anchors, report.json's ``sections`` keys, compare's lookups.

A ``str`` enum, so a member *is* its id (``SectionId.GPU_MEMORY == "gpu-memory"``, ``f"{member}"`` and
``json.dumps`` give the plain id): outputs stay byte-identical while a misspelt id fails at import, not
when a test happens to render that path. Declared in the report's display order; the order the page
follows is still ``reportgen.report.sections.SECTIONS`` (which a test keeps equal to this). Layer 0:
the rulebook (a rule's deep dive), the diagnosis (a finding's sections) and compare all name sections.
"""

from __future__ import annotations

from enum import Enum


class PlainStrEnum(str, Enum):
    """A ``str`` enum whose members print, format and serialise as their plain value (``RuleName`` too)."""

    def __str__(self) -> str:  # the plain value in f-strings and str() on every Python (3.11 changed format())
        return str.__str__(self)

    __format__ = str.__format__  # type: ignore[assignment]  # str's, not Enum's: the plain value on every Python


class SectionId(PlainStrEnum):
    TRAINING_JOB_SUMMARY = "training-job-summary"
    COST = "cost"
    SYSTEM_USAGE_STATISTICS = "system-usage-statistics"
    UTILIZATION_OVER_TIME = "utilization-over-time"
    FRAMEWORK_METRICS_SUMMARY = "framework-metrics-summary"
    CPU_OPERATORS_OVERVIEW = "cpu-operators-overview"
    GPU_OPERATORS_OVERVIEW = "gpu-operators-overview"
    GPU_KERNELS_OPERATORS = "gpu-kernels-operators"
    RULES_SUMMARY_SECTION = "rules-summary-section"
    TRAINING_LOOP_ANALYSIS = "training-loop-analysis"
    STEP_DURATION_ANALYSIS = "step-duration-analysis"
    GPU_UTILIZATION_ANALYSIS = "gpu-utilization-analysis"
    WORKLOAD_BALANCING = "workload-balancing"
    DATALOADING_ANALYSIS = "dataloading-analysis"
    BATCH_SIZE = "batch-size"
    CPU_BOTTLENECKS = "cpu-bottlenecks"
    IO_BOTTLENECKS = "io-bottlenecks"
    GPU_MEMORY = "gpu-memory"
    INITIALIZATION_TIME = "initialization-time"
    DATA_QUALITY = "data-quality"
