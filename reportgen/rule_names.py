"""The rule vocabulary of SageMaker Debugger's ProfilerReport, in its evaluation order."""

RULE_ORDER = (
    "CPUBottleneck",
    "IOBottleneck",
    "LowGPUUtilization",
    "StepOutlier",
    "GPUMemoryIncrease",
    "BatchSize",
    "MaxInitializationTime",
    "LoadBalancing",
    "OverallSystemUsage",
    "Dataloader",
    "OverallFrameworkMetrics",
)

# Rules that only summarise (never trigger) and are not listed in the rules summary table.
SUMMARY_RULES = ("OverallSystemUsage", "OverallFrameworkMetrics")
