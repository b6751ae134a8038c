"""Could a rule have fired at all? ``fired`` / ``passed`` / ``not_evaluated`` with the reason.

A rule that saw no datapoints, or fewer than it needs before it may trigger (its ``patience`` or
``window``), or whose input cannot exist in this job (GPU rules on a CPU-only job, a GPU-pair
comparison with one GPU per node), did not pass: it was not evaluated. Saying "did not fire" there
would be a false all-clear. This works from a rule's counts, parameters and details alone, so the CI
outputs can re-derive it from ``report.json``.
"""

from __future__ import annotations

import math

from reportgen.rule_outputs import StepDetails, balancing_of
from reportgen.rulebook import BY_NAME

FIRED, PASSED, NOT_EVALUATED = "fired", "passed", "not_evaluated"
STATES = (FIRED, PASSED, NOT_EVALUATED)

# StepOutlier (SageMaker's and our engine's) judges a node only once it has more than this many steps.
STEP_OUTLIER_MIN_STEPS = 100
# Dataloader judges once more than this many seconds had data-loading events (its patience; not printed
# in RuleParameters, as in the original).
DATALOADER_PATIENCE_S = 10


def _number(value) -> float | None:
    try:
        value = float(value if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value))
    except (TypeError, ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def minimum_datapoints(parameters) -> int:
    """The most datapoints a rule can see without ever being allowed to trigger (patience/window)."""
    values = dict(parameters or ())
    bounds = [_number(values.get(key)) for key in ("patience", "window")]
    return int(min(max([b for b in bounds if b is not None] or [0]), 1e15))


def _too_few_steps(steps: StepDetails, parameters) -> str:
    """PyTorch-trace StepOutlier (``reportgen.trace_analysis``): it fires on a rank only with more than ``n_outliers``
    outlier steps, so ranks with at most that many profiled steps can never fire."""
    counts = [node.steps for node in steps.workers.values() if node.is_object]
    limit = _number(dict(parameters or ()).get("n_outliers"))
    if not counts or limit is None or not all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
        return ""
    if max(counts) <= limit:
        return (f"at most {max(counts)} profiled steps per rank, and it fires only with more than {limit:g} "
                "outlier steps")
    return ""


def evaluate_rule(rule: str, triggered: int, datapoints: int, parameters=(), details: dict | None = None,
                  has_gpu: bool | None = None, duration_s: float | None = None) -> tuple[str, str]:
    """(state, reason). ``reason`` says why a rule was not evaluated ("" otherwise).

    ``has_gpu`` is False when the job is known to have no GPU metrics, None when unknown;
    ``duration_s`` is the job's length when known.
    """
    details = details if isinstance(details, dict) else {}
    if (triggered or 0) > 0:
        return FIRED, ""
    if has_gpu is False and rule in BY_NAME and BY_NAME[rule].needs_gpu:  # the rulebook row says it judges GPU use
        return NOT_EVALUATED, "no GPU metrics were recorded, and this rule judges GPU use"
    if not datapoints:
        return NOT_EVALUATED, "no datapoints: the data it needs was not recorded"
    minimum = minimum_datapoints(parameters)
    if minimum and datapoints <= minimum:
        return NOT_EVALUATED, (f"{datapoints} datapoints, and it may only fire after more than {minimum}, "
                               "its patience/window")
    if rule == "StepOutlier" and not StepDetails.of(details).listed and datapoints <= STEP_OUTLIER_MIN_STEPS:
        return NOT_EVALUATED, f"{datapoints} steps; a node is judged only with more than {STEP_OUTLIER_MIN_STEPS}"
    if rule == "StepOutlier" and (reason := _too_few_steps(StepDetails.of(details), parameters)):
        return NOT_EVALUATED, reason
    if rule == "LoadBalancing":
        gpus = [len(node.gpus) for node in balancing_of(details) if node.has_workloads]
        if gpus and max(gpus) < 2:
            return NOT_EVALUATED, "every node has one GPU, and this rule compares GPUs of a node"
    if rule == "Dataloader" and details.get("cores") == 0:
        return NOT_EVALUATED, "the number of CPU cores is unknown: no system metrics"
    if rule == "Dataloader" and duration_s is not None and duration_s <= DATALOADER_PATIENCE_S:
        return NOT_EVALUATED, (f"the job lasted {duration_s:.0f} s, and it judges only after more than "
                               f"{DATALOADER_PATIENCE_S} s of data loading")
    return PASSED, ""
