"""Are A and B the same job, changed, or two unrelated jobs? Checked before any verdict.

What makes a job itself is what it computes: its operator mix. Two runs whose most expensive CPU operators
share little of their time (another model, another training loop) are **not comparable**: the page still
shows both side by side, but gives no verdict and the regression gate cannot judge them (it fails closed)
unless ``--force``. Hardware, world size and instance count are what a user changes on purpose (the
SageMaker case study moves 3 ml.p3.8xlarge to 2 ml.p3.2xlarge): they are named beside the verdict as what
changed, so a step-time change is read with them in mind; from profiler traces alone, the GPU model
(deviceProperties) and the world size the ranks state (distributedInfo, else the ranks traced). The batch size is checked where both runs' are
known (``compare.batch``: given with ``--batch-size-a/-b``, a SageMaker job's hyperparameters, a recording's
command line): two runs of different batch sizes are not comparable by their step times, which do different
work; with ``--force`` the verdict adds the time per sample (a step's time ÷ its batch size), the fair
comparison of the two.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from reportgen.compare.side import Side
from reportgen.report.json_views import OperatorTable
from reportgen.report.util import number
from reportgen.report.views import usage_rows_of
from reportgen.section_ids import SectionId
from reportgen.trace_ranks import trace_ranks_of

MIN_SHARED = 0.25  # operators both ran below this share of the top operators' time: another job
MIN_OPERATORS = 3  # fewer known operators on a side: the mix is not judged
TOP = 15


@dataclass
class Comparability:
    comparable: bool
    reasons: list[str] = field(default_factory=list)  # why not comparable
    changes: list[str] = field(default_factory=list)  # what differs between the runs without making them unrelated
    shared_operator_time: float | None = None  # 0..1, the time-weighted overlap of the top operators
    operators_from: str | None = None  # "profiler traces" | "SageMaker framework metrics"
    forced: bool = False
    batch_a: int | None = None  # each run's batch size, where known (compare.batch)
    batch_b: int | None = None
    batch_from: list[str] = field(default_factory=list)  # where each known one was read

    def to_data(self) -> dict:
        return asdict(self)

    def because(self) -> str:
        return "; ".join(self.reasons)


def _base_name(name: str) -> str:
    """An operator's name without its ``#`` suffix (``enumerate(DataLoader)#_MultiProcessingDataLoaderIter``
    and ``…#_SingleProcessDataLoaderIter`` are the same step of the loop: changing the workers changes it)."""
    return str(name).split("#", 1)[0]


def _shares(values: dict) -> dict[str, float] | None:
    top = sorted(((n, v) for n, v in values.items() if v is not None and v > 0), key=lambda x: -x[1])[:TOP]
    merged: dict[str, float] = {}
    for name, value in top:
        merged[_base_name(name)] = merged.get(_base_name(name), 0.0) + value
    total = sum(merged.values())
    return {n: v / total for n, v in merged.items()} if len(merged) >= MIN_OPERATORS and total > 0 else None


def _operators(side: Side) -> tuple[str, dict[str, float] | None]:
    summary = side.traces()
    ops = summary.op_ms_per_step if summary else None
    if ops:
        return "profiler traces", _shares({n: number(v) for n, v in ops.items()})
    rows = OperatorTable.of(side.data(SectionId.CPU_OPERATORS_OVERVIEW)).rows
    found = {str(r.operator): number(r.percentage) for r in rows}
    return "SageMaker framework metrics", _shares(found) if found else None


def _world(side: Side) -> tuple[str, int, int | None] | None:
    """("rank", ranks traced, the world size they all state or None) from the profiler traces (a sample of a
    job's ranks states the whole job's), else ("node", n, None) from the system metrics, else None."""
    traces = side.traces()
    if traces and traces.ranks:
        stated = {rank.world_size for rank in trace_ranks_of(side.outputs.traces).values() if rank.step_list}
        return "rank", traces.ranks, (stated.pop() if len(stated) == 1 and None not in stated else None)
    nodes = {row.node for row in usage_rows_of(side.data(SectionId.SYSTEM_USAGE_STATISTICS))}
    return ("node", len(nodes), None) if nodes else None


def _gpu_models(side: Side) -> str | None:
    """The GPU models the run's traced ranks ran on (deviceProperties' names), None when the traces do not say."""
    models = sorted({rank.devices[i] for rank in trace_ranks_of(side.outputs.traces).values()
                     for i in rank.gpu_ids if 0 <= i < len(rank.devices)})
    return ", ".join(models) or None


def check(a: Side, b: Side, force: bool = False) -> Comparability:
    """A and B checked before any verdict (``force``: compared anyway, saying so)."""
    result = Comparability(comparable=True, forced=force)
    (kind_a, ops_a), (kind_b, ops_b) = _operators(a), _operators(b)
    if ops_a and ops_b and kind_a == kind_b:  # two vocabularies (traces vs SageMaker) are not compared
        shared = sum(min(share, ops_b.get(name, 0.0)) for name, share in ops_a.items())
        result.shared_operator_time, result.operators_from = shared, kind_a
        if shared < MIN_SHARED:
            result.reasons.append(f"their operator mix differs: the operators both ran take {shared * 100:.0f} % of "
                                  f"the top {TOP} CPU operators' time (from their {kind_a}; another model or "
                                  "training loop?)")
    if a.instance_type and b.instance_type and a.instance_type != b.instance_type:
        result.changes.append(f"instance type {a.instance_type} → {b.instance_type}")
    if a.instance_count and b.instance_count and a.instance_count != b.instance_count:
        result.changes.append(f"instance count {a.instance_count} → {b.instance_count}")
    ga, gb = _gpu_models(a), _gpu_models(b)
    if ga and gb and ga != gb:
        result.changes.append(f"GPU {ga} → {gb}")
    wa, wb = _world(a), _world(b)
    if wa and wb and wa[0] == wb[0]:
        na, nb = (wa[2], wb[2]) if wa[2] and wb[2] else (wa[1], wb[1])  # stated by both, else as counted
        if na != nb:
            result.changes.append(f"world size {na} → {nb} {wa[0]}s")
    ba, bb = a.batch(), b.batch()
    result.batch_a, result.batch_b = (ba.value if ba else None), (bb.value if bb else None)
    result.batch_from = [f"{side.label}: {known.source}" for side, known in ((a, ba), (b, bb)) if known]
    if ba and bb and ba.value != bb.value:
        result.reasons.append(f"batch size {ba.value} vs {bb.value} ({'; '.join(result.batch_from)}): a step of "
                              "each does different work, so their step times are not comparable; the time per "
                              "sample is (--force shows it)")
    result.comparable = not result.reasons
    return result
