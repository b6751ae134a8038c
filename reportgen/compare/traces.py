"""Two runs' PyTorch profiler traces side by side: steps, throughput, data loading, CPU operators, GPU kernels
and what the GPU spent each step on (kernel time, overlap of communication with compute, the exclusive step
breakdown).

The profiled steps are a sample: ``schedule(wait=1, warmup=1, active=3, repeat=2)`` profiles six steps,
usually at the start of the job. Their change between two runs need not be the job's (a run whose
workers warm up looks far better in its first steps than over the whole job), so every figure says
which share of the job it covers, and the job's duration stays the verdict. Throughput is given in
the profiled steps (steps per second = 1000 / mean step ms, per rank; ranks step together) and, for
the whole job, as the change the duration implies for the same work (same steps, same batch size).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from reportgen.compare.work import Work
from reportgen.report.model import Table, Text
from reportgen.report.util import as_dict, number
from reportgen.trace_ranks import TraceJob, TraceLoader, TraceRank, trace_ranks_of

TOP_OPERATORS = 10


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class GpuSummary:
    """The GPU side of one run's traces per profiled step, averaged over the ranks with GPU analyses
    (``traces.gpu`` in compare.json: ``as_data``)."""

    kernel_ms_per_step: float | None = None
    kernels_per_step: float | None = None
    comm_comp_overlap_pct: float | None = None
    exposed_comm_per_step_ms: float | None = None
    window_idle_pct: float | None = None
    breakdown_ms_per_step: dict[str, float] = field(default_factory=dict)  # category -> ms, in the traces' order
    kernel_ms_per_step_by_name: dict[str, float] = field(default_factory=dict)
    kernel_ms_per_step_exact: bool = False

    def as_data(self, by_name: bool = True) -> dict[str, Any]:
        """compare.json's object, in the fields' order (``by_name=False``: without the kernels by name)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if by_name or f.name != "kernel_ms_per_step_by_name"}


@dataclass(frozen=True)
class TraceSummary:
    """One run's PyTorch profiler traces in a few numbers (``summarize``; ``traces.a``/``.b`` in compare.json:
    ``as_data``). Per rank, averaged over the ranks with profiled steps."""

    ranks: int
    profiled_steps: float
    step_numbers: list[int] | None  # the first and last profiled step's number, when the steps are numbered
    profiled_s: float
    job_s: float | None
    coverage: float | None  # the share of the job's duration profiled
    mean_step_ms: float | None
    steps_per_s: float | None
    dataloader_share: float | None
    dataloader_per_step_ms: float | None
    iterators: list[str]
    collective_share: float | None
    op_ms_per_step: dict[str, float]
    op_ms_per_step_exact: bool
    gpu: GpuSummary | None

    def as_data(self) -> dict[str, Any]:
        """compare.json's object, in the fields' order."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["gpu"] = self.gpu.as_data() if self.gpu is not None else None
        return data


def summarize(doc, job_s) -> TraceSummary | None:
    """One run's traces in a few numbers (None without profiled steps)."""
    ranks = [r for r in trace_ranks_of(doc).values() if r.step_list]
    if not ranks:
        return None
    profiled_s = _mean([sum(number(s.dur_ms, 0.0) for s in r.step_list) / 1000.0 for r in ranks])
    mean_ms = _mean([number(r.step_mean_ms) for r in ranks])
    numbers = sorted({int(s.step) for r in ranks for s in r.step_list
                      if isinstance(s.step, int) and not isinstance(s.step, bool)})
    loaders = [r.dataloader or TraceLoader() for r in ranks]
    iterators = sorted({d.iterator for d in loaders if d.iterator})
    steps = _mean([len(r.step_list) for r in ranks])
    ops, ops_exact = operator_ms_per_step(doc, ranks)
    job_s = number(job_s)
    return TraceSummary(
        ranks=len(ranks),
        profiled_steps=steps,
        step_numbers=[numbers[0], numbers[-1]] if numbers else None,
        profiled_s=profiled_s,
        job_s=job_s,
        coverage=profiled_s / job_s if job_s and profiled_s is not None else None,
        mean_step_ms=mean_ms,
        steps_per_s=1000.0 / mean_ms if mean_ms else None,
        dataloader_share=_mean([number(d.step_share) for d in loaders]),
        dataloader_per_step_ms=_mean([number(d.per_step_ms) for d in loaders]),
        iterators=iterators,
        collective_share=_mean([number(r.collective_share) for r in ranks]),
        op_ms_per_step=ops,
        op_ms_per_step_exact=ops_exact,
        gpu=gpu_summary(doc, ranks),
    )


def gpu_summary(doc, ranks: list[TraceRank]) -> GpuSummary | None:
    """The GPU side of one run's traces per profiled step, averaged over the ranks with GPU analyses."""
    gpu = [r for r in ranks if r.gpu_analysis.listed]
    if not gpu:
        return None
    kernels, exact = operator_ms_per_step(doc, ranks, "kernels")

    def per_step(r, ms):
        return number(ms) / len(r.step_list) if number(ms) is not None else None

    breakdown: dict[str, float] = {}
    for r in gpu:
        for cat, ms in r.gpu_analysis.step_breakdown.total_ms.items():
            if number(ms) is not None:
                breakdown[str(cat)] = breakdown.get(str(cat), 0.0) + number(ms) / len(r.step_list) / len(gpu)
    return GpuSummary(
        kernel_ms_per_step=_mean([per_step(r, r.kernels.total_ms) for r in gpu]),
        kernels_per_step=_mean([number(r.gpu_analysis.launch.kernels_per_step) for r in gpu]),
        comm_comp_overlap_pct=_mean([number(r.gpu_analysis.overlap.comm_comp_overlap_pct) for r in gpu]),
        exposed_comm_per_step_ms=_mean([number(r.gpu_analysis.overlap.exposed_per_step_ms) for r in gpu]),
        window_idle_pct=_mean([100 * number(r.gpu.window_idle_share)
                               if number(r.gpu.window_idle_share) is not None else None for r in gpu]),
        breakdown_ms_per_step=breakdown,
        kernel_ms_per_step_by_name=kernels,
        kernel_ms_per_step_exact=exact,
    )


def operator_ms_per_step(doc, ranks: list[TraceRank], key: str = "cpu_ops") -> tuple[dict[str, float], bool]:
    """Each CPU operator's inclusive ms per profiled step of one rank, and whether that is exact
    (``key="kernels"``: each GPU kernel's, from the same tables of kernels).

    ``ranks``: kineto.json's ranks that have profiled steps. Several ranks, every one with profiled
    steps, and kineto.json's job-wide table (``job.cpu_ops.top``: every rank's every operator summed,
    so its top 15 is exact): the operator's total over all ranks ÷ the profiled steps of all ranks.
    With equal step counts on every rank (ranks step together) that is the mean over the ranks of each
    rank's ms per step.

    One rank: its own top 15 (total ÷ its steps), which is the job's. Several ranks without ``job`` (an
    older kineto.json) or with a rank that has no profiled steps (the table counts its operators, the
    divisor has no steps of it): the mean over the ranks of each rank's total ÷ its steps from each
    rank's own top 15, not exact (an operator outside a rank's top 15 counts 0 there).
    """
    job = TraceJob.of(doc)
    every_rank_stepped = len(ranks) == len(as_dict(as_dict(doc).get("ranks")))
    top = (job.kernels if key == "kernels" else job.cpu_ops).top
    ops: dict[str, float] = {}
    if (len(ranks) > 1 and every_rank_stepped and top is not None and isinstance(job.ranks, int)
            and job.ranks == len(ranks)):
        _add_ms(ops, [(row.name, row.total_ms) for row in top], sum(len(r.step_list) for r in ranks), 1)
        return ops, True
    for r in ranks:
        rows = (r.kernels if key == "kernels" else r.cpu_ops).top
        _add_ms(ops, [(op.name, op.total_ms) for op in rows], len(r.step_list), len(ranks))
    return ops, len(ranks) == 1


def _add_ms(ops: dict[str, float], rows: list[tuple], steps: int, ranks: int) -> None:
    """Adds each (name, total_ms) row's ``total_ms`` ÷ ``steps`` ÷ ``ranks`` to its operator's entry (odd rows
    skipped)."""
    for name, total in rows:
        total = number(total)
        if total is not None:
            ops[str(name)] = ops.get(str(name), 0.0) + total / steps / ranks


def _pct_change(a, b) -> float | None:
    a, b = number(a), number(b)
    return None if a is None or b is None or a == 0 else (b - a) / a * 100.0


def throughput(ta: TraceSummary | None, tb: TraceSummary | None, job_a, job_b) -> dict:
    """Steps per second in the profiled steps, and the whole job's change for the same work."""
    out = {"profiled_a": ta.steps_per_s if ta else None, "profiled_b": tb.steps_per_s if tb else None,
           "profiled_change_pct": None, "job_same_work_change_pct": None}
    out["profiled_change_pct"] = _pct_change(out["profiled_a"], out["profiled_b"])
    job_a, job_b = number(job_a), number(job_b)
    if job_a and job_b:
        out["job_same_work_change_pct"] = (job_a / job_b - 1.0) * 100.0
    return out


def _signed(value, digits=1) -> str:
    return "n/a" if value is None else f"{'+' if value > 0 else '−' if value < 0 else ''}{abs(value):.{digits}f}"


def _coverage_text(label: str, t: TraceSummary) -> str:
    numbers = t.step_numbers
    which = f" (#{numbers[0]}–#{numbers[1]})" if numbers else ""
    cover = f", {100 * t.coverage:.1f} % of its {t.job_s:.0f} s" if t.coverage is not None else ""
    return f"{label}: {t.profiled_steps:.0f} profiled steps{which}, {t.profiled_s:.2f} s{cover}"


def steps_blocks(ta: TraceSummary | None, tb: TraceSummary | None, job_a, job_b,
                 work: tuple[Work, Work] | None = None) -> tuple[list, dict]:
    """Blocks for the step-durations section and their data (``traces`` in compare.json); ``work``: A's and B's
    when the runs did different work (``compare.work``): their durations are then not set against each other."""
    same_work = work is None
    if ta is None and tb is None:
        return [], {}
    rate = throughput(ta, tb, job_a, job_b)
    blocks: list = []
    covered = "; ".join(_coverage_text(label, t) for label, t in (("A", ta), ("B", tb)) if t)
    change = _pct_change(ta.mean_step_ms if ta else None, tb.mean_step_ms if tb else None)
    job_change = _pct_change(job_a, job_b)
    if ta and tb and work is not None:
        blocks.append(Text(
            f"From the PyTorch profiler traces. {covered}. The profiled steps are a small sample of each job, "
            f"often its first steps: their mean changed by {_signed(change)} %. The runs did different work "
            f"({work[0].steps:.0f} steps in A, {work[1].steps:.0f} in B), so their job durations "
            f"({_signed(job_change)} %) do not compare: judge them per step.", tone="note"))
    elif ta and tb:
        blocks.append(Text(
            f"From the PyTorch profiler traces. {covered}. The profiled steps are a small sample of each job, "
            f"often its first steps: their mean changed by {_signed(change)} % while the job's duration changed by "
            f"{_signed(job_change)} %; judge the runs by the duration.", tone="note"))
    else:
        blocks.append(Text(f"From the PyTorch profiler traces ({covered}); the other run has none.", tone="note"))
    rows = []

    def row(title, key, fmt_pct=False, scale=1.0):
        va = None if ta is None or getattr(ta, key) is None else getattr(ta, key) * scale
        vb = None if tb is None or getattr(tb, key) is None else getattr(tb, key) * scale
        d = None if va is None or vb is None else vb - va
        rows.append([title, va, vb, None if d is None else (_signed(d, 2) if not fmt_pct else _signed(d, 1)),
                     None if fmt_pct else _signed(_pct_change(va, vb))])

    row("Ranks", "ranks")
    row("Profiled steps per rank", "profiled_steps")
    row("Profiled time per rank (s)", "profiled_s")
    row("Share of the job profiled (%)", "coverage", True, 100.0)
    row("Mean profiled step (ms)", "mean_step_ms")
    row("Throughput in the profiled steps (steps/s)", "steps_per_s")
    row("DataLoader share of step time (%)", "dataloader_share", True, 100.0)
    row("DataLoader per step (ms)", "dataloader_per_step_ms")
    row("Collective wait (% of step time)", "collective_share", True, 100.0)
    blocks.append(Table("trace-steps-compare", ["From the traces", "A", "B", "Δ (B − A)", "Δ (%)"], rows,
                        ["text", "num2", "num2", "text", "text"], row_header=True,
                        caption="Per rank, averaged over ranks; percentages in points for the Δ of shares."))
    if rate["job_same_work_change_pct"] is not None and same_work:
        blocks.append(Text(
            f"Throughput: for the same work (same number of steps and batch size), B processes "
            f"{_signed(rate['job_same_work_change_pct'])} % more steps and samples per second than A over the whole "
            f"job ({number(job_a):.0f} s → {number(job_b):.0f} s); in the profiled steps alone "
            f"{_fmt(rate['profiled_a'])} → {_fmt(rate['profiled_b'])} steps/s ({_signed(rate['profiled_change_pct'])} %).",
            tone="plain"))
    for label, t in (("A", ta), ("B", tb)):
        if t and t.iterators:
            how = ("in the training process (num_workers=0)" if "_SingleProcessDataLoaderIter" in t.iterators
                   else "by worker processes" if "_MultiProcessingDataLoaderIter" in t.iterators else "")
            if how:
                blocks.append(Text(f"{label} loads its data {how}: {', '.join(t.iterators)}."))
    if not same_work:  # compare.json: no throughput "for the same work" of runs that did different work
        rate["job_same_work_change_pct"] = None
    data = {"a": ta.as_data() if ta else None, "b": tb.as_data() if tb else None, "throughput": rate, "mean_step_change_pct": change, "job_change_pct": job_change}
    return blocks, data


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def operators_blocks(ta: TraceSummary | None, tb: TraceSummary | None) -> tuple[list, dict]:
    """The traces' top CPU operators, in ms per profiled step so runs with different step counts compare."""
    oa, ob = ta.op_ms_per_step if ta else {}, tb.op_ms_per_step if tb else {}
    if not (oa or ob):
        return [], {}
    names = sorted(set(oa) | set(ob), key=lambda n: -max(oa.get(n, 0.0), ob.get(n, 0.0)))[:TOP_OPERATORS]
    rows = [[n, oa.get(n), ob.get(n), None if n not in oa or n not in ob else _signed(ob[n] - oa[n], 2)]
            for n in names]
    several = max(ta.ranks if ta else 0, tb.ranks if tb else 0) > 1
    per_step = "ms: all ranks' time ÷ all ranks' profiled steps" if several else "ms"
    blocks = [Text("CPU operators from the PyTorch profiler traces: inclusive time per profiled step "
                   f"({per_step}), the {len(names)} most expensive in either run; empty where an operator is not "
                   f"among a run's top 15{' over all its ranks' if several else ''}.")]
    for label, t in (("A", ta), ("B", tb)):
        if t and t.op_ms_per_step and not t.op_ms_per_step_exact:
            blocks.append(Text(
                f"{label}'s operator times add up each rank's own top 15 (its kineto.json has no job-wide table: "
                "written by an older reportgen, or a rank without profiled steps), so an operator outside some "
                "rank's top 15 is undercounted there.",
                tone="note"))
    blocks.append(Table("trace-operators-compare", ["CPU operator", "A (ms/step)", "B (ms/step)", "Δ (ms/step)"],
                        rows, ["text", "num2", "num2", "text"]))
    return blocks, {"rows": [{"operator": r[0], "a_ms_per_step": r[1], "b_ms_per_step": r[2]} for r in rows]}


BREAKDOWN_NAMES = {"kernel": "compute kernels", "memcpy": "memcpy", "memset": "memset",
                   "communication": "communication (exposed)", "runtime": "CUDA runtime", "dataloader": "DataLoader",
                   "cpu_exec": "CPU operators", "other": "other"}
SAME = 0.05  # a kernel within 5 % per step is "same"


def kernels_blocks(ta: TraceSummary | None, tb: TraceSummary | None) -> tuple[list, dict]:
    """GPU kernels and GPU time per profiled step, A against B (``traces.gpu`` in compare.json)."""
    listed_a, listed_b = ta.gpu if ta else None, tb.gpu if tb else None
    if not (listed_a or listed_b):
        return [], {}
    ga, gb = listed_a or GpuSummary(), listed_b or GpuSummary()
    blocks: list = [Text("GPU kernels from the PyTorch profiler traces, per profiled step (averaged over ranks): "
                         "what the GPU spent each step on, and which kernels got faster or slower.")]
    rows = []

    def row(title, va, vb, points=False):
        va, vb = number(va), number(vb)
        rows.append([title, va, vb, None if va is None or vb is None else _signed(vb - va, 2),
                     None if points else _signed(_pct_change(va, vb))])

    row("Kernel time per step (ms)", ga.kernel_ms_per_step, gb.kernel_ms_per_step)
    row("Kernels per step", ga.kernels_per_step, gb.kernels_per_step)
    row("GPU idle in its active window (%)", ga.window_idle_pct, gb.window_idle_pct, True)
    row("Communication overlapped with compute (%)", ga.comm_comp_overlap_pct, gb.comm_comp_overlap_pct, True)
    row("Exposed communication per step (ms)", ga.exposed_comm_per_step_ms, gb.exposed_comm_per_step_ms)
    ba, bb = ga.breakdown_ms_per_step, gb.breakdown_ms_per_step
    for cat in dict.fromkeys([*ba, *bb]):
        row(f"Step time: {BREAKDOWN_NAMES.get(cat, cat)} (ms)", ba.get(cat), bb.get(cat))
    blocks.append(Table("trace-gpu-compare", ["GPU, per profiled step", "A", "B", "Δ (B − A)", "Δ (%)"], rows,
                        ["text", "num2", "num2", "text", "text"], row_header=True,
                        caption="Step time split as TensorBoard's overview does (each instant once, first category "
                                "that covers it); communication: NCCL kernels with no compute beside them; the Δ of "
                                "a percentage in points."))
    ka, kb = ga.kernel_ms_per_step_by_name, gb.kernel_ms_per_step_by_name
    names = sorted(set(ka) | set(kb), key=lambda n: -max(ka.get(n, 0.0), kb.get(n, 0.0)))[:TOP_OPERATORS]
    krows, kdata = [], []
    for n in names:
        va, vb = ka.get(n), kb.get(n)
        if va is None:
            status = "new in B's top 15"
        elif vb is None:
            status = "gone from B's top 15"
        elif vb < va * (1 - SAME):
            status = "faster"
        elif vb > va * (1 + SAME):
            status = "slower"
        else:
            status = "same"
        krows.append([n, va, vb, None if va is None or vb is None else _signed(vb - va, 2), status])
        kdata.append({"kernel": n, "a_ms_per_step": va, "b_ms_per_step": vb, "status": status})
    if krows:
        blocks.append(Table("trace-kernels-compare", ["GPU kernel", "A (ms/step)", "B (ms/step)", "Δ (ms/step)", "B vs A"],
                            krows, ["text", "num2", "num2", "text", "text"],
                            caption=f"The {len(krows)} kernels with the most time per step in either run (from each "
                                    "run's top 15 by time; a kernel outside one run's top 15 is marked as such; "
                                    f"same: within {SAME * 100:.0f} %)."))
    data = {"a": listed_a.as_data(by_name=False) if listed_a else {},
            "b": listed_b.as_data(by_name=False) if listed_b else {}, "kernels": kdata}
    return blocks, data
