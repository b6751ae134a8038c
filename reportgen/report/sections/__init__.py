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

# (section id, builder). The notebook shows them in this order.
BUILDERS = (
    ("training-job-summary", summary.build),
    ("system-usage-statistics", system_usage.build),
    ("utilization-over-time", timeline.build),
    ("framework-metrics-summary", framework.build),
    ("cpu-operators-overview", operators.build_cpu),
    ("gpu-operators-overview", operators.build_gpu),
    ("gpu-kernels-operators", kineto.build),
    ("rules-summary-section", rules_summary.build),
    ("step-duration-analysis", steps.build),
    ("gpu-utilization-analysis", gpu.build_utilization),
    ("workload-balancing", gpu.build_balancing),
    ("dataloading-analysis", dataloader.build),
    ("batch-size", batch_size.build),
    ("cpu-bottlenecks", bottlenecks.build_cpu),
    ("io-bottlenecks", bottlenecks.build_io),
    ("gpu-memory", gpu_memory.build),
    ("initialization-time", initialization.build),
)
