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
    gpu_kernels_operators,
    operators,
    rules_summary,
    steps,
    summary,
    system_usage,
    batch_size,
    timeline,
)
from reportgen.section_ids import SectionId

# The report's sections in display order: the one list that the report builder (report/build.py), the
# notebook generator (scripts/make_notebook.py -> notebooks/profiler_report.ipynb, one cell each) and so
# the HTML follow. To add a section, add its member to reportgen/section_ids.py (in this order: a test keeps the
# two equal), a row here (and its module) and rerun scripts/make_notebook.py; tests/e2e/test_notebook_path.py
# fails while the committed notebook is not regenerated.
# A builder takes the job's RuleOutputs and returns a Section. None marks a section made from other inputs:
# "cost" (reportgen.cost, only when the instance type is known: OPTIONAL), "training-loop-analysis" (the
# heading of the deep dives, LOOP_INTRO) and "data-quality" (the notes of every stage, built last).
SECTIONS = (
    (SectionId.TRAINING_JOB_SUMMARY, summary.build),
    (SectionId.COST, None),
    (SectionId.SYSTEM_USAGE_STATISTICS, system_usage.build),
    (SectionId.UTILIZATION_OVER_TIME, timeline.build),
    (SectionId.FRAMEWORK_METRICS_SUMMARY, framework.build),
    (SectionId.CPU_OPERATORS_OVERVIEW, operators.build_cpu),
    (SectionId.GPU_OPERATORS_OVERVIEW, operators.build_gpu),
    (SectionId.GPU_KERNELS_OPERATORS, gpu_kernels_operators.build),
    (SectionId.RULES_SUMMARY_SECTION, rules_summary.build),
    (SectionId.TRAINING_LOOP_ANALYSIS, None),
    (SectionId.STEP_DURATION_ANALYSIS, steps.build),
    (SectionId.GPU_UTILIZATION_ANALYSIS, gpu.build_utilization),
    (SectionId.WORKLOAD_BALANCING, gpu.build_balancing),
    (SectionId.DATALOADING_ANALYSIS, dataloader.build),
    (SectionId.BATCH_SIZE, batch_size.build),
    (SectionId.CPU_BOTTLENECKS, bottlenecks.build_cpu),
    (SectionId.IO_BOTTLENECKS, bottlenecks.build_io),
    (SectionId.GPU_MEMORY, gpu_memory.build),
    (SectionId.INITIALIZATION_TIME, initialization.build),
    (SectionId.DATA_QUALITY, None),
)

# Sections a report has only in some runs; the notebook's cell for one shows nothing when it is absent.
OPTIONAL = frozenset({SectionId.COST})

SECTION_IDS = tuple(section_id for section_id, _ in SECTIONS)
# The sections built from the rule outputs, in order.
BUILDERS = tuple((section_id, builder) for section_id, builder in SECTIONS if builder is not None)
