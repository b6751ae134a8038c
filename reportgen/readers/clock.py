"""Clock jumps: records stamped far outside the time range their files were written in.

Every system-metrics file is named for the minute it was written (``<epoch>.<node>.json``) and every
framework trace for the time its last event ended (``<END_US>_<node>_...json``), so the file names
bound the job's real time range (the main run of files, see ``file_time_range_us``). A record stamped
more than ``SLACK_S`` (30 days) outside that range comes from a node whose clock jumped (an RTC reset
to 1970, a year typed wrong): it is dropped and counted. Without this, one such record stretches the 60-second window grid over years or decades
and every rule allocates per window (30 years = 16 million windows, gigabytes of memory).
Smaller jumps (an NTP step of an hour, a wrong time zone) stay inside the slack and are kept; at
worst they cost 30 days of windows (43,200, a few MB).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from reportgen.problems import ProblemLog
from reportgen.readers.tick_table import NodeSystem

if TYPE_CHECKING:  # pragma: no cover - the events table's type only: listing and span need no pandas
    import pandas as pd

# Events with a start before 1973-03-03 (1e8 s; e.g. a TF trace without its .metadata base time,
# whose times count from the process start) have no usable absolute time; they are kept in the
# table but do not move the time axis (engine.model) or bound the files' time range. A clock set to
# the 1990s (8-9 digit epoch seconds) is a real clock: the bound was 2001-09-09 (1e9 s) and such a
# job lost its time axis (a framework-only one then crashed in StepOutlier).
PLAUSIBLE_EPOCH_US = 100_000_000_000_000
# Longer than SageMaker's longest training job (28 days): real Horovod timelines start events days
# before the file that holds them (smdebug's own test data: 9.4 days).
SLACK_S = 30 * 86_400
REASON = "timestamp more than 30 days outside the files' time range (clock jump; dropped)"


def file_time_range_us(keys_us) -> tuple[int, int] | None:
    """``(first, last)`` µs of the job's main run of files.

    The agent names files by its own clock, so a jump shows in the names too: the sorted file times
    are split where no file was written for more than ``SLACK_S`` (a live job writes every minute) and
    the run holding the most files is the job. Its last minute ends 60 s after its last key."""
    keys = np.unique(np.asarray([k for k in keys_us if k >= PLAUSIBLE_EPOCH_US], dtype=np.int64))
    if not len(keys):
        return None
    cuts = np.nonzero(np.diff(keys) > SLACK_S * 1_000_000)[0] + 1
    runs = np.split(keys, cuts)
    main = max(runs, key=len)  # the first of equally long runs
    return int(main[0]), int(main[-1]) + 60_000_000


def drop_clock_outliers(nodes: dict[str, NodeSystem], events: pd.DataFrame, time_range_us: tuple[int, int] | None,
                        problems: ProblemLog) -> tuple[dict[str, NodeSystem], pd.DataFrame]:
    """Ticks and events outside the files' range +- ``SLACK_S``, dropped and counted per record."""
    if time_range_us is None:
        return nodes, events
    lo_s = time_range_us[0] / 1e6 - SLACK_S
    hi_s = time_range_us[1] / 1e6 + SLACK_S
    out = {}
    for name, ns in nodes.items():
        keep = (ns.tick_ts >= lo_s) & (ns.tick_ts <= hi_s)
        if keep.all():
            out[name] = ns
            continue
        values = ns.values
        dropped = int(np.count_nonzero(~np.isnan(values[~keep])))
        problems.add(f"system/{name}", None, REASON, dropped)
        if not keep.any():
            continue
        ticks = ns.tick_ts[keep]
        out[name] = NodeSystem(
            node=ns.node, interval_s=ns.interval_s, tick_ts=ticks, columns=ns.columns, types=ns.types,
            names=ns.names, dims=ns.dims, values=values[keep],
            first_ts=ns.first_ts if keep[0] else float(ticks[0]),
            last_ts=ns.last_ts if keep[-1] else float(ticks[-1]),
        )
    if events is not None and len(events):
        bad = clock_outliers(events["start_us"].to_numpy(), events["end_us"].to_numpy(), time_range_us)
        if bad.any():
            record_dropped_events(problems, events.loc[bad, "node_id"].astype(str).value_counts().to_dict())
            events = events.loc[~bad].reset_index(drop=True)
    return out, events


def clock_outliers(start: np.ndarray, end: np.ndarray, time_range_us: tuple[int, int]) -> np.ndarray:
    """Which events (start / end µs) lie outside the files' range +- ``SLACK_S``. Events before
    PLAUSIBLE_EPOCH_US have no absolute time (a TF trace without its base time): kept unless they
    end after the range. A per-event test, so a file's events can be filtered on their own."""
    lo_s = time_range_us[0] / 1e6 - SLACK_S
    hi_s = time_range_us[1] / 1e6 + SLACK_S
    bad = (start >= PLAUSIBLE_EPOCH_US) & ((start < lo_s * 1e6) | (end > hi_s * 1e6))
    bad |= (start < PLAUSIBLE_EPOCH_US) & (end > hi_s * 1e6)
    return bad


def record_dropped_events(problems: ProblemLog, by_node: dict[str, int]) -> None:
    """The framework events dropped as clock jumps, one problem per node in node-name order."""
    for node in sorted(by_node):
        problems.add(f"framework/{node}", None, REASON, int(by_node[node]))
