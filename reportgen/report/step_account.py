"""The step-time account on the page: one 100 % bar per rank (or training process) and the slices' table.

The same blocks for every source of an account: PyTorch / JAX / TF profiler traces (kineto.json's ranks, in the
GPU kernels and operators section) and a SageMaker job's framework events (framework-account.json, in the
framework metrics summary), so the slices read the same wherever they come from.
"""

from __future__ import annotations

from reportgen.report import charts
from reportgen.report.model import Chart, Details, Heading, Table, Text
from reportgen.trace_ranks import ACCOUNT_SLICES, TraceAccount

ACCOUNT_LABELS = {"compute": "Compute", "data_wait": "Waiting for data", "communication": "Exposed communication",
                  "host_blocked": "Host blocked on the device", "memory_management": "Memory allocation",
                  "memory_copies": "Memory copies", "compilation": "Compilation",
                  "dispatch": "Dispatch and launch overhead", "debug_checks": "Debugging checks (anomaly detection)",
                  "no_operator": "Under no operator (script's own Python)"}
NO_JS = "Chart (needs JavaScript); the numbers are in the tables of this section."
SUMMARY_LABELS = 2  # a collapsed account's summary line names this many ranks or processes


def account_blocks(accounts: dict[str, TraceAccount], *, block_id: str = "kineto-step-account", word: str = "rank",
                   how: str | None = None, labels: dict[str, str] | None = None, after: str = "",
                   collapsed: bool = False) -> list:
    """Heading, text, chart and table of the accounts (``word`` names what a label is: rank, node); ``how`` says
    what the slices are seen from, ``labels`` overrides a slice's name, ``after`` ends the text. ``collapsed``: the
    text, chart and table behind a one-line summary of the slices (where the account supports other sections'
    findings rather than leading the page: a SageMaker job's framework events)."""
    if not accounts:
        return []
    names = {**ACCOUNT_LABELS, **(labels or {})}
    used = [name for name in ACCOUNT_SLICES if any(a.slices_ms.get(name, 0.0) > 0 for a in accounts.values())]
    rows, bars = [], {}
    for label, a in accounts.items():
        per_step = a.step_ms / max(a.steps, 1)
        for name in used:
            ms = a.slices_ms.get(name, 0.0)
            rows.append([label, names[name], ms / max(a.steps, 1), 100.0 * a.share(name),
                         100.0 * a.every_step_share(name)])
        rows.append([label, "Step (all slices)", per_step, 100.0, None])
        bars[f"{word} {label}"] = {names[name]: 100.0 * a.share(name) for name in used}
    if how is None:
        view = next(iter(accounts.values()))
        how = ("what the GPU did, and why it sat idle (what the host was doing then)" if view.perspective == "device"
               else "what the training process's threads did")
    blocks = [
        Text(f"Every millisecond of every profiled step in exactly one slice, from {how}: the slices add up to the "
             "step. Compute is the useful part; everything else is time a fix can give back. “Every step” is what "
             "the median step spends there (a per-step cost); the rest of a slice falls in a few slow steps." + after),
        Chart(f"{block_id}-chart", charts.share_bars(bars, "Step time by slice (% of the profiled steps)"), NO_JS),
        Table(block_id, [word.capitalize(), "Slice", "Per step (ms)", "Of the steps' time", "Every step pays"],
              rows, ["text", "text", "num2", "pct", "pct"],
              caption="Per step: the slice's time over the profiled steps divided by their number. Of the steps' "
                      "time: its share of the steps' wall time. Every step pays: the median step's time in the "
                      "slice times the steps, as a share of the steps' time."),
    ]
    heading = Heading("Where each step's time goes", 3)
    if not collapsed:
        return [heading, *blocks]
    shown = list(accounts.items())[:SUMMARY_LABELS]
    summary = "; ".join(f"{word} {label}: " + ", ".join(f"{names[name][:1].lower()}{names[name][1:]} {100.0 * a.share(name):.1f} %"
                                                       for name in used if a.slices_ms.get(name, 0.0) > 0)
                        for label, a in shown)
    more = len(accounts) - len(shown)
    return [heading, Details(summary + (f"; {more} more {word}s" if more > 0 else "") + " (the chart and the table)",
                             blocks)]
