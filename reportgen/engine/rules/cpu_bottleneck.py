"""CPUBottleneck (spec B.2): GPUs idle while some core is busy."""

from reportgen.engine.params import CPUBottleneckParams
from reportgen.engine.rules._bottleneck import evaluate_bottleneck


def evaluate(data, params: CPUBottleneckParams | None = None) -> dict:
    params = params or CPUBottleneckParams()
    return evaluate_bottleneck(data, params, "CPUUtilization", params.cpu_threshold)
