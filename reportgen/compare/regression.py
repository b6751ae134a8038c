"""Is NEW slower than BASE beyond the runs' own noise? The regression gate of ``compare`` and ``check --base``.

One run of a noisy job differs from the next by several percent, so a threshold on the job duration alone
flakes. The gate compares the step-time distributions of both runs instead (report.json's
``step-duration-analysis.nodes[].histogram``: StepOutlier's histogram of step durations): the ratio of the
median step times, with a bootstrap confidence interval (each run's histogram resampled 2000 times by the
Poisson bootstrap, with a fixed seed so the verdict is reproducible). The interval also spans each
histogram's bin width around its median, as a coarse histogram cannot place the median closer than that.
It trips when NEW's median step is slower by more than the threshold **and** the interval lies above 1
(the slowdown is beyond noise). Without step durations on a side it falls back to the job durations,
which carry no noise estimate, and says so; when the runs did different work (``compare.work``: B ran 2.5x A's
steps) their durations do not compare, and it cannot judge instead.

The gate fails closed: what it cannot judge (no steps and no durations, a median step of 0 s, a damaged
histogram) is a verdict of its own, ``cannot judge`` with the reason (``Regression.unjudged``), and a gate
given a threshold fails on it unless told ``--allow-unjudged`` (``Regression.gate``). Fewer than
``MIN_STEPS`` steps are still judged, by resampling the steps themselves, with a small-sample note.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, replace

from reportgen.errors import InputError
from reportgen.report.json_views import ReportJson, load_report_json
from reportgen.report.views import JobSummary, step_nodes_of
from reportgen.section_ids import SectionId

CONFIDENCE = 0.95
REPLICATES = 2000
SEED = 20261126
MIN_STEPS = 20  # fewer steps than this on a side: a small sample, judged by resampling the steps exactly, with a note
MIN_JUDGED_STEPS = 3  # fewer than this on a side: no spread to measure noise by; job durations, else cannot judge
MAX_STEP_S = 1e7  # a histogram edge beyond this many seconds (116 days) is damage, not a step
MAX_COUNT = 1e12  # steps in one bin beyond this: damage (and the bootstrap's Poisson draw cannot take it)
MAX_DURATION_S = 1e9  # a job duration beyond this (31 years) is damage
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
        if node.counts is None or node.edges is None or _histogram_problem(node.counts, node.edges):
            continue
        if sum(node.counts) > 0:
            found.append(([float(c) for c in node.counts], [float(e) for e in node.edges]))
    return found


def _histogram_problem(counts: list, edges: list) -> str:
    """Why one node's histogram cannot be gated on ("" when it can)."""
    if not 0 < len(counts) <= MAX_BINS or len(edges) != len(counts) + 1:
        return f"{len(counts)} counts and {len(edges)} edges (expected 1 to {MAX_BINS} bins and one edge more)"
    if not all(_finite(v) and 0 <= v <= MAX_COUNT for v in counts):
        return f"a step count that is not a number from 0 to {MAX_COUNT:g}"
    if not all(_finite(v) for v in edges):
        return "an edge that is not a finite number"
    negative = [lo for count, lo, hi in zip(counts, edges, edges[1:]) if count and lo < 0 and hi <= 0]
    if negative:  # empty bins below 0 are fine: numpy spans one step's histogram over its value ± 0.5 s
        return f"a negative step time (a step in the bin from {negative[0]:g} s)"
    if max(edges) > MAX_STEP_S or min(edges) < -MAX_STEP_S:
        return f"an edge of {max(edges, key=abs):g} s (beyond ±{MAX_STEP_S:g} s)"
    if any(hi < lo for lo, hi in zip(edges, edges[1:])):
        return "edges out of order"
    return ""


def histogram_problem(sections: dict) -> str:
    """Why the step-time histograms of a run's ``sections`` are damaged ("" when they are not, or absent).
    The gate judges nothing from a damaged histogram: it would compare numbers the run never measured."""
    for node in step_nodes_of((sections or {}).get(SectionId.STEP_DURATION_ANALYSIS)):
        if node.counts is None and node.edges is None:
            continue
        if node.counts is None or node.edges is None:
            return f"node {node.node}'s step histogram has no {'counts' if node.counts is None else 'edges'}"
        problem = _histogram_problem(node.counts, node.edges)
        if problem:
            return f"node {node.node}'s step histogram has {problem}"
    return ""


def load_gated_report(path, data: dict | None = None) -> dict:
    """A report.json to gate on or trend (``data``: already loaded): read as ``check`` reads it, then every
    number the gate reads checked; damage is one line, exit code 2."""
    data = load_report_json(path) if data is None else data
    problem = gated_numbers_problem(data)
    if problem:
        raise InputError(f"{path}: damaged report.json: {problem}")
    return data


def gated_numbers_problem(data: dict) -> str:
    """Why a report.json cannot be gated on or put in a trend ("" when it can): every number the regression
    gate and ``trend`` read, checked before they are read (a histogram edge of 1e308 used to end ``check
    --base`` in a traceback)."""
    report = ReportJson.of(data)
    problem = histogram_problem(report.sections)
    if problem:
        return problem
    value = report.duration_given
    if value is not None and not (_finite(value) and 0 <= value <= MAX_DURATION_S):
        return f"the job duration {value!r} is not a number of seconds from 0 to {MAX_DURATION_S:g}"
    status = report.diagnosis.status_given if report.diagnosis is not None else None
    if status is not None and not isinstance(status, str):
        return f"the diagnosis status is a {type(status).__name__}, not a text"
    return ""


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

    def mean(self) -> float:
        """The mean step time, each bin's steps at its middle (no further than half a bin from the truth)."""
        return float(_means(self.edges, [self.counts])[0])

    def widest_bin(self) -> float:
        return max(hi - lo for lo, hi in zip(self.edges, self.edges[1:]))

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


def _means(edges, counts):
    """Mean of each row of ``counts`` over the bins ``edges``, each bin's steps at its middle."""
    import numpy as np

    counts = np.asarray(counts, dtype=float)
    edges = np.asarray(edges, dtype=float)
    total = counts.sum(axis=1)
    return counts @ ((edges[:-1] + edges[1:]) / 2) / np.where(total > 0, total, 1)


@dataclass
class Regression:
    """NEW against BASE: what was compared, the ratio NEW/BASE with its interval, and the verdict."""

    basis: str  # "median step time" | "mean step time" (fewer than MIN_STEPS) | "job duration" | "nothing"
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
    unjudged: str = ""  # why it cannot judge ("" when it judged): the gate fails on it unless allowed

    def to_data(self) -> dict:
        return asdict(self)

    @classmethod
    def from_data(cls, data: dict) -> "Regression":
        return cls(**{**data, "labels": tuple(data.get("labels") or ("BASE", "NEW"))})

    def with_threshold(self, threshold: float | None) -> "Regression":
        """The same comparison judged against another allowed slowdown."""
        if self.unjudged:
            return replace(self, threshold=threshold)
        verdict, tripped = _verdict(self.basis, self.ratio, self.low, threshold)
        return replace(self, threshold=threshold, verdict=verdict, tripped=tripped)

    def gate(self, allow_unjudged: bool = False) -> str:
        """The gate's outcome: "failed" (a regression, or cannot judge and not allowed), "passed", "not
        judged" (cannot judge, allowed by ``--allow-unjudged``) or "" when no threshold was given (no gate)."""
        if self.threshold is None:
            return ""
        if self.unjudged:
            return "not judged" if allow_unjudged else "failed"
        return "failed" if self.tripped else "passed"

    def gate_message(self, allow_unjudged: bool = False) -> str:
        """The line a failed or unjudged gate prints on stderr (exit code 1 when failed)."""
        if self.unjudged:
            how = ("allowed by --allow-unjudged, exit code 0" if allow_unjudged else
                   "exit code 1; --allow-unjudged lets it pass")
            return f"--fail-on-regression cannot judge: {self.unjudged} ({how})"
        return f"--fail-on-regression tripped: {self.summary()} (exit code 1)"

    def summary(self) -> str:
        """One paragraph: what was compared, the ratio and its interval, the verdict."""
        if self.unjudged:
            return f"Regression check: cannot judge: {self.unjudged}."
        if self.ratio is None:
            return f"Regression check: {self.note}"
        change = (self.ratio - 1) * 100
        base, new = self.labels
        what = (f"{self.basis} {_secs(self.base_value_s)} ({base}, {self.base_steps} steps) → "
                f"{_secs(self.new_value_s)} ({new}, {self.new_steps} steps)" if self.basis in STEP_BASES else
                f"job duration {self.base_value_s:g} s ({base}) → {self.new_value_s:g} s ({new})")
        interval = (f", {self.confidence * 100:.0f} % interval {_pct(self.low)} to {_pct(self.high)}"
                    if self.low is not None else "")
        gate = f" with {self.threshold * 100:g} % allowed" if self.threshold is not None else ""
        words = VERDICT_WORDS[self.verdict]
        note = f" {self.note}" if self.note else ""
        return (f"Regression check on the {self.basis}: {what}; {new}/{base} = {self.ratio:.3f} "
                f"({'+' if change >= 0 else '−'}{abs(change):.1f} %{interval}){gate}: {words}.{note}")

    def markdown(self, allow_unjudged: bool = False) -> list[str]:
        """Lines for a pull-request comment (the summary plus the gate's outcome in bold)."""
        from reportgen.compare.output import md_paragraph

        gate = self.gate(allow_unjudged)
        head = {"failed": "**Regression gate: cannot judge (failed)**" if self.unjudged else
                "**Regression gate: failed**",
                "passed": "**Regression gate: passed**",
                "not judged": "**Regression gate: cannot judge (passed: --allow-unjudged)**",
                "": "**Step time against the base**"}[gate]
        return [head, "", md_paragraph(self.summary()), ""]


STEP_BASES = ("median step time", "mean step time")

VERDICT_WORDS = {
    "regression": "a regression: slower by more than the threshold, beyond the runs' noise",
    "slower within noise": "slower, but within the runs' noise (the interval includes no change)",
    "slower below the threshold": "slower beyond noise, but by no more than the threshold",
    "slower beyond noise": "slower, beyond the runs' noise",
    "slower": "slower (no noise estimate)",
    "no regression": "no regression",
    "cannot judge": "cannot judge",
}


def _verdict(basis: str, ratio: float | None, low: float | None, threshold: float | None) -> tuple[str, bool]:
    """(verdict, tripped). On steps, "beyond noise" is an interval above 1; job durations have no interval."""
    if ratio is None:
        return "cannot judge", False
    if ratio <= 1:
        return "no regression", False
    steps = basis in STEP_BASES
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
    value = JobSummary.of((sections or {}).get(SectionId.TRAINING_JOB_SUMMARY)).job_duration_s
    return float(value) if value is not None and value > 0 else None


def judge(base: dict, new: dict, threshold: float | None = None, labels: tuple[str, str] = ("BASE", "NEW"),
          different_work: str = "") -> Regression:
    """``base``/``new``: the ``sections`` of the two runs' report.json (or their reports' section data);
    ``different_work``: why the runs' job durations are different work (``compare.work.different_work``), so
    that without step times the gate cannot judge instead of comparing those durations."""
    damaged = [f"{label}'s {problem}" for label, problem in zip(labels, (histogram_problem(base), histogram_problem(new)))
               if problem]
    if damaged:  # fail closed: no fallback to the durations of a run whose step data is damaged
        result = _cannot("; ".join(damaged), threshold)
        result.labels = labels
        return result  # the reason names nodes as the data spells them: not relabelled
    result = _judge(base, new, threshold, different_work)
    result.labels = labels
    result.note = result.note.replace("BASE", labels[0]).replace("NEW", labels[1])
    result.unjudged = result.unjudged.replace("BASE", labels[0]).replace("NEW", labels[1])
    return result


def _cannot(why: str, threshold: float | None, db=None, dn=None) -> Regression:
    return Regression("nothing", None, None, None, db.median() if db else None, dn.median() if dn else None,
                      db.steps if db else None, dn.steps if dn else None, threshold, "cannot judge", False,
                      unjudged=why)


def _judge(base: dict, new: dict, threshold: float | None, different_work: str = "") -> Regression:
    db, dn = Distribution.of(base), Distribution.of(new)
    short = [f"{label} has {d.steps} step{'' if d.steps == 1 else 's'}" for label, d in (("BASE", db), ("NEW", dn))
             if d and d.steps < MIN_JUDGED_STEPS]
    if db and dn and not short:
        zero = [label for label, d in (("BASE", db), ("NEW", dn)) if d.median() <= 0 or d.mean() <= 0]
        if zero:
            return _cannot(f"the steps of {' and '.join(zero)} took 0 s (median or mean): no ratio to judge",
                           threshold, db, dn)
        return _by_steps(db, dn, threshold)
    missing = [label for label, d in (("BASE", db), ("NEW", dn)) if d is None]
    why = (f"no step durations in {' and '.join(missing)} (no StepOutlier histogram in its report.json)"
           if missing else " and ".join(short) + f" (fewer than {MIN_JUDGED_STEPS}: no spread to measure noise by)")
    if different_work:  # fail closed: durations of different work say nothing of a step's speed
        return _cannot(f"{why}, and {different_work}", threshold, db, dn)
    ba, na = _duration(base), _duration(new)
    if ba is None or na is None:
        lacking = " and ".join(label for label, d in (("BASE", ba), ("NEW", na)) if d is None)
        return _cannot(f"{why}, and no job duration in {lacking}", threshold, db, dn)
    ratio = na / ba
    verdict, tripped = _verdict("job duration", ratio, None, threshold)
    return Regression("job duration", ratio, None, None, ba, na, None, None, threshold, verdict, tripped,
                      note=f"Fell back to the job durations: {why}. A job duration carries no noise estimate, "
                           "so the threshold alone decides.")


def _by_steps(db: Distribution, dn: Distribution, threshold: float | None) -> Regression:
    """Many steps on both sides: the medians, resampled by the Poisson bootstrap (each bin's count redrawn as
    Poisson(count), the large-sample form of resampling the steps, at a cost that does not grow with the
    number of steps). Fewer than ``MIN_STEPS`` on a side (a profiler's dozen steps): the means, resampled
    step by step (a multinomial draw over the bins): the median of a dozen steps jumps between the modes of
    a bimodal run (a 12-step trace whose 4 slow steps pull its bootstrap median from 127 to 160 ms), while
    the mean uses every step and is the steps' throughput."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    small = [f"{label} {d.steps}" for label, d in (("BASE", db), ("NEW", dn)) if d.steps < MIN_STEPS]
    samples = []
    for d in (db, dn):
        counts = np.asarray(d.counts, dtype=float)
        if small:
            samples.append(_means(d.edges, rng.multinomial(d.steps, counts / counts.sum(), size=REPLICATES)))
        else:
            samples.append(_medians(d.edges, rng.poisson(counts, size=(REPLICATES, len(counts)))))
    if small:  # a mean from bin middles is no further than half the widest bin from the steps' own mean
        basis, mb, mn = "mean step time", db.mean(), dn.mean()
        rb, rn = db.widest_bin() / 2 / mb, dn.widest_bin() / 2 / mn
    else:  # the histograms' resolution: the median is not known closer than half its bin on each side
        basis, mb, mn = "median step time", db.median(), dn.median()
        rb, rn = db.median_bin_width() / 2 / mb, dn.median_bin_width() / 2 / mn
    ratios = samples[1] / np.maximum(samples[0], 1e-300)
    tail = (1 - CONFIDENCE) / 2
    low, high = (float(v) for v in np.quantile(ratios, [tail, 1 - tail]))
    low, high = low * (1 - rn) / (1 + rb), high * (1 + rn) / max(1 - rb, 1e-9)
    ratio = mn / mb
    verdict, tripped = _verdict(basis, ratio, low, threshold)
    note = (f"A small sample (steps: {', '.join(small)}; fewer than {MIN_STEPS}): the mean step time is compared, "
            "with an interval from resampling those steps; it is wide, and the profiled steps may not be the "
            "job's." if small else "")
    return Regression(basis, ratio, low, high, mb, mn, db.steps, dn.steps, threshold, verdict, tripped, note=note)
