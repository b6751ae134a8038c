"""GPU kernels and operators from PyTorch profiler (Kineto) traces, per rank and ranks side by side.

Built from ``kineto.json`` (written by ``reportgen.trace_analysis`` next to ``profiler-reports/``): the
view SageMaker's Profiler dashboard gave (GPU active vs idle, top kernels, activity mix, memory
operations, precision) plus the comparison of ranks that exposes a straggler.
"""

from __future__ import annotations

from reportgen.report import charts
from reportgen.formatting import exact_number
from reportgen.report.model import Chart, ChartRow, Details, Heading, Section, Shown, Table, Text
from reportgen.report.util import as_dict, as_list, number, slug
from reportgen.report.trace_flops import flops_blocks
from reportgen.report.trace_kernel_mix import kernel_mix_blocks
from reportgen.report.trace_memory import memory_blocks
from reportgen.rule_outputs import RuleOutputs
from reportgen.section_ids import SectionId
from reportgen.report.trace_facts import kernels_title
from reportgen.trace_gpu_analysis import KernelPattern
from reportgen.report.step_account import account_blocks
from reportgen.trace_ranks import (JobRow, TraceComparison, TraceGpu, TraceJob, TraceLoader,
                                   TraceRank, doc_traces_name)


def _value(value):
    """A cell of the launch table: a whole number as it is, a fraction to two decimals with its exact value kept
    (``data-value``): "65.36", not "65.35968891769281"."""
    if value is None or float(value).is_integer():
        return None if value is None else int(value)
    return Shown(f"{value:.2f}", exact_number(value))


SECTION_ID = SectionId.GPU_KERNELS_OPERATORS
DETAILED_RANKS = 8
MANY_RANKS = 16  # above: the ranks' spread leads, the one-row-per-rank table and charts are folded
NO_JS = "Chart (needs JavaScript); the numbers are in the tables of this section."


def _ms(value) -> float | None:
    return number(value)


def _rank_order(ranks: dict, straggler) -> list[str]:
    labels = list(ranks)
    if len(labels) <= DETAILED_RANKS:
        return labels
    chosen = labels[:DETAILED_RANKS]
    if straggler in ranks and straggler not in chosen:
        chosen = [straggler, *chosen[: DETAILED_RANKS - 1]]
    return chosen


def _pct(share) -> float | None:
    share = number(share)
    return None if share is None else 100.0 * share


def _ranks_table(ranks: dict[str, TraceRank]) -> Table:
    """The columns that tell the story first (steps, data loading, collective wait), GPU after."""
    rows = []
    for label, r in ranks.items():
        cycles = number(r.cycles)
        rows.append([label, int(cycles) if cycles is not None and abs(cycles) < 1e15 else None,
                     len(r.step_list), *_rank_metrics(r)])
    return Table("kineto-ranks", ["Rank", "Cycles", "Steps", "Mean step (ms)", "Max step (ms)", "DataLoader share",
                                  "DataLoader per step (ms)", "Collective wait", "GPU active (trace)",
                                  "GPU idle (active window)"],
                 rows, ["text", "int", "int", "num2", "num2", "pct", "num2", "pct", "pct", "pct"],
                 caption=("DataLoader share and collective wait: share of the profiled step time (nested events "
                          "counted once). GPU active over the whole trace; GPU idle within the window from the "
                          "first to the last GPU activity, as HTA and TensorBoard count it. Empty: not in the "
                          "trace."))


def _account_blocks(views: dict[str, TraceRank], shown: list[str]) -> list:
    """Where each step's time goes, per rank: every millisecond of the profiled steps in exactly one slice."""
    return account_blocks({label: views[label].account for label in shown if label in views and views[label].account})


IDLE_KINDS = ("host_wait", "kernel_wait", "other")  # gpu_idle's window_idle_split_ms, in the table's order


def _account_against_hta(r: TraceRank, sid: str) -> list:
    """The step-time account's GPU figures inside the steps beside HTA's over the GPU's active window, so that a
    reader can reconcile the two (docs/diagnosis.md, "The account and HTA")."""
    inside = r.account.gpu if r.account is not None else None
    if inside is None:
        return []
    window, window_idle = number(r.gpu.window_ms), number(r.gpu.window_idle_ms)
    whole = [number(r.gpu.window_idle_split_ms.get(key)) for key in IDLE_KINDS]
    rows = [["GPU busy (compute + exposed communication + memory copies)", number(inside.busy_ms),
             window - window_idle if window is not None and window_idle is not None else None],
            ["Exposed communication (of the busy time)", number(inside.exposed_communication_ms),
             number(r.gpu_analysis.overlap.exposed_ms)],
            ["GPU idle", number(inside.idle_ms), window_idle],
            ["Host wait (of the idle time)", number(inside.host_wait_ms), whole[0]],
            ["Kernel wait (of the idle time)", number(inside.kernel_wait_ms), whole[1]],
            ["Other (of the idle time)", number(inside.other_ms), whole[2]],
            ["Before the GPU's first or after its last activity (of the idle time)",
             number(inside.outside_window_ms), None]]
    return [Table(
        f"kineto-account-hta-{sid}", ["GPU time", "In the profiled steps (ms)", "HTA: the GPU's active window (ms)"],
        rows, ["text", "num2", "num2"],
        caption="The step-time account's device slices against HTA's temporal breakdown and idle split: the busy "
                "slices add up to the GPU's busy time in the steps; the idle slices, with the GPU's idle while the "
                "host was in a collective call (the account counts it as communication), to its idle time there, "
                "which splits as HTA splits the window's idle (host wait: the next operation launched only after "
                "the GPU went idle; kernel wait: under 30 µs; other). HTA's window runs from the first to the last "
                "GPU activity, not over the steps.")]


def _rank_metrics(r: TraceRank) -> list[float | None]:
    """The ranks table's measures of one rank, in the order of ``RANK_METRICS``."""
    loader = r.dataloader or TraceLoader()
    return [number(r.step_mean_ms), number(r.step_max_ms), _pct(loader.step_share), number(loader.per_step_ms),
            _pct(r.collective_share), number(r.gpu_active_pct) if r.has_gpu_activity else None,
            _pct(r.gpu_window_idle_share)]


RANK_METRICS = ("Mean step (ms)", "Max step (ms)", "DataLoader share (%)", "DataLoader per step (ms)",
                "Collective wait (% of step time)", "GPU active, trace (%)", "GPU idle, active window (%)")


def _spread_table(ranks: dict[str, TraceRank]) -> Table:
    """Many ranks in a few rows: per measure the least, the median and the most, and which ranks."""
    per_rank = {label: _rank_metrics(r) for label, r in ranks.items()}
    rows = []
    for i, name in enumerate(RANK_METRICS):
        found = sorted(((v[i], label) for label, v in per_rank.items() if v[i] is not None), key=lambda x: x[0])
        if not found:
            continue
        mid = len(found) // 2
        median = found[mid][0] if len(found) % 2 else (found[mid - 1][0] + found[mid][0]) / 2
        rows.append([name, found[0][0], str(found[0][1]), median, found[-1][0], str(found[-1][1]), len(found)])
    return Table("kineto-ranks-spread", ["Per rank", "Least", "Least at rank", "Median", "Most", "Most at rank",
                                         "Ranks"], rows,
                 ["text", "num2", "text", "num2", "num2", "text", "int"],
                 caption=(f"{len(ranks)} ranks in a few rows: for each measure of the ranks table below, the least "
                          "and the most a rank has (and which; ties: the first rank) and the median over the ranks "
                          "that have it."))


def _job_tables(job: TraceJob, n_ranks: int) -> list:
    """Kernels and CPU operators summed over every rank (``job`` in kineto.json; exact top 15)."""
    blocks: list = []
    kernels, ops = job.kernels, job.cpu_ops
    top = kernels.top or ()
    spread = ("One rank: the least and the most time one rank spent in it (among the ranks that ran it) and the "
              "rank with the most; report.json has the exact values.")
    if top:
        blocks.append(Table(
            "kineto-job-kernels", ["Kernel", "Time, all ranks (ms)", "Launches", "Mean (µs)", "Share of kernel time",
                                   "Ranks", "One rank: least – most (ms)"],
            [[_or(k.name, ""), number(k.total_ms), _or(k.count, 0), number(k.mean_us), number(k.pct), _or(k.ranks, 0),
              _spread(k)] for k in top],
            ["text", "num2", "int", "num2", "pct", "int", "text"],
            caption=(f"Top {len(top)} of {_or(kernels.distinct, len(top))} distinct kernels of all {n_ranks} ranks "
                     f"by total time (exact: every rank's every kernel summed); all kernels: "
                     f"{number(kernels.total_ms, 0.0):.2f} ms in {_or(kernels.count, 0)} launches. {spread}")))
    top_ops = ops.top or ()
    if top_ops:
        blocks.append(Table(
            "kineto-job-ops", ["CPU operator", "Time, all ranks (ms)", "Calls", "Mean (µs)", "Ranks",
                               "One rank: least – most (ms)"],
            [[_or(o.name, ""), number(o.total_ms), _or(o.count, 0), number(o.mean_us), _or(o.ranks, 0), _spread(o)]
             for o in top_ops],
            ["text", "num2", "int", "num2", "int", "text"],
            caption=(f"Top {len(top_ops)} of {_or(ops.distinct, len(top_ops))} distinct CPU operators of all "
                     f"{n_ranks} ranks by total inclusive time (exact). {spread}")))
    return blocks


def _or(value, default):
    """The job tables' value, or what the table showed when it was absent."""
    return default if value is None else value


def _spread(row: JobRow) -> str:
    least, most = number(row.min_rank_ms), number(row.max_rank_ms)
    if least is None or most is None:
        return ""
    if f"{least:.2f}" == f"{most:.2f}":
        return f"{most:.2f} on each"
    return f"{least:.2f} – {most:.2f} (rank {_or(row.max_rank, '?')})"


def _rank_summary(label: str, r: TraceRank, straggler) -> str:
    """One line for a rank's collapsed details."""
    parts = [f"Rank {label}" + (" (the straggler)" if straggler is not None and str(straggler) == label else "")]
    if number(r.step_mean_ms) is not None:
        parts.append(f"mean step {number(r.step_mean_ms):.2f} ms")
    if r.has_gpu_activity:
        parts.append(f"GPU active {number(r.gpu_active_pct, 0.0):.1f} %")
    if number(r.kernels.total_ms):
        parts.append(f"kernels {number(r.kernels.total_ms):.2f} ms")
    return ", ".join(parts)


def _gpu_idle_text(label: str, gpu: TraceGpu) -> Text | None:
    window, idle = number(gpu.window_ms), number(gpu.window_idle_ms)
    if window is None or idle is None:
        return None
    split = gpu.window_idle_split_ms
    parts = ", ".join(f"{name} {number(split.get(key), 0.0):.2f} ms" for key, name in
                      (("host_wait", "host wait"), ("kernel_wait", "kernel wait"), ("other", "other")))
    threshold = number(gpu.kernel_wait_threshold_us, 30.0)
    return Text(
        f"GPU idle two ways, rank {label}. Over the whole trace: {number(gpu.idle_ms, 0.0):.2f} ms "
        f"({100 - number(gpu.active_pct, 0.0):.1f} %), including CPU-only stretches before the first and "
        f"after the last GPU activity. Within the GPU's active window (first to last kernel, copy or memset, "
        f"{window:.2f} ms): {idle:.2f} ms ({100 * number(gpu.window_idle_share, 0.0):.1f} %) - the figure "
        f"Holistic Trace Analysis (temporal breakdown) and TensorBoard report. Split as HTA does: {parts} "
        f"(host wait: the CPU launched the next kernel only after the GPU went idle; kernel wait: a gap under "
        f"{threshold:.0f} µs between queued kernels; other: synchronisation and the rest).")


def _rank_blocks(label: str, r: TraceRank) -> list:
    blocks: list = [Heading(f"Rank {label}", 3)]
    gpu = r.gpu
    where = ""
    if r.gpu_ids and r.devices:
        names = sorted({r.devices[i] for i in r.gpu_ids if 0 <= i < len(r.devices)})
        where = f" on {', '.join(names)}" if names else ""
    span = number(r.span_ms, 0.0)
    files = r.files
    cycles = (f"{len(files)} profiling cycles: {', '.join(files[:3])}{', ...' if len(files) > 3 else ''}"
              if len(files) > 1 else str(files[0]) if files else "")
    if gpu.has_gpu_activity:
        blocks.append(Text(
            f"The trace of rank {label} ({cycles}) spans {span:.2f} ms. The GPU{where} was active "
            f"{number(gpu.active_ms, 0.0):.2f} ms ({number(gpu.active_pct, 0.0):.1f} %: union of kernels, "
            f"memory copies, memsets and syncs on every stream) and idle {number(gpu.idle_ms, 0.0):.2f} ms.",
            tone="finding" if number(gpu.active_pct, 100.0) < 50 else "plain"))
        idle_text = _gpu_idle_text(label, gpu)
        if idle_text is not None:
            blocks.append(idle_text)
    else:
        blocks.append(Text(f"The trace of rank {label} ({cycles}) spans {span:.2f} ms and holds no GPU "
                           "activity (a CPU-only run, or CUDA activities were not recorded).", tone="note"))
    loader = r.dataloader or TraceLoader()
    share = number(loader.step_share)
    if share is not None and number(loader.total_ms, 0.0) > 0:
        how = {False: "in the training process, num_workers=0", True: "by DataLoader worker processes"}.get(
            loader.workers, "")
        blocks.append(Text(
            f"Data loading (DataLoader): {number(loader.in_steps_ms, 0.0):.2f} ms of the profiled steps, "
            f"{100 * share:.1f} % of step time, {number(loader.per_step_ms, 0.0):.2f} ms per step"
            + (f", loaded {how}, iterator {loader.iterator}" if how and loader.iterator else "") + ".",
            tone="finding" if share >= 0.3 else "plain"))
    collectives = r.collectives
    if number(collectives.count, 0):
        names = ", ".join(collectives.names)
        blocks.append(Text(
            f"Collectives ({collectives.source}: {names}): in flight "
            f"{number(collectives.in_steps_ms, 0.0):.2f} ms of the profiled steps "
            f"({100 * number(collectives.step_share, 0.0):.1f} % of step time)."))
    kernels = r.kernels
    top = kernels.top
    sid = slug(label)
    if top:
        blocks.append(Table(
            f"kineto-kernels-{sid}", ["Kernel", "Time (ms)", "Launches", "Mean (µs)", "Share of kernel time"],
            [[k.name, number(k.total_ms), _or(k.count, 0), number(k.mean_us), number(k.pct)] for k in top],
            ["text", "num2", "int", "num2", "pct"],
            caption=(f"Top {len(top)} of {_or(kernels.distinct, len(top))} distinct kernels by total time; all "
                     f"kernels: {number(kernels.total_ms, 0.0):.2f} ms in {_or(kernels.count, 0)} launches")))
        blocks.append(Chart(f"kineto-kernels-chart-{sid}",
                            charts.hbar([_short(k.name) for k in top], [number(k.total_ms) for k in top],
                                        f"Top kernels of rank {label}", "Time in ms"), NO_JS))
    pies = []
    mix = {k: v for k, v in r.gpu_mix_ms.items() if number(v)}
    if mix:
        pies.append(Chart(f"kineto-gpu-mix-{sid}", charts.pie(mix, f"GPU time by activity, rank {label} (ms)"), NO_JS))
    precision = {k: v for k, v in r.precision_ms.items() if number(v)}
    if precision:
        pies.append(Chart(f"kineto-precision-{sid}", charts.pie(precision, f"Kernel time by precision, rank {label} (ms)"),
                          NO_JS))
    if mix:
        blocks.append(Table(f"kineto-gpu-mix-table-{sid}", ["GPU activity", "Time (ms)"],
                            [[k, number(v)] for k, v in mix.items()], ["text", "num2"]))
    if precision:
        blocks.append(Table(f"kineto-precision-table-{sid}", ["Precision (from kernel names)", "Kernel time (ms)"],
                            [[k, number(v)] for k, v in precision.items()], ["text", "num2"],
                            caption="Told by the kernel names (e.g. fp16/half, bf16, tf32 tensor-op GEMMs, float "
                                    "templates); 'unknown' when a name does not say."))
    if pies:
        blocks.append(ChartRow(pies))
    if r.memory_ops:
        blocks.append(Table(f"kineto-memory-{sid}", ["Memory operation", "Count", "Time (ms)", "Bytes (MB)"],
                            [[m.kind, _or(m.count, 0), number(m.total_ms), (number(m.nbytes, 0.0)) / 1e6]
                             for m in r.memory_ops],
                            ["text", "int", "num2", "num2"]))
    ops = r.cpu_ops
    if ops.top:
        blocks.append(Table(
            f"kineto-ops-{sid}", ["CPU operator", "Total time (ms)", "Calls", "Mean (µs)"],
            [[o.name, number(o.total_ms), _or(o.count, 0), number(o.mean_us)] for o in ops.top],
            ["text", "num2", "int", "num2"],
            caption=(f"Top {len(ops.top)} of {_or(ops.distinct, len(ops.top))} distinct CPU operators by total "
                     "inclusive time (a parent's time includes its children's)")))
    blocks.extend(memory_blocks(label, sid, r))
    blocks.extend(flops_blocks(label, r))
    blocks.extend(gpu_analysis_blocks(label, r))
    if r.step_list:
        blocks.append(Table(f"kineto-steps-{sid}", ["Step", "Starts at (ms into the trace)", "Duration (ms)"],
                            [[f"ProfilerStep#{s.step}", number(s.start_ms), number(s.dur_ms)]
                             for s in r.step_list[:200]], ["text", "num2", "num2"]))
    return blocks


def _short(name: str, limit: int = 80) -> str:
    name = str(name)
    return name if len(name) <= limit else name[: limit - 1] + "…"


def build(outputs: RuleOutputs) -> Section:
    doc = as_dict(getattr(outputs, "traces", None))
    section = Section(SECTION_ID, kernels_title(doc_traces_name(doc)))
    ranks = {label: as_dict(r) for label, r in as_dict(doc.get("ranks")).items()}  # as written, for report.json
    views = outputs.trace_ranks()
    if not ranks:
        return section.missing("No PyTorch profiler (Kineto) traces were given: point reportgen at a folder with "
                               "*.pt.trace.json(.gz) files to see GPU kernels and operators per rank.")
    comparison = as_dict(doc.get("comparison"))  # as written, for report.json
    n_files = len(doc.get("files") or ranks)
    formats = [str(f) for f in as_list(doc.get("formats"))]
    section.add(Text(
        f"From {n_files} {' and '.join(formats) if formats else 'PyTorch profiler'} trace file(s) of {len(ranks)} "
        + ("rank(s) (a host's profiling sessions are merged)" if formats else "rank(s) (torch writes one file per "
           "profiling cycle; a rank's cycles are merged)") + ": what each GPU ran (kernels, memory copies, memsets), how "
        "long it sat idle, how much of each step went to data loading and to waiting in collectives, which CPU "
        "operators cost most, and the ranks side by side so a straggler stands out."))
    if formats and not any(r.has_gpu_activity for r in views.values()):
        section.add(Text(
            "These JAX / TensorFlow profiles have no device plane (a CPU-only run): they cannot show GPU kernels, "
            "memory copies or GPU idle time. Steps, host operators and the input pipeline (TensorFlow's "
            "IteratorGetNext, JAX's next() seen by the Python tracer) come from the host plane.", tone="note"))
    section.add(Heading("Ranks side by side", 3))
    c = TraceComparison.of(doc)
    straggler = c.straggler
    if straggler is not None and c.method == "collective wait":
        evidence = "; ".join(str(e) for e in c.evidence)
        section.add(Text(
            f"Rank {straggler} is the straggler: {c.reason or ''}. The other ranks wait for it in the "
            f"collectives: {evidence}. In synchronous training the step times are equal on all ranks, so the "
            "wait is what shows it.", tone="finding"))
    elif straggler is not None:
        section.add(Text(
            f"Rank {straggler} is a straggler: its mean step takes {number(c.slowest_excess_pct, 0.0):.1f} % "
            f"longer than the median of the ranks ({number(c.median_step_ms, 0.0):.2f} ms). In a "
            "synchronous job every other rank waits for it.", tone="finding"))
    elif c.method == "collective wait":
        section.add(Text(
            f"No straggler: the ranks wait about equally in collectives (least: rank {c.least_wait_rank}, "
            f"{100 * number(c.its_wait_share, 0.0):.1f} % of step time; the others' median "
            f"{100 * number(c.others_median_wait_share, 0.0):.1f} %; threshold "
            f"{number(c.wait_gap_pct, 10.0):.0f} points).", tone="ok"))
    elif c.method == "not compared":
        section.add(Text(f"Ranks not compared: {c.why or ''}.", tone="note"))
    elif c.slowest is not None:
        section.add(Text(
            f"No straggler: the slowest rank ({c.slowest}) is "
            f"{number(c.slowest_excess_pct, 0.0):.1f} % above the median mean step time "
            f"(threshold {number(c.margin_pct, 5.0):.0f} %).", tone="ok"))
    many = len(ranks) > MANY_RANKS
    if many:
        section.add(_spread_table(views), Details(f"All {len(ranks)} ranks, one row each", [_ranks_table(views)]))
    else:
        section.add(_ranks_table(views))
    section.add(*_account_blocks(views, _rank_order(ranks, straggler)))
    job = as_dict(doc.get("job"))  # as written, for report.json
    if len(ranks) > 1 and job:
        section.add(Heading(f"Whole job: kernels and CPU operators over all {len(ranks)} ranks", 3))
        section.add(*_job_tables(TraceJob.of(doc), len(ranks)))
    means = {label: number(r.step_mean_ms) for label, r in views.items()}
    means = {k: v for k, v in means.items() if v is not None}
    waits = {label: _pct(r.collective_share) for label, r in views.items()}
    waits = {k: v for k, v in waits.items() if v is not None}
    per_rank_charts = []
    if len(waits) >= 2:  # equal step times hide a straggler; the wait in collectives shows it
        per_rank_charts.append(Chart("kineto-wait-by-rank", charts.hbar(
            [f"rank {k}" for k in waits], list(waits.values()), "Collective wait per rank (% of profiled step time)",
            "%"), NO_JS))
    if len(means) >= 2:
        per_rank_charts.append(Chart("kineto-step-by-rank", charts.hbar(
            [f"rank {k}" for k in means], list(means.values()), "Mean step time per rank", "ms"), NO_JS))
    if many and per_rank_charts:  # a bar per rank: tall; on demand
        section.add(Details(f"Collective wait and mean step time of all {len(ranks)} ranks (charts)", per_rank_charts))
    else:
        section.add(*per_rank_charts)
    shown = _rank_order(ranks, straggler)
    hists = {}
    for label in shown:  # one overlaid histogram per rank is readable for a few ranks only
        h = views[str(label)].step_hist
        if h is not None:
            hists[f"rank {label}"] = (list(h.counts), list(h.edges))
    if hists:
        title = "Step-time distribution (ProfilerStep#N)" + (
            f", {len(hists)} of {len(ranks)} ranks" if len(shown) < len(ranks) else "")
        section.add(Chart("kineto-step-hist", charts.histograms(hists, title, "Step duration in ms"), NO_JS))
    if len(shown) < len(ranks):
        section.add(Text(f"Details follow for {len(shown)} of {len(ranks)} ranks (the straggler, if any, first); "
                         "report.json holds every rank.", tone="note"))
    for label in shown:
        blocks = _rank_blocks(str(label), views[str(label)])
        if len(ranks) > 1:  # the ranks table and the job-wide tables lead; each rank's detail on demand
            section.add(Details(_rank_summary(str(label), views[str(label)], straggler), blocks[1:]))
        else:
            section.add(*blocks)
    section.data = {"comparison": comparison, "ranks": ranks, **({"job": job} if job else {})}
    return section


CRITICAL_PATH_LABELS = {"cpu_bound": "CPU", "gpu_compute_bound": "GPU compute",
                        "gpu_communication_bound": "GPU communication",
                        "gpu_kernel_kernel_overhead": "gaps between kernels",
                        "gpu_kernel_launch_overhead": "kernel launch (call start to kernel start)"}
SPLIT_ORDER = ("compute only", "compute + communication", "compute + memory", "compute + communication + memory",
               "communication only", "communication + memory", "memory only")
BREAKDOWN_LABELS = {"kernel": "Kernel (compute)", "memcpy": "Memcpy", "memset": "Memset",
                    "communication": "Communication", "runtime": "CUDA runtime", "dataloader": "DataLoader",
                    "cpu_exec": "CPU operators", "other": "Other"}


def _sequence(pattern: KernelPattern, shown: int = 3) -> str:
    """The first kernels of a sequence, short, and how many more."""
    names = [_short(n, 40) for n in pattern.kernels]
    length = number(pattern.length, len(names)) or 0
    more = int(length) - min(len(names), shown)
    return " → ".join(names[:shown]) + (f" … (+{more})" if more > 0 else "")


def _percent_of(row: dict, keys) -> dict:
    total = sum(number(row.get(k), 0.0) for k in keys)
    return {BREAKDOWN_LABELS.get(k, k): 100.0 * number(row.get(k), 0.0) / total for k in keys} if total > 0 else {}


def gpu_analysis_blocks(label: str, r: TraceRank) -> list:
    """What HTA and TensorBoard show for one rank (``gpu_analysis`` in kineto.json): overlap, the
    overlap-aware kernel split, the exclusive step breakdown, launch statistics, kernel durations, copies,
    tensor cores, host syncs."""
    ga = r.gpu_analysis
    if not ga.listed:
        return []
    sid = slug(label)
    blocks: list = [Heading(f"Rank {label}: what HTA and TensorBoard show", 4)]
    overlap = ga.overlap
    if number(overlap.communication_ms, 0.0) > 0:
        blocks.append(Text(
            f"Communication-computation overlap: {number(overlap.comm_comp_overlap_pct, 0.0):.1f} % of the "
            f"{number(overlap.communication_ms, 0.0):.2f} ms of communication kernels ran beside compute "
            f"kernels (HTA's comm_comp_overlap); exposed, with no compute beside it: "
            f"{number(overlap.exposed_per_step_ms, 0.0):.2f} ms per step "
            f"({100 * number(overlap.exposed_step_share, 0.0):.1f} % of step time).",
            tone="finding" if number(overlap.exposed_step_share, 0.0) >= 0.1 else "plain"))
    split = ga.kernel_type_split_ms
    busy = sum(number(v, 0.0) for v in split.values())
    if busy > 0:
        blocks.append(Table(
            f"kineto-kernel-split-{sid}", ["GPU busy with", "Time (ms)", "Share of busy time"],
            [[kind, number(split.get(kind), 0.0), 100.0 * number(split.get(kind), 0.0) / busy] for kind in SPLIT_ORDER
             if number(split.get(kind), 0.0) > 0],
            ["text", "num2", "pct"],
            caption="Overlap-aware: each instant the GPU was busy counted once, by what ran at once on any stream "
                    "(memory = memcpy and memset)."))
    cats = list(ga.step_breakdown.categories)
    steps = ga.step_breakdown.steps
    if steps and cats:
        blocks.append(Table(
            f"kineto-step-breakdown-{sid}", ["Step", *[BREAKDOWN_LABELS.get(c, c) + " (ms)" for c in cats]],
            [[f"ProfilerStep#{s.step}", *[number(s.ms.get(c), 0.0) for c in cats]] for s in steps[:50]],
            ["text", *["num2"] * len(cats)],
            caption="Step time split the way TensorBoard's overview splits it: each instant of a step counted once, "
                    "in the first of these categories that covers it (communication: NCCL kernels without compute "
                    "beside them, and CPU-side collectives)."))
        rows = {f"step {s.step}": _percent_of(s.ms, cats) for s in steps[:20]}
        rows = {k: v for k, v in rows.items() if v}
        if rows:
            blocks.append(Chart(f"kineto-step-breakdown-chart-{sid}",
                                charts.share_bars(rows, f"Step time by category, rank {label} (%)"), NO_JS))
    launch = ga.launch
    if number(launch.kernels, 0):
        delay = launch.launch_delay_us
        blocks.append(Table(
            f"kineto-launch-{sid}", ["Kernel launches", "Value"],
            [["kernels per step", _value(number(launch.kernels_per_step))],
             ["kernels shorter than their launch call", _value(number(launch.shorter_than_launch))],
             ["... share of kernels with a known launch (%)",
              _value(100 * number(launch.shorter_than_launch_share, 0.0))],
             ["median kernel (µs)", _value(number(launch.kernel_p50_us))],
             ["median launch call (µs)", _value(number(launch.launch_p50_us))],
             [f"runtime calls over {number(launch.runtime_cutoff_us, 50.0):.0f} µs",
              _value(number(launch.runtime_over_cutoff))],
             ["launch delay p50 / p95 / max (µs)",
              " / ".join(f"{number(delay.get(k), 0.0):.1f}" for k in ("p50", "p95", "max")) if delay else "-"],
             [f"launch delays over {number(launch.launch_delay_cutoff_us, 100.0):.0f} µs",
              _value(number(launch.launch_delay_over_cutoff))]],
            ["text", "text"],
            caption="HTA's CUDA kernel launch statistics: a kernel is matched to the runtime call that launched it "
                    "by correlation id; launch delay = kernel start - launch call start."))
    top = [k for k in r.kernels.top if k.durations]
    if top:
        blocks.append(Table(
            f"kineto-kernel-durations-{sid}", ["Kernel", "Launches", "Min (µs)", "Median (µs)", "Max (µs)", "Std (µs)"],
            [[_short(k.name), _or(k.count, 0), number(k.min_us), number(k.p50_us), number(k.max_us), number(k.std_us)]
             for k in top],
            ["text", "int", "num2", "num2", "num2", "num2"],
            caption="Duration distribution of the top kernels (population std; HTA shows pandas' sample std)."))
        stats = {f"#{i + 1}": {"p25": number(k.p25_us), "p50": number(k.p50_us), "p75": number(k.p75_us),
                               "lower": number(k.min_us), "upper": number(k.max_us)} for i, k in enumerate(top[:10])}
        blocks.append(Chart(f"kineto-kernel-durations-chart-{sid}",
                            charts.boxes(stats, f"Kernel durations, rank {label} (top kernels by time, min to max)",
                                         "µs"), NO_JS))
    queues = ga.queue_length
    if queues:
        blocks.append(Table(
            f"kineto-queue-{sid}", ["Stream", "Changes", "Mean", "Median", "Max"],
            [[f"stream {k}", _or(v.changes, 0), number(v.mean), number(v.p50), number(v.max)]
             for k, v in list(queues.items())[:16]],
            ["text", "int", "num2", "num2", "num2"],
            caption="Queue length per stream (HTA): operations launched by the host and not yet started on the GPU, "
                    "over its values at each change. A queue that stays near 0 is a GPU waiting for the host."))
    over = ga.queue_over_step
    if over.streams:
        blocks.append(Table(
            f"kineto-queue-step-{sid}", ["Stream", "Changes", "Mean (time-weighted)", "Max", "Nothing queued"],
            [[f"stream {k}", _or(v.changes, 0), number(v.mean), number(v.max), 100 * number(v.empty_share, 0.0)]
             for k, v in over.streams.items()],
            ["text", "int", "num2", "num2", "pct"],
            caption=f"Queue length over ProfilerStep#{over.step} ({number(over.step_ms, 0.0):.2f} ms, "
                    "the median step): the mean over the step's time, its maximum, and the share of the step with "
                    "nothing launched and waiting on the stream (the GPU can only wait for the host then)."))
        width = number(over.bin_ms, 0.0) or 0.0
        lines = {f"stream {k}": [number(b) for b in v.bin_max] for k, v in over.streams.items()}
        n = max((len(v) for v in lines.values()), default=0)
        if n and width > 0:
            blocks.append(Chart(f"kineto-queue-step-chart-{sid}", charts.steps_lines(
                [i * width for i in range(n)], lines, f"Queue length over ProfilerStep#{over.step}, rank {label} "
                f"(maximum per {width:.2f} ms)", "ms since the step's start", "operations queued"), NO_JS))
    streams = ga.idle_per_stream
    if streams:
        blocks.append(Table(
            f"kineto-idle-streams-{sid}", ["Stream", "Operations", "Busy (ms)", "Idle (ms)", "Host wait (ms)",
                                           "Kernel wait (ms)", "Other (ms)"],
            [[f"stream {k}", _or(v.operations, 0), number(v.busy_ms), number(v.idle_ms), number(v.host_wait_ms),
              number(v.kernel_wait_ms), number(v.other_ms)] for k, v in list(streams.items())[:16]],
            ["text", "int", "num2", "num2", "num2", "num2", "num2"],
            caption="Idle time per stream (HTA's idle time breakdown): each gap between two operations of a stream; "
                    "host wait when the next one was launched only after the stream went idle, kernel wait under "
                    "30 µs, other (events, synchronisation) the rest. A stream idle while another works counts here."))
    blocks += _account_against_hta(r, sid)
    blocks += kernel_mix_blocks(r, sid)
    path = ga.critical_path
    if number(path.path_ms, 0.0) > 0 and path.by_ms:
        blocks.append(Table(
            f"kineto-critical-path-{sid}", ["On the critical path", "Time (ms)", "Share of the path"],
            [[CRITICAL_PATH_LABELS.get(c, c), number(v, 0.0), 100.0 * number(path.shares.get(c), 0.0)]
             for c, v in path.by_ms.items()],
            ["text", "num2", "pct"],
            caption=f"Critical path of ProfilerStep#{path.step} ({number(path.step_ms, 0.0):.2f} ms, "
                    f"the median step; path {number(path.path_ms, 0.0):.2f} ms), summarised as HTA does: the "
                    "chain of CPU work, launches and GPU work that the step's end waited for."))
    patterns = ga.kernel_patterns
    if patterns:
        blocks.append(Table(
            f"kineto-kernel-patterns-{sid}", ["Operator", "Kernels (in GPU order)", "Count", "GPU (ms)", "CPU (ms)"],
            [[_short(p.operator, 60), _sequence(p), _or(p.count, 0), number(p.gpu_ms), number(p.cpu_ms)]
             for p in patterns[:5]],
            ["text", "text", "int", "num2", "num2"],
            caption="The 5 most frequent CUDA kernel sequences per top-level operator (HTA's frequent patterns; "
                    "report.json has 10): an "
                    "operator's GPU work, in the order it ran; repeated sequences are what CUDA graphs or "
                    "torch.compile can fuse. Count, and the GPU and CPU time of all of them."))
    if ga.memcpy:
        blocks.append(Table(
            f"kineto-memcpy-bandwidth-{sid}", ["Copy", "Host memory", "Count", "MB", "Time (ms)", "GB/s"],
            [[m.kind, m.host_memory, _or(m.count, 0), number(m.nbytes, 0.0) / 1e6, number(m.time_ms),
              number(m.gb_per_s)] for m in ga.memcpy],
            ["text", "text", "int", "num2", "num2", "num2"]))
    tc = ga.tensor_cores
    if number(tc.compute_kernel_ms, 0.0) > 0:
        cc = number(tc.compute_capability)
        blocks.append(Text(
            f"Tensor cores: {100 * number(tc.eligible_share, 0.0):.1f} % of compute kernel time is fp32 "
            f"GEMM/convolution (eligible for tensor cores with TF32 or mixed precision), "
            f"{number(tc.tensor_core_gemm_conv_ms, 0.0):.2f} ms runs in tensor-core precisions; device "
            + (f"compute capability {cc:.1f} ({'with' if tc.has_tensor_cores else 'without'} tensor cores)."
               if cc is not None else "capability unknown (no deviceProperties).")))
    sync = ga.sync
    if number(sync.calls, 0):
        ops = "; ".join(f"{name} ×{count}" for name, count in list(sync.by_operator.items())[:3])
        blocks.append(Text(
            f"Host synchronisations: {sync.calls} blocking calls ({ops}), "
            + (f"{number(sync.per_step, 0.0):.1f} per step, " if sync.per_step is not None else "")
            + f"the host blocked {number(sync.blocked_ms, 0.0):.2f} ms; the GPU sat idle "
            f"{number(sync.idle_after_ms, 0.0):.2f} ms after them "
            f"({number(sync.idle_after_beyond_one_per_step_ms, 0.0):.2f} ms beyond one per step)."))
    return blocks
