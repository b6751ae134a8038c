"""The 11 ProfilerReport rules: one module each, ``evaluate(data, params) -> dict`` (SageMaker schema)."""

from __future__ import annotations

import importlib

from reportgen.engine.params import PARAMS_CLASSES

MODULES = {
    "CPUBottleneck": "cpu_bottleneck",
    "IOBottleneck": "io_bottleneck",
    "LowGPUUtilization": "low_gpu_utilization",
    "StepOutlier": "step_outlier",
    "GPUMemoryIncrease": "gpu_memory_increase",
    "BatchSize": "batch_size",
    "MaxInitializationTime": "max_initialization_time",
    "LoadBalancing": "load_balancing",
    "OverallSystemUsage": "overall_system_usage",
    "Dataloader": "dataloader",
    "OverallFrameworkMetrics": "overall_framework_metrics",
}
assert tuple(MODULES) == tuple(PARAMS_CLASSES)


def rule_module(name: str):
    return importlib.import_module(f"reportgen.engine.rules.{MODULES[name]}")


REGISTRY = {name: (MODULES[name], PARAMS_CLASSES[name]) for name in MODULES}
