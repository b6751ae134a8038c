"""What each rule checks and what to do when it fires (our wording)."""

from __future__ import annotations

from reportgen.diagnosis.evaluation import evaluate_rule

DESCRIPTIONS = {
    "CPUBottleneck": (
        "Counts the moments when a CPU core is busy while the GPU is nearly idle: the GPU is then "
        "likely waiting for data prepared on the CPU. Fires when such moments exceed the threshold "
        "share of all samples (default 50 %)."
    ),
    "IOBottleneck": (
        "Counts the moments when cores wait on I/O while the GPU is nearly idle: training is then "
        "likely waiting for storage. Fires when such moments exceed the threshold share of all "
        "samples (default 50 %)."
    ),
    "Dataloader": (
        "Compares how many data-loading processes ran in parallel with the number of CPU cores. "
        "Too few starve the GPU; too many compete with the rest of the training work for the CPU."
    ),
    "GPUMemoryIncrease": (
        "Watches the moving average of GPU memory utilization and fires on a large increase."
    ),
    "BatchSize": (
        "Fires when CPU, GPU and GPU memory utilization are all low at the same time: the batch is "
        "probably too small for the instance."
    ),
    "LowGPUUtilization": (
        "Fires when GPU utilization is low or swings widely, which points at bottlenecks, blocking "
        "synchronization calls or a small batch."
    ),
    "MaxInitializationTime": (
        "Fires when the first training step starts later than the threshold (default 20 minutes) "
        "after the job started, e.g. because input data is downloaded up front."
    ),
    "LoadBalancing": (
        "Compares the utilization histograms of every pair of GPUs and fires when they differ by "
        "more than the threshold: some GPUs work harder than others."
    ),
    "StepOutlier": (
        "Flags steps that take much longer than usual (more than the mean plus a number of "
        "standard deviations), a sign of stalls or bottlenecks."
    ),
}

RECOMMENDATIONS = {
    "CPUBottleneck": "Use more data-loading workers or pre-fetch data, or move pre-processing off the training instance.",
    "IOBottleneck": "Pre-fetch data, read larger files or a binary record format, or use faster storage.",
    "Dataloader": "Change the number of data-loading processes to suit the number of cores.",
    "GPUMemoryIncrease": "If memory utilization is close to the GPU's capacity, use an instance with more GPU memory.",
    "BatchSize": "Increase the batch size, or run on a smaller instance type.",
    "LowGPUUtilization": "Look for bottlenecks, reduce blocking calls, review the distribution strategy, or increase the batch size.",
    "MaxInitializationTime": "Stream input data instead of downloading it all first (e.g. Pipe or FastFile mode).",
    "LoadBalancing": "Review the data-parallel strategy or framework so work is spread evenly.",
    "StepOutlier": "Check whether CPU or I/O bottlenecks coincide with the slow steps.",
}


# What it means when the rule fires, as the second half of the one-line finding.
SYMPTOMS = {
    "CPUBottleneck": "the GPU was often nearly idle while CPU cores were busy",
    "IOBottleneck": "the GPU was often nearly idle while cores waited on I/O",
    "Dataloader": "the number of data-loading processes did not suit the number of cores",
    "GPUMemoryIncrease": "GPU memory utilization rose sharply",
    "BatchSize": "CPU, GPU and GPU memory were all underused at the same time",
    "LowGPUUtilization": "GPU utilization was low or fluctuated widely",
    "MaxInitializationTime": "the first training step started late",
    "LoadBalancing": "some GPUs worked much harder than others",
    "StepOutlier": "some steps took much longer than usual",
}


def rule_status(triggered, datapoints, parameters=(), details=None, rule: str = "", has_gpu=None) -> str:
    """``fired``, ``passed``, or ``not_evaluated`` (no datapoints, fewer than its patience/window, or data
    this job cannot have): see ``reportgen.diagnosis.evaluation``."""
    return evaluate_rule(rule, triggered or 0, datapoints or 0, parameters, details, has_gpu)[0]


def finding(rule: str, triggered, violations, datapoints, state: str | None = None, reason: str = "") -> str:
    """One line saying what the rule found, built from its counts (and why it was not evaluated)."""
    status = state or rule_status(triggered, datapoints)
    counts = f"{violations or 0} violations in {datapoints or 0} datapoints"
    if status == "fired":
        times = "once" if triggered == 1 else f"{triggered} times"
        symptom = SYMPTOMS.get(rule)
        return f"{rule} fired {times} ({counts})" + (f": {symptom}." if symptom else ".")
    if status == "not_evaluated":
        return f"{rule} was not evaluated: {reason or 'it had no datapoints'}."
    return f"{rule} did not fire ({counts})."


def describe(rule: str) -> str:
    return DESCRIPTIONS.get(rule, "A rule this version of reportgen does not know.")


def recommend(rule: str) -> str:
    return RECOMMENDATIONS.get(rule, "")
