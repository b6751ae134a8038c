"""IOBottleneck (spec B.3): GPUs idle while some core waits on I/O (pairs still labelled "CPUs")."""

from reportgen.engine.params import IOBottleneckParams
from reportgen.engine.rules._bottleneck import evaluate_bottleneck


def evaluate(data, params: IOBottleneckParams | None = None) -> dict:
    params = params or IOBottleneckParams()
    return evaluate_bottleneck(data, params, "I/OWaitPercentage", params.io_threshold)
