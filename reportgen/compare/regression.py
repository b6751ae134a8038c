"""Is NEW slower than BASE beyond the runs' own noise? The regression gate of ``compare`` and ``check --base``.

One run of a noisy job differs from the next by several percent, so a threshold on the job duration alone
flakes. The gate compares the step-time distributions of both runs instead (report.json's
``step-duration-analysis.nodes[].histogram``: StepOutlier's histogram of step durations): the ratio of the
median step times, with a bootstrap confidence interval (each run's histogram resampled 2000 times by the
Poisson bootstrap, with a fixed seed so the verdict is reproducible). The interval also spans each
histogram's bin width around its median, as a coarse histogram cannot place the median closer than that.
It trips when NEW's median step is slower by more than the threshold **and** the interval lies above 1
(the slowdown is beyond noise). Without step durations on a side it falls back to the job durations,
which carry no noise estimate, and says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, replace

from reportgen.errors import InputError
from reportgen.report.views import step_nodes_of
from reportgen.section_ids import SectionId

CONFIDENCE = 0.95
REPLICATES = 2000
SEED = 20261126
MIN_STEPS = 20  # fewer steps than this on a side: its median says little; job durations are compared instead
MAX_BINS = 1000  # a node histogram with more bins is ignored (StepOutlier writes 100): bounded work on odd input
MAX_GRID = 1000  # pooled bins beyond this (many nodes with different edges) are merged onto an even grid


def parse_threshold(text: str) -> float:
    """``5%`` or ``5`` -> 0.05 (a slowdown allowed, as a fraction)."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*%?\s*", str(text or ""))
    value = float(match.group(1)) / 100 if match else None
    if value is None or not math.isfinite(value) or value > 10:
        raise InputError(f"--fail-on-regression: expected a percentage such as 5% (0 to 1000 %), not {text!r}")
    return value


def _histograms(sections: dict) -> list[tuple[list[float], list[float]]]:
    found = []
    for node in step_nodes_of((sections or {}).get(SectionId.STEP_DURATION_ANALYSIS)):
        counts, edges = node.counts, node.edges
        ok = (counts is not None and edges is not None and 0 < len(counts) <= MAX_BINS
              and len(edges) == len(counts) + 1
              and all(_finite(v) and v >= 0 for v in counts) and all(_finite(v) for v in edges)
              and all(hi >= lo for lo, hi in zip(edges, edges[1:])))
        if ok and sum(counts) > 0:
            found.append(([float(c) for c in counts], [float(e) for e in edges]))
    return found


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass
class Distribution:
    """One run's step durations, all nodes pooled on one grid (the union of their bin edges)."""

    edges: list[float]
    counts: list[float]  # steps per bin of ``edges`` (fractional where a node's bin was split)
    steps: int

    @classmethod
    def of(cls, sections: dict) -> "Distribution | None":
        hists = _histograms(sections)
        if not hists:
            return None
        import numpy as np

        grid = np.unique(np.concatenate([np.asarray(e) for _, e in hists]))
        if len(grid) > MAX_GRID + 1:  # bounded memory for the bootstrap (replicates x bins)
            grid = np.linspace(grid[0], grid[-1], MAX_GRID + 1)
        if len(grid) < 2:  # every step took the same time: one zero-width bin
            value = float(grid[0])
            grid = np.array([value, value])
        pooled = np.zeros(len(grid) - 1)
        for counts, edges in hists:
            for count, lo, hi in zip(counts, edges, edges[1:]):
                if not count:
                    continue
                if hi <= lo:  # a zero-width bin: all in the grid bin that starts there
                    pooled[min(np.searchsorted(grid, lo, side="right") - 1, len(pooled) - 1)] += count
                    continue
                a, b = np.searchsorted(grid, lo), np.searchsorted(grid, hi)
                widths = grid[a + 1:b + 1] - grid[a:b]
                pooled[a:b] += count * widths / (hi - lo)  # spread evenly over the grid bins it covers
        return cls(grid.tolist(), pooled.tolist(), int(round(sum(c for counts, _ in hists for c in counts))))

    def median(self) -> float:
        return float(_medians(self.edges, [self.counts])[0])

    def median_bin_width(self) -> float:
        """Width of the bin the median falls in (the histogram's resolution there)."""
        import numpy as np

        cum = np.cumsum(self.counts)
        i = int(min(np.searchsorted(cum, cum[-1] / 2), len(self.counts) - 1))
        return self.edges[i + 1] - self.edges[i]


def _medians(edges, counts):
    """Median of each row of ``counts`` over the bins ``edges``, interpolated linearly within its bin."""
    import numpy as np

    counts = np.asarray(counts, dtype=float)
    edges = np.asarray(edges, dtype=float)
    cum = np.cumsum(counts, axis=1)
    half = cum[:, -1] / 2
    idx = np.minimum((cum < half[:, None]).sum(axis=1), counts.shape[1] - 1)
    before = np.where(idx > 0, cum[np.arange(len(idx)), idx - 1], 0.0)
    inside = counts[np.arange(len(idx)), idx]
    frac = np.where(inside > 0, (half - before) / np.where(inside > 0, inside, 1), 0.5)
    return edges[idx] + frac * (edges[idx + 1] - edges[idx])


@dataclass
class Regression:
    """NEW against BASE: what was compared, the ratio NEW/BASE with its interval, and the verdict."""

    basis: str  # "median step time" | "job duration" | "nothing"
    ratio: float | None
    low: float | None  # the confidence interval of the ratio (None on the job-duration basis)
    high: float | None
    base_value_s: float | None  # BASE's median step (or job duration), seconds
    new_value_s: float | None
    base_steps: int | None
    new_steps: int | None
    threshold: float | None  # allowed slowdown (fraction); None: no gate
    verdict: str  # a key of VERDICT_WORDS
    tripped: bool
    note: str = ""
    confidence: float = CONFIDENCE
    labels: tuple[str, str] = ("BASE", "NEW")

    def to_data(self) -> dict:
        return asdict(self)

    @classmethod
    def from_data(cls, data: dict) -> "Regression":
        return cls(**{**data, "labels": tuple(data.get("labels") or ("BASE", "NEW"))})

    def with_threshold(self, threshold: float | None) -> "Regression":
        """The same comparison judged against another allowed slowdown."""
        verdict, tripped = _verdict(self.basis, self.ratio, self.low, threshold)
        return replace(self, threshold=threshold, verdict=verdict, tripped=tripped)

    def summary(self) -> str:
        """One paragraph: what was compared, the ratio and its interval, the verdict."""
        if self.ratio is None:
            return f"Regression check: {self.note}"
        change = (self.ratio - 1) * 100
        base, new = self.labels
        what = (f"median step time {_secs(self.base_value_s)} ({base}, {self.base_steps} steps) → "
                f"{_secs(self.new_value_s)} ({new}, {self.new_steps} steps)" if self.basis == "median step time" else
                f"job duration {self.base_value_s:g} s ({base}) → {self.new_value_s:g} s ({new})")
        interval = (f", {self.confidence * 100:.0f} % interval {_pct(self.low)} to {_pct(self.high)}"
                    if self.low is not None else "")
        gate = f" with {self.threshold * 100:g} % allowed" if self.threshold is not None else ""
        words = VERDICT_WORDS[self.verdict]
        note = f" {self.note}" if self.note else ""
        return (f"Regression check on the {self.basis}: {what}; {new}/{base} = {self.ratio:.3f} "
                f"({'+' if change >= 0 else '−'}{abs(change):.1f} %{interval}){gate}: {words}.{note}")

    def markdown(self) -> list[str]:
        """Lines for a pull-request comment (the summary plus the verdict in bold)."""
        from reportgen.compare.output import md_paragraph

        head = ("**Regression gate: failed**" if self.tripped else
                "**Regression gate: passed**" if self.threshold is not None else "**Step time against the base**")
        return [head, "", md_paragraph(self.summary()), ""]


VERDICT_WORDS = {
    "regression": "a regression: slower by more than the threshold, beyond the runs' noise",
    "slower within noise": "slower, but within the runs' noise (the interval includes no change)",
    "slower below the threshold": "slower beyond noise, but by no more than the threshold",
    "slower beyond noise": "slower, beyond the runs' noise",
    "slower": "slower (no noise estimate)",
    "no regression": "no regression",
    "unknown": "unknown",
}


def _verdict(basis: str, ratio: float | None, low: float | None, threshold: float | None) -> tuple[str, bool]:
    """(verdict, tripped). On steps, "beyond noise" is an interval above 1; job durations have no interval."""
    if ratio is None:
        return "unknown", False
    if ratio <= 1:
        return "no regression", False
    steps = basis == "median step time"
    beyond = steps and low is not None and low > 1
    if threshold is None:
        return ("slower beyond noise" if beyond else "slower within noise") if steps else "slower", False
    if ratio <= 1 + threshold:
        return ("slower below the threshold" if beyond else "no regression"), False
    if not steps:  # job durations: the threshold alone decides
        return "regression", True
    return ("regression", True) if beyond else ("slower within noise", False)


def _secs(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.3f} s"


def _pct(ratio: float | None) -> str:
    if ratio is None:
        return "?"
    change = (ratio - 1) * 100
    return f"{'+' if change >= 0 else '−'}{abs(change):.1f} %"


def _duration(sections: dict):
    value = ((sections or {}).get(SectionId.TRAINING_JOB_SUMMARY) or {}).get("job_duration_s")
    return float(value) if _finite(value) and value > 0 else None


def judge(base: dict, new: dict, threshold: float | None = None, labels: tuple[str, str] = ("BASE", "NEW")) -> Regression:
    """``base``/``new``: the ``sections`` of the two runs' report.json (or their reports' section data)."""
    result = _judge(base, new, threshold)
    result.labels = labels
    if result.note:
        result.note = result.note.replace("BASE", labels[0]).replace("NEW", labels[1])
    return result


def _judge(base: dict, new: dict, threshold: float | None) -> Regression:
    db, dn = Distribution.of(base), Distribution.of(new)
    short = [f"{label} has {d.steps} steps" for label, d in (("BASE", db), ("NEW", dn)) if d and d.steps < MIN_STEPS]
    if db and dn and not short:
        return _by_steps(db, dn, threshold)
    missing = [label for label, d in (("BASE", db), ("NEW", dn)) if d is None]
    why = (f"no step durations in {' and '.join(missing)} (no StepOutlier histogram in its report.json)"
           if missing else " and ".join(short) + f" (fewer than {MIN_STEPS})")
    ba, na = _duration(base), _duration(new)
    if ba is None or na is None:
        return Regression("nothing", None, None, None, None, None, None, None, threshold, "unknown", False,
                          note=f"{why}, and no job duration on both sides: nothing to compare.")
    ratio = na / ba
    verdict, tripped = _verdict("job duration", ratio, None, threshold)
    return Regression("job duration", ratio, None, None, ba, na, None, None, threshold, verdict, tripped,
                      note=f"Fell back to the job durations: {why}. A job duration carries no noise estimate, "
                           "so the threshold alone decides.")


def _by_steps(db: Distribution, dn: Distribution, threshold: float | None) -> Regression:
    import numpy as np

    rng = np.random.default_rng(SEED)
    mb, mn = db.median(), dn.median()
    if mb <= 0:
        return Regression("median step time", None, None, None, mb, mn, db.steps, dn.steps, threshold, "unknown",
                          False, note="BASE's median step time is zero: no ratio.")
    samples = []
    for d in (db, dn):
        # the Poisson bootstrap: each bin's count redrawn as Poisson(count), the large-sample equivalent of
        # resampling the steps with replacement, at a cost that does not grow with the number of steps
        draws = rng.poisson(np.asarray(d.counts, dtype=float), size=(REPLICATES, len(d.counts)))
        samples.append(_medians(d.edges, draws))
    ratios = samples[1] / np.maximum(samples[0], 1e-300)
    tail = (1 - CONFIDENCE) / 2
    low, high = (float(v) for v in np.quantile(ratios, [tail, 1 - tail]))
    # the histograms' resolution: the median is not known closer than half its bin on each side
    rb, rn = db.median_bin_width() / 2 / mb, dn.median_bin_width() / 2 / max(mn, 1e-300)
    low, high = low * (1 - rn) / (1 + rb), high * (1 + rn) / max(1 - rb, 1e-9)
    ratio = mn / mb
    verdict, tripped = _verdict("median step time", ratio, low, threshold)
    return Regression("median step time", ratio, low, high, mb, mn, db.steps, dn.steps, threshold, verdict, tripped)
