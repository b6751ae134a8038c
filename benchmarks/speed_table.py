"""The speed table's arithmetic and Markdown (``bench_speed_table.py`` measures, this formats): kept apart so
tests/unit/test_bench_speed_table.py checks it without importing the measuring scripts."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field


def median(values: Iterable[float]) -> float | None:
    """The median of the numbers given, None for none (a measurement that did not run)."""
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b, None when either is missing or b is not positive (no ratio is better than a wrong one)."""
    if a is None or b is None or b <= 0:
        return None
    return a / b


def per_cpu_s(mb: float | None, cpu_s: float | None) -> float | None:
    """MB of text per CPU second."""
    return ratio(mb, cpu_s)


def fmt(value: float | None, digits: int = 2, suffix: str = "") -> str:
    """A number with ``digits`` decimals (one more below 0.1, so a small CPU time keeps two figures)."""
    if value is None:
        return "-"
    return f"{value:.{digits + 1 if digits and abs(value) < 0.1 else digits}f}{suffix}"


@dataclass
class Row:
    """One set's measurements: raw runs by what was measured (each a dict of wall_s, cpu_s, peak_mb), or the
    reason a measurement (or the whole set) was not made."""

    name: str
    mb: float | None = None
    files: int | None = None
    runs: dict[str, list[dict]] = field(default_factory=dict)
    why_not: dict[str, str] = field(default_factory=dict)
    load: tuple[float, float] | None = None
    notes: list[str] = field(default_factory=list)

    def med(self, what: str, key: str = "cpu_s") -> float | None:
        return median(r.get(key) for r in self.runs.get(what, []))

    def cell(self, what: str, against: tuple[str, str] | None = None, label: str = "x") -> str:
        """``CPU s / wall s / peak MB`` of a whole-process measurement, with a ratio to another's CPU or wall."""
        if what in self.why_not:
            return f"not measured: {self.why_not[what]}"
        if not self.runs.get(what):
            return "-"
        cpu, wall, peak = self.med(what), self.med(what, "wall_s"), self.med(what, "peak_mb")
        text = f"{fmt(cpu)} / {fmt(wall)} s / {fmt(peak, 0)} MB"
        if against is not None:
            other, key = against
            r = ratio(self.med(what, key), self.med(other, key))
            if r is not None:
                text += f" ({r:.2f}{label})"
        return text


HEADER = ("set", "MB of text", "floor CPU s (MB/CPU s)", "reader CPU s (MB/CPU s, x floor)",
          "generate cold: CPU s / wall / peak (x floor CPU)", "generate warm (x cold wall)",
          "compare cold", "compare warm (x cold wall)", "HTA (x generate cold CPU)",
          "analyze CPU x before analyses", "load")


def missing_row(name: str, why: str) -> Row:
    """A set that was not measured: one row saying why."""
    return Row(name=name, why_not={"set": why})


def cells(row: Row) -> list[str]:
    """The Markdown cells of one set's row (HEADER's order)."""
    if "set" in row.why_not:
        return [row.name, f"not measured: {row.why_not['set']}", *["-"] * (len(HEADER) - 2)]
    floor, reader = row.med("floor"), row.med("reader")
    floor_cell = (f"not measured: {row.why_not['floor']}" if "floor" in row.why_not
                  else f"{fmt(floor)} ({fmt(per_cpu_s(row.mb, floor), 1)})" if floor is not None else "-")
    reader_cell = (f"{fmt(reader)} ({fmt(per_cpu_s(row.mb, reader), 1)}, {fmt(ratio(reader, floor), 2, 'x')})"
                   if reader is not None else "-")
    cold = row.cell("generate-cold")
    floor_x = ratio(row.med("generate-cold"), floor)
    if floor_x is not None and "generate-cold" not in row.why_not:
        cold += f" ({floor_x:.2f}x)"
    now, before = row.med("analyze-now"), row.med("analyze-before")
    analyses = (f"not measured: {row.why_not['analyze-before']}" if "analyze-before" in row.why_not
                else f"{fmt(ratio(now, before), 2, 'x')} ({fmt(now)} / {fmt(before)} CPU s)"
                if row.runs.get("analyze-before") else "-")
    load = f"{row.load[0]:.1f}-{row.load[1]:.1f}" if row.load else "-"
    return [row.name, fmt(row.mb, 1), floor_cell, reader_cell, cold,
            row.cell("generate-warm", ("generate-cold", "wall_s")), row.cell("compare-cold"),
            row.cell("compare-warm", ("compare-cold", "wall_s")), row.cell("hta", ("generate-cold", "cpu_s")),
            analyses, load]


def markdown(rows: list[Row]) -> str:
    """The trace speed table: one line per set."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells(r)) + " |" for r in rows]
    return "\n".join(lines)


def dask_line(runs: dict[str, list[dict]], copies: int, why: str | None = None) -> str:
    """``local:2`` against one process: the ratio of the median walls (goal ≤ 0.65x on 24 ranks)."""
    if why:
        return f"`local:2` vs one process, {copies} ranks: not measured: {why}"
    single, local = (median(r["wall_s"] for r in runs.get(m, [])) for m in ("single", "local:2"))
    cpu = ratio(median(r["cpu_s"] for r in runs.get("local:2", [])), median(r["cpu_s"] for r in runs.get("single", [])))
    same = all(r.get("outputs_equal", True) for r in runs.get("local:2", []))
    return (f"`local:2` vs one process, {copies} one-file ranks: **{fmt(ratio(local, single))}x wall** "
            f"({fmt(local)} / {fmt(single)} s, medians of {len(runs.get('single', []))}), CPU {fmt(cpu)}x, "
            f"outputs {'byte-equal' if same else 'DIFFERENT'} (goal ≤ 0.65x)")
