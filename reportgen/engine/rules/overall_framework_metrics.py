"""OverallFrameworkMetrics (spec B.12): where framework time goes; never triggers.

Every event counts once. "others" = per worker, the time between its first step start and last
step end not covered by any step (the original's self-referential recurrence is not reproduced).
"""

from __future__ import annotations

from reportgen.engine.breakdown import breakdown_of_groups
from reportgen.engine.params import OverallFrameworkMetricsParams
from reportgen.engine.rules._common import result


def evaluate(data, params: OverallFrameworkMetricsParams | None = None) -> dict:
    p = params or OverallFrameworkMetricsParams()
    return result(0, 0, breakdown_of_groups(data.framework.groups, data.events), 0, p)
