"""One builder per report section, in the report's order (a small registry).

Each builder takes the job's ``RuleOutputs`` and returns a ``Section``; a section whose
data is absent says so in one line instead of vanishing.
"""

from __future__ import annotations

from reportgen.report.sections import (
    bottlenecks,
    dataloader,
    framework,
    gpu,
    gpu_memory,
    initialization,
    kineto,
    operators,
    rules_summary,
    steps,
    summary,
    system_usage,
    batch_size,
    timeline,
)

# The report's sections in display order: the one list that the report builder (report/build.py), the
# notebook generator (scripts/make_notebook.py -> notebooks/profiler_report.ipynb, one cell each) and so
# the HTML follow. To add a section, add a row here (and its module) and rerun scripts/make_notebook.py;
# tests/e2e/test_notebook_path.py fails while the committed notebook is not regenerated.
# A builder takes the job's RuleOutputs and returns a Section. None marks a section made from other inputs:
# "cost" (reportgen.cost, only when the instance type is known: OPTIONAL), "training-loop-analysis" (the
# heading of the deep dives, LOOP_INTRO) and "data-quality" (the notes of every stage, built last).
SECTIONS = (
    ("training-job-summary", summary.build),
    ("cost", None),
    ("system-usage-statistics", system_usage.build),
    ("utilization-over-time", timeline.build),
    ("framework-metrics-summary", framework.build),
    ("cpu-operators-overview", operators.build_cpu),
    ("gpu-operators-overview", operators.build_gpu),
    ("gpu-kernels-operators", kineto.build),
    ("rules-summary-section", rules_summary.build),
    ("training-loop-analysis", None),
    ("step-duration-analysis", steps.build),
    ("gpu-utilization-analysis", gpu.build_utilization),
    ("workload-balancing", gpu.build_balancing),
    ("dataloading-analysis", dataloader.build),
    ("batch-size", batch_size.build),
    ("cpu-bottlenecks", bottlenecks.build_cpu),
    ("io-bottlenecks", bottlenecks.build_io),
    ("gpu-memory", gpu_memory.build),
    ("initialization-time", initialization.build),
    ("data-quality", None),
)

# Sections a report has only in some runs; the notebook's cell for one shows nothing when it is absent.
OPTIONAL = frozenset({"cost"})

SECTION_IDS = tuple(section_id for section_id, _ in SECTIONS)
# The sections built from the rule outputs, in order.
BUILDERS = tuple((section_id, builder) for section_id, builder in SECTIONS if builder is not None)
