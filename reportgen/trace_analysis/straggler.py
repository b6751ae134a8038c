"""Which rank holds the others back.

In synchronous data-parallel training every rank meets the others in each collective
(all-reduce of the gradients), so step times come out equal on all ranks and cannot show a slow
one. What differs is how long each rank *waits* in the collectives: the fast ranks arrive early
and wait; the slow rank arrives last and hardly waits. So, as Holistic Trace Analysis does, the
straggler is the rank with the least collective wait, when the other ranks wait clearly longer:
their median wait exceeds its wait by more than ``WAIT_GAP`` of the profiled step time.

Without collectives in the traces (no ``torch.distributed``, or ranks profiled separately), the
rank with the largest mean step time is a straggler when that mean is more than
``STEP_MARGIN`` above the median of the ranks' means - only when the ranks ran at the same time:
processes whose profiled time ranges do not overlap are separate runs (a folder reused by several
runs), never compared.
"""

from __future__ import annotations

import numpy as np

WAIT_GAP = 0.10  # of the profiled step time
STEP_MARGIN = 0.05


def _per_step(rank: dict, total_ms) -> float | None:
    steps = len(rank.get("steps") or [])
    return total_ms / steps if steps and isinstance(total_ms, (int, float)) else None


# Operators that only wrap others or wait for the other ranks: their difference is not a reason.
_WRAPPERS = ("ProfilerStep", "enumerate(DataLoader)", "DataLoader", "c10d::", "gloo:", "nccl:", "record_param_comms")


def _operator_gaps(label: str, ranks: dict, others: list[str]) -> list[tuple[float, str, float, float]]:
    """(extra ms per step, operator, its ms per step, the others' median) for the CPU operators on which the
    straggler spends clearly longer per step than the other ranks, largest first."""
    def per_op(rank):
        top = (rank.get("cpu_ops") or {}).get("top") or []
        out = {}
        for op in top:
            name, total = op.get("name"), op.get("total_ms")
            if isinstance(name, str) and not name.startswith(_WRAPPERS) and (ms := _per_step(rank, total)) is not None:
                out[name] = ms
        return out

    mine, theirs = per_op(ranks[label]), [per_op(ranks[o]) for o in others]
    gaps = []
    for name, ms in mine.items():
        their = [t[name] for t in theirs if name in t]
        if len(their) != len(theirs) or not their:
            continue  # not in every other rank's top list: its time there is unknown
        median = float(np.median(their))
        if ms - median >= 1.0 and ms > 1.2 * median:
            gaps.append((ms - median, name, ms, median))
    return sorted(gaps, reverse=True)


def _why(label: str, ranks: dict, others: list[str]) -> str:
    """What the straggler spends longer on than the others (from what the traces measured): its data
    loading or the CPU operators whose time per step differs most, with both sides' numbers."""
    where = f"the other rank{'s' if len(others) > 1 else ''}"
    candidates = []
    mine_ms = (ranks[label].get("dataloader") or {}).get("per_step_ms")
    their_ms = [(ranks[o].get("dataloader") or {}).get("per_step_ms") for o in others]
    their_ms = [t for t in their_ms if t is not None]
    if mine_ms is not None and their_ms:
        median = float(np.median(their_ms))
        if mine_ms > 1.2 * median and mine_ms - median >= 1.0:
            candidates.append((mine_ms - median, f"its data loading takes {mine_ms:.0f} ms per step against "
                                                 f"{median:.0f} ms on {where}"))
    gaps = _operator_gaps(label, ranks, others)
    if gaps:
        named = "; ".join(f"{name} {ms:.0f} ms per step against {median:.0f} ms" for _, name, ms, median in gaps[:2])
        candidates.append((gaps[0][0], f"its CPU operators take longer than on {where}: {named}"))
    if candidates:
        return max(candidates)[1]
    return "it reaches the collectives last: its work between them takes longer"


def find_straggler(ranks: dict[str, dict]) -> dict:
    """``comparison`` of kineto.json: the straggler (or None), how it was told, and the figures."""
    means = {label: r["step_stats_ms"]["mean"] for label, r in ranks.items() if r.get("step_stats_ms")}
    out = {"ranks": len(ranks), "ranks_with_steps": len(means), "straggler": None, "median_step_ms": None,
           "slowest": None, "slowest_excess_pct": None, "margin_pct": STEP_MARGIN * 100, "method": None,
           "collective_wait_ms": {}, "wait_gap_pct": WAIT_GAP * 100, "detail": None}
    if len(means) >= 2:
        median = float(np.median(list(means.values())))
        slowest = max(means, key=lambda label: means[label])
        excess = 100.0 * (means[slowest] / median - 1.0) if median else 0.0
        out.update(median_step_ms=median, slowest=slowest, slowest_excess_pct=excess)
    if len(means) >= 2 and not _concurrent([ranks[label] for label in means]):
        out["method"] = "not compared"
        out["detail"] = {"why": f"the traces come from {len(means)} processes that ran at different times "
                                "(separate runs, e.g. a reused trace folder): their steps are not compared"}
        out["slowest"] = out["slowest_excess_pct"] = out["median_step_ms"] = None
        return out
    waits = {label: _wait(r) for label, r in ranks.items() if _wait(r) is not None}
    out["collective_wait_ms"] = {label: w["in_steps_ms"] for label, w in waits.items()}
    if len(waits) >= 2:
        out["method"] = "collective wait"
        least = min(waits, key=lambda label: (waits[label]["step_share"], label))
        others = [label for label in waits if label != least]
        median_share = float(np.median([waits[o]["step_share"] for o in others]))
        gap = median_share - waits[least]["step_share"]
        out["detail"] = {"rank": least, "its_wait_share": waits[least]["step_share"],
                         "others_median_wait_share": median_share,
                         "its_wait_ms": waits[least]["in_steps_ms"],
                         "others_median_wait_ms": float(np.median([waits[o]["in_steps_ms"] for o in others])),
                         "source": waits[least].get("source"), "names": waits[least].get("names", [])}
        if gap > WAIT_GAP:
            out["straggler"] = least
            out["reason"] = _why(least, ranks, others)
            out["evidence"] = [
                f"rank {o} waits {waits[o]['in_steps_ms']:.0f} ms of its {_step_total(ranks[o]):.0f} ms of profiled "
                f"{'steps' if ranks[o].get('steps') else 'time'} in collectives, {100 * waits[o]['step_share']:.0f} %: {', '.join(waits[o].get('names') or [])}"
                for o in others[:3]] + [
                f"rank {least} waits only {waits[least]['in_steps_ms']:.0f} ms, "
                f"{100 * waits[least]['step_share']:.0f} % of its profiled steps"]
        return out
    if len(means) >= 2:
        out["method"] = "step time"
        if out["slowest_excess_pct"] > STEP_MARGIN * 100:
            out["straggler"] = out["slowest"]
            out["reason"] = (f"its mean step takes {out['slowest_excess_pct']:.1f} % longer than the median of the "
                             f"ranks ({out['median_step_ms']:.1f} ms)")
            out["evidence"] = [f"mean step {means[out['slowest']]:.1f} ms against a median of "
                               f"{out['median_step_ms']:.1f} ms over {len(means)} ranks"]
    return out


def _wait(rank: dict) -> dict | None:
    """A rank's collective wait with ``step_share`` and ``in_steps_ms``; without ProfilerStep annotations,
    over the whole traced span instead (None without collectives)."""
    wait = rank.get("collectives") or {}
    if not wait.get("count"):
        return None
    if wait.get("step_share") is not None:
        return wait
    span = rank.get("span_ms")
    if not isinstance(span, (int, float)) or span <= 0:
        return None
    return {**wait, "step_share": min(wait.get("wait_ms", 0.0) / span, 1.0), "in_steps_ms": wait.get("wait_ms", 0.0)}


def _concurrent(ranks: list[dict]) -> bool:
    """Whether every rank's profiled time range overlaps the others' (one job's ranks run together)."""
    spans = [(r.get("start_us"), r.get("end_us")) for r in ranks]
    if any(not isinstance(s, (int, float)) or not isinstance(e, (int, float)) for s, e in spans):
        return True  # unknown: assume one job
    return max(s for s, _ in spans) < min(e for _, e in spans)


def _step_total(rank: dict) -> float:
    if not rank.get("steps"):
        return float(rank.get("span_ms") or 0.0)
    return float(sum(s.get("dur_ms", 0.0) for s in rank.get("steps") or []))
