"""The rulebook: one row per ProfilerReport rule, read by the engine, the report texts and the docs.

A row says everything the rest of the code needs to know about a rule: its place in SageMaker's
evaluation order (the row's position), the module under ``reportgen/engine/rules/`` whose
``evaluate(data, params)`` computes it, the parameter class in ``reportgen/engine/params.py``, the
lane it runs in (``events``: rules that build big temporaries from the framework event table run
one after another beside the ``system`` lane, so peak memory stays one heavy rule per lane), whether
it only summarises (never triggers; not listed in the rules summary table), whether it judges GPU use
(so it cannot fire without GPU metrics: the diagnosis then says "not evaluated", never "did not fire"),
the report section that is its deep dive, and our wording for the report: what it checks, what to do
when it fires, what firing means. Adding a rule: a row here plus its module (and a report section if it
has one), see docs/adding-a-rule.md.

This module imports only the section ids (layer 0): the engine resolves ``module`` and ``params`` by
name, and the report stays free of engine imports.
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen.section_ids import PlainStrEnum, SectionId


class RuleName(PlainStrEnum):
    """The rules' names, one member each, in SageMaker's evaluation order (the order of ``RULES``).

    A ``str`` enum like ``SectionId``: a member *is* its name (``RuleName.BATCH_SIZE == "BatchSize"``,
    it hashes as the name, so ``outputs.get(RuleName.BATCH_SIZE)`` finds the rule output, and formats
    and serialises as it), so outputs are unchanged while a misspelt name fails at import."""

    CPU_BOTTLENECK = "CPUBottleneck"
    IO_BOTTLENECK = "IOBottleneck"
    LOW_GPU_UTILIZATION = "LowGPUUtilization"
    STEP_OUTLIER = "StepOutlier"
    GPU_MEMORY_INCREASE = "GPUMemoryIncrease"
    BATCH_SIZE = "BatchSize"
    MAX_INITIALIZATION_TIME = "MaxInitializationTime"
    LOAD_BALANCING = "LoadBalancing"
    OVERALL_SYSTEM_USAGE = "OverallSystemUsage"
    DATALOADER = "Dataloader"
    OVERALL_FRAMEWORK_METRICS = "OverallFrameworkMetrics"



@dataclass(frozen=True)
class Rule:
    name: RuleName  # as SageMaker names it: the rule output's file name and RuleName
    module: str  # reportgen.engine.rules.<module>.evaluate(data, params) -> dict (SageMaker schema)
    params: str  # the RuleParams subclass in reportgen.engine.params
    lane: str  # "events" or "system" (see the module docstring)
    summary_only: bool  # a summary (never triggers), left out of the rules summary table and CI checks
    needs_gpu: bool  # judges moments of GPU use: without GPU metrics it cannot fire (not evaluated)
    section: SectionId | None  # its deep dive in the report (None: only its line in the rules summary)
    description: str | None  # what it checks (report's rules summary)
    recommendation: str | None  # what to do when it fires
    symptom: str | None  # what firing means, the second half of the one-line finding


RULES: tuple[Rule, ...] = (
    Rule(
        name=RuleName.CPU_BOTTLENECK, module="cpu_bottleneck", params="CPUBottleneckParams",
        lane="events", summary_only=False,
        needs_gpu=True, section=SectionId.CPU_BOTTLENECKS,
        description=("Counts the moments when a CPU core is busy while the GPU is nearly idle: the GPU is then"
                     " likely waiting for data prepared on the CPU. Fires when such moments exceed the "
                     "threshold share of all samples (default 50 %)."),
        recommendation=("Use more data-loading workers or pre-fetch data, or move pre-processing off the training"
                        " instance."),
        symptom="the GPU was often nearly idle while CPU cores were busy",
    ),
    Rule(
        name=RuleName.IO_BOTTLENECK, module="io_bottleneck", params="IOBottleneckParams",
        lane="events", summary_only=False,
        needs_gpu=True, section=SectionId.IO_BOTTLENECKS,
        description=("Counts the moments when cores wait on I/O while the GPU is nearly idle: training is then"
                     " likely waiting for storage. Fires when such moments exceed the threshold share of all "
                     "samples (default 50 %)."),
        recommendation="Pre-fetch data, read larger files or a binary record format, or use faster storage.",
        symptom="the GPU was often nearly idle while cores waited on I/O",
    ),
    Rule(
        name=RuleName.LOW_GPU_UTILIZATION, module="low_gpu_utilization", params="LowGPUUtilizationParams",
        lane="system", summary_only=False,
        needs_gpu=True, section=SectionId.GPU_UTILIZATION_ANALYSIS,
        description=("Fires when GPU utilization is low or swings widely, which points at bottlenecks, "
                     "blocking synchronization calls or a small batch."),
        recommendation=("Look for bottlenecks, reduce blocking calls, review the distribution strategy, or "
                        "increase the batch size."),
        symptom="GPU utilization was low or fluctuated widely",
    ),
    Rule(
        name=RuleName.STEP_OUTLIER, module="step_outlier", params="StepOutlierParams",
        lane="events", summary_only=False,
        needs_gpu=False, section=SectionId.STEP_DURATION_ANALYSIS,
        description=("Flags steps that take much longer than usual (more than the mean plus a number of "
                     "standard deviations), a sign of stalls or bottlenecks."),
        recommendation="Check whether CPU or I/O bottlenecks coincide with the slow steps.",
        symptom="some steps took much longer than usual",
    ),
    Rule(
        name=RuleName.GPU_MEMORY_INCREASE, module="gpu_memory_increase", params="GPUMemoryIncreaseParams",
        lane="system", summary_only=False,
        needs_gpu=True, section=SectionId.GPU_MEMORY,
        description="Watches the moving average of GPU memory utilization and fires on a large increase.",
        recommendation=("If memory utilization is close to the GPU's capacity, use an instance with more GPU "
                        "memory."),
        symptom="GPU memory utilization rose sharply",
    ),
    Rule(
        name=RuleName.BATCH_SIZE, module="batch_size", params="BatchSizeParams",
        lane="system", summary_only=False,
        needs_gpu=True, section=SectionId.BATCH_SIZE,
        description=("Fires when CPU, GPU and GPU memory utilization are all low at the same time: the batch "
                     "is probably too small for the instance."),
        recommendation="Increase the batch size, or run on a smaller instance type.",
        symptom="CPU, GPU and GPU memory were all underused at the same time",
    ),
    Rule(
        name=RuleName.MAX_INITIALIZATION_TIME, module="max_initialization_time", params="MaxInitializationTimeParams",
        lane="events", summary_only=False,
        needs_gpu=False, section=SectionId.INITIALIZATION_TIME,
        description=("Fires when the first training step starts later than the threshold (default 20 minutes) "
                     "after the job started, e.g. because input data is downloaded up front."),
        recommendation="Stream input data instead of downloading it all first (e.g. Pipe or FastFile mode).",
        symptom="the first training step started late",
    ),
    Rule(
        name=RuleName.LOAD_BALANCING, module="load_balancing", params="LoadBalancingParams",
        lane="system", summary_only=False,
        needs_gpu=True, section=SectionId.WORKLOAD_BALANCING,
        description=("Compares the utilization histograms of every pair of GPUs and fires when they differ by "
                     "more than the threshold: some GPUs work harder than others."),
        recommendation="Review the data-parallel strategy or framework so work is spread evenly.",
        symptom="some GPUs worked much harder than others",
    ),
    Rule(
        name=RuleName.OVERALL_SYSTEM_USAGE, module="overall_system_usage", params="OverallSystemUsageParams",
        lane="system", summary_only=True,
        needs_gpu=False, section=None,
        description=None,
        recommendation=None,
        symptom=None,
    ),
    Rule(
        name=RuleName.DATALOADER, module="dataloader", params="DataloaderParams",
        lane="events", summary_only=False,
        needs_gpu=False, section=SectionId.DATALOADING_ANALYSIS,
        description=("Compares how many data-loading processes ran in parallel with the number of CPU cores. "
                     "Too few starve the GPU; too many compete with the rest of the training work for the CPU."),
        recommendation="Change the number of data-loading processes to suit the number of cores.",
        symptom="the number of data-loading processes did not suit the number of cores",
    ),
    Rule(
        name=RuleName.OVERALL_FRAMEWORK_METRICS, module="overall_framework_metrics", params="OverallFrameworkMetricsParams",
        lane="events", summary_only=True,
        needs_gpu=False, section=None,
        description=None,
        recommendation=None,
        symptom=None,
    ),
)

BY_NAME = {rule.name: rule for rule in RULES}
RULE_ORDER = tuple(rule.name for rule in RULES)  # SageMaker's evaluation order
SUMMARY_RULES = tuple(rule.name for rule in RULES if rule.summary_only)
# A rule's deep dive: section id -> the rule (a rule that was not evaluated says so at the top of it).
DEEP_DIVES = {rule.section: rule.name for rule in RULES if rule.section is not None}


# The rules a CI run can fail on (--fail-on): every rule but the two summaries, which never fire.
CHECKED_RULES = tuple(r for r in RULE_ORDER if r not in SUMMARY_RULES)
