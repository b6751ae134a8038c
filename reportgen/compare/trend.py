"""``reportgen trend``: several runs' report.json, in the order given, as one table for a CI dashboard.

Per run: status, median step time and steps per second (from the step-time histogram report.json keeps),
GPU and CPU use (the mean over nodes of each node's p50 and p95), duration, cost, and the serious causes
the diagnosis found; each run after the first is judged against the one before it with the regression
gate (``compare.regression``), and a regression is marked. Works from report.json alone: nothing is
re-analysed. The page is standalone HTML with no script at all (a table and a bar per row), or Markdown.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from reportgen import __version__
from reportgen.compare.history import Change, History, build_history
from reportgen.compare.output import md_escape
from reportgen.compare.output_name import page_path
from reportgen.compare.regression import Distribution, Regression, judge, load_gated_report
from reportgen.compare.work import different_work, work_of_report
from reportgen.errors import InputError
from reportgen.formatting import binary_bytes
from reportgen.report.efficiency import RunEfficiency, flops_rate, mfu_text
from reportgen.report.json_views import JobCpu, ReportJson
from reportgen.report.views import JobSummary, UsageRow, usage_rows_of
from reportgen.section_ids import SectionId

DEFAULT_THRESHOLD = 0.05


@dataclass
class Run:
    label: str
    path: str
    status: str | None
    step_s: float | None  # median step time, seconds
    steps: int | None
    duration_s: float | None
    gpu_p50: float | None
    gpu_p95: float | None
    cpu_p50: float | None
    cost: float | None
    causes: list[str] = field(default_factory=list)
    against_previous: Regression | None = None
    cpu_of_command: bool = False  # cpu_p50 is the recorded command's own CPU (a shared host), as generate judges
    baseline_s: float | None = None  # the rolling baseline: median step of up to 5 runs before, not across a change
    change: Change | None = None  # a change point starts at this run (its level differs from the runs before)
    efficiency: RunEfficiency = field(default_factory=RunEfficiency)  # TFLOP/s, MFU, memory peaks of its traces

    @property
    def steps_per_s(self) -> float | None:
        return 1.0 / self.step_s if self.step_s else None

    def to_data(self) -> dict:
        return {"label": self.label, "report_json": self.path, "status": self.status, "median_step_s": self.step_s,
                "steps": self.steps, "steps_per_s": self.steps_per_s, "duration_s": self.duration_s,
                "gpu_p50_pct": self.gpu_p50, "gpu_p95_pct": self.gpu_p95, "cpu_p50_pct": self.cpu_p50,
                "cpu_of_recorded_command": self.cpu_of_command,
                "cost": self.cost, "causes": self.causes, "baseline_step_s": self.baseline_s,
                "change": asdict(self.change) if self.change else None,
                "achieved_tflops": self.efficiency.achieved_tflops, "mfu": self.efficiency.mfu,
                "memory_device": self.efficiency.memory_device,
                "peak_allocated_bytes": self.efficiency.peak_allocated_bytes,
                "peak_reserved_bytes": self.efficiency.peak_reserved_bytes,
                "memory_growth_per_step_bytes": self.efficiency.growth_per_step_bytes,
                "against_previous": self.against_previous.to_data() if self.against_previous else None}


def _number(value) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _mean_stat(rows: list[UsageRow], metric: str, stat: str) -> float | None:
    values = [_number(r.stat(stat)) for r in rows if r.metric == metric]
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def run_of(data: ReportJson | dict, label: str, path: str) -> Run:
    report = ReportJson.of(data)
    sections = report.sections
    dist = Distribution.of(sections)
    rows = usage_rows_of(sections.get(SectionId.SYSTEM_USAGE_STATISTICS))
    causes = [f.cause for f in report.findings if f.serious is not False]  # serious unless it says it is not
    duration = JobSummary.of(sections.get(SectionId.TRAINING_JOB_SUMMARY)).job_duration_s
    own = JobCpu.of_sections(sections)  # a shared host: the recorded command's own CPU, as generate and compare judge it
    return Run(label=label, path=path, status=report.status or None, step_s=dist.median() if dist else None,
               steps=dist.steps if dist else None, duration_s=duration,
               gpu_p50=_mean_stat(rows, "GPU", "p50"), gpu_p95=_mean_stat(rows, "GPU", "p95"),
               cpu_p50=own.p50 if own else _mean_stat(rows, "CPU", "p50"), cost=_number(report.cost),
               causes=causes, cpu_of_command=own is not None, efficiency=RunEfficiency.of_sections(sections))


def build_trend(reports: list[tuple[str, dict, str]], threshold: float = DEFAULT_THRESHOLD) -> list[Run]:
    """``reports``: (label, report.json data, path) in the order given; each run judged against the one before."""
    runs, previous = [], None
    for label, data, path in reports:
        run = run_of(data, label, path)
        if previous is not None:
            labels = ("previous", label)
            run.against_previous = judge(ReportJson.of(previous).sections, ReportJson.of(data).sections, threshold,
                                         labels=labels, different_work=different_work(
                                             work_of_report(previous), work_of_report(data), labels))
        runs.append(run)
        previous = data
    return runs


def with_history(runs: list[Run]) -> History:
    """The runs' history (``compare.history``): each run's rolling baseline and the change points, set on the runs."""
    history = build_history([r.step_s for r in runs], [r.label for r in runs])
    for run, baseline in zip(runs, history.baseline):
        run.baseline_s = baseline
    for change in history.changes:
        runs[change.index].change = change
    return history


def labels_for(paths: list[Path], datas: list[dict], given: list[str]) -> list[str]:
    """--label values in order, else each report's job name, else its file's folder name; made unique."""
    if given and len(given) != len(paths):
        raise InputError(f"--label given {len(given)} times for {len(paths)} reports: give one per report or none")
    labels = []
    for i, (path, data) in enumerate(zip(paths, datas)):
        name = given[i] if given else ReportJson.of(data).job_name or path.parent.name or path.stem
        labels.append(name)
    counts = {name: labels.count(name) for name in labels}
    seen: dict[str, int] = {}
    for i, name in enumerate(labels):
        if counts[name] > 1:  # the same job name (runs of one job): numbered in the order given
            seen[name] = seen.get(name, 0) + 1
            labels[i] = f"{name} #{seen[name]}"
    return labels


# ----------------------------------------------------------------------------------------- output


def _ms(seconds) -> str:
    return "—" if seconds is None else (f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.3f} s")


def _pct(value) -> str:
    return "—" if value is None else f"{value:.0f} %"


def _rate(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def _money(value) -> str:
    if value is None:
        return "—"
    return "< $0.01" if 0 < value < 0.005 else f"${value:,.2f}"


def _change(run: Run) -> str:
    reg = run.against_previous
    if reg is None:
        return "first run"
    if reg.unjudged:
        return f"cannot judge: {reg.unjudged}"
    if reg.ratio is None:
        return "not compared"
    change = (reg.ratio - 1) * 100
    interval = (f" [{(reg.low - 1) * 100:+.1f}, {(reg.high - 1) * 100:+.1f}]" if reg.low is not None else
                " (job duration)")
    mark = "REGRESSION " if reg.tripped else ""
    return f"{mark}{change:+.1f} %{interval}".replace("-", "−")


def _against_baseline(run: Run) -> str:
    if run.change is not None:
        c = run.change
        return f"CHANGE {(c.ratio - 1) * 100:+.1f} % [{(c.low - 1) * 100:+.1f}, {(c.high - 1) * 100:+.1f}]".replace("-", "−")
    if run.baseline_s is None or run.step_s is None:
        return "—"
    return f"{(run.step_s / run.baseline_s - 1) * 100:+.1f} %".replace("-", "−")


COLUMNS = ("Run", "Status", "Median step", "Steps/s", "Change vs previous (95 % interval)", "vs baseline",
           "GPU p50", "GPU p95", "CPU p50", "FLOP/s", "MFU", "Peak memory", "Duration", "Cost", "Causes")
NUMERIC = range(2, 14)  # the columns right-aligned: Median step to Cost


def _tflops(run: Run) -> str:
    value = run.efficiency.achieved_tflops
    return "—" if value is None else flops_rate(value)


def _mfu(run: Run) -> str:
    value = run.efficiency.mfu
    return "—" if value is None else mfu_text(value)


def _memory(run: Run) -> str:
    e = run.efficiency
    if e.peak_allocated_bytes is None:
        return "—"
    reserved = f" ({binary_bytes(e.peak_reserved_bytes)} reserved)" if e.peak_reserved_bytes is not None else ""
    return f"{e.memory_device} {binary_bytes(e.peak_allocated_bytes)}{reserved}"


def _cells(run: Run) -> list[str]:
    return [run.label, run.status or "—", _ms(run.step_s), _rate(run.steps_per_s), _change(run),
            _against_baseline(run), _pct(run.gpu_p50),
            _pct(run.gpu_p95), _pct(run.cpu_p50) + (" (command)" if run.cpu_of_command and run.cpu_p50 is not None
                                                    else ""), _tflops(run), _mfu(run), _memory(run),
            "—" if run.duration_s is None else f"{run.duration_s:g} s",
            _money(run.cost), ", ".join(run.causes) or "none"]


def _explain(threshold: float) -> str:
    return (f"Runs in the order given. Change: the ratio of each run's median step time to the previous run's, "
            f"with its 95 % bootstrap interval from both step-time distributions; REGRESSION marks a run slower by "
            f"more than {threshold * 100:g} % and beyond the runs' noise (job durations, without an interval, "
            f"when a run has no step durations). vs baseline: against the median of up to 5 runs before, not reaching "
            f"back across a change; CHANGE marks the first run of a new level found over the whole history (change "
            f"points, with the size of the change and its 95 % interval). GPU/CPU: the mean over nodes of each node's percentile; "
            f"\"(command)\": a recording on a shared host, the recorded command's own CPU. "
            f"FLOP/s (per rank, achieved in the profiled steps), MFU (against the GPU's dense peak) and the peak "
            f"memory allocated (the largest of any rank, on its GPUs, else its CPU; reserved: the caching "
            f"allocator's segments) come from PyTorch profiler traces recorded with FLOP counts or "
            f"profile_memory=True; — where a run's traces have none. "
            f"Causes: those the diagnosis found serious.")


def history_text(history: History | None) -> str:
    """One sentence on the history: its change points, or none, or why it cannot be judged."""
    if history is None:
        return ""
    if history.unjudged:
        return f"History: cannot judge: {history.unjudged}."
    noise = f" (run-to-run noise {history.noise * 100:.1f} %)" if history.noise is not None else ""
    if not history.changes:
        return f"History: no change point over {sum(v is not None for v in history.values)} runs{noise}."
    return f"History: change point{'s' if len(history.changes) > 1 else ''} " + "; ".join(
        c.text() for c in history.changes) + f"{noise}."


def to_markdown(runs: list[Run], threshold: float, history: History | None = None) -> str:
    regressions = [r.label for r in runs if r.against_previous and r.against_previous.tripped]
    lines = [f"## Trend of {len(runs)} runs", "",
             (f"**Regressions: {md_escape(', '.join(regressions))}**" if regressions else "**No regression.**"), "",
             *([f"**{md_escape(history_text(history))}**", ""] if history is not None else []),
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * 2 + "---:|" * 2 + "---|" * 2 + "---:|" * 8 + "---|"]
    for run in runs:
        lines.append("| " + " | ".join(md_escape(c) for c in _cells(run)) + " |")
    lines += ["", f"_{md_escape(_explain(threshold))}_", "",
              f"<sub>reportgen {__version__}</sub>", ""]
    return "\n".join(lines)


_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1b1f24}table{border-collapse:collapse}
th,td{border-bottom:1px solid #d0d7de;padding:.35rem .6rem;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}.bad{color:#b42318;font-weight:600}
.bar{display:inline-block;height:.6rem;background:#4c78a8;margin-right:.4rem;vertical-align:middle}
caption{text-align:left;margin-bottom:.5rem;color:#57606a}"""


def to_html(runs: list[Run], threshold: float, history: History | None = None) -> str:
    e = html.escape
    longest = max((r.step_s for r in runs if r.step_s), default=None)
    rows = []
    for run in runs:
        cells = _cells(run)
        out = []
        for i, text in enumerate(cells):
            cls = "num" if i in NUMERIC else ""
            if i == 4 and run.against_previous is not None and run.against_previous.tripped:
                cls += " bad"
            if i == 5 and run.change is not None and run.change.ratio > 1:
                cls += " bad"
            content = e(text)
            if i == 2 and run.step_s and longest:  # a bar per row: the step time, longest = full width
                content = f'<span class="bar" style="width:{run.step_s / longest * 8:.2f}rem"></span>{content}'
            tag = "th" if i == 0 else "td"
            scope = ' scope="row"' if i == 0 else ""
            out.append(f'<{tag}{scope} class="{cls.strip()}">{content}</{tag}>')
        rows.append("<tr>" + "".join(out) + "</tr>")
    regressions = [r.label for r in runs if r.against_previous and r.against_previous.tripped]
    verdict = (f'<p class="bad">Regressions: {e(", ".join(regressions))}</p>' if regressions
               else "<p>No regression.</p>")
    if history is not None:
        mark = ' class="bad"' if history.changes else ""
        verdict += f"<p{mark}>{e(history_text(history))}</p>"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Trend of {len(runs)} "
            f"runs</title><style>{_CSS}</style></head><body><h1>Trend of {len(runs)} runs</h1>{verdict}"
            f"<table id=\"trend\"><caption>{e(_explain(threshold))}</caption><thead><tr>"
            + "".join(f'<th scope="col">{e(c)}</th>' for c in COLUMNS) + "</tr></thead><tbody>"
            + "".join(rows) + f"</tbody></table><p><small>reportgen {e(__version__)}</small></p></body></html>\n")


def trend(paths: list[Path], output, *, fmt: str = "html", labels: list[str] | None = None,
          threshold: float = DEFAULT_THRESHOLD, json_path=None) -> tuple[list[Run], History]:
    """Read the reports (each must be a reportgen report.json), write the page (and trend.json when asked);
    the runs and their history (change points) for the gates."""
    from reportgen.output_set import OutputSet

    if fmt not in ("html", "md"):
        raise InputError(f"unknown format {fmt!r} (use html or md)")
    output = page_path(output, fmt, "trend")
    if len(paths) < 2:
        raise InputError("trend needs at least two report.json files")
    outputs = OutputSet()
    outputs.add("-o", output)
    if json_path is not None:
        outputs.add("--json", json_path)
    datas = [load_gated_report(Path(p)) for p in paths]
    names = labels_for([Path(p) for p in paths], datas, labels or [])
    runs = build_trend([(n, d, str(p)) for n, d, p in zip(names, datas, paths)], threshold)
    history = with_history(runs)
    text = to_markdown(runs, threshold, history) if fmt == "md" else to_html(runs, threshold, history)
    contents = {"-o": text}
    if json_path is not None:
        contents["--json"] = json.dumps({"threshold": threshold, "runs": [r.to_data() for r in runs],
                                         "history": history.to_data()}, indent=1, allow_nan=False)
    outputs.commit(contents)
    return runs, history

