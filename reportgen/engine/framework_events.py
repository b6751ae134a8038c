"""The framework events as the rules read them, reduced per trace file and merged exactly.

The rules need three things of the framework traces, none of which is the whole event table:

* a few **kinds of rows**, one by one (``KEY_ROWS``): the training / evaluation steps (name with
  ``Step:ModeKeys``: StepOutlier, MaxInitializationTime, the timeline), the dataloader's events
  (Dataloader, the timeline) and the training-step phases with a step number (the "others" time of
  OverallFrameworkMetrics). A few per step and worker, not per operator;
* **duration sums per (phase, file type, name)** with the place of each group's first event
  (``groups``): every figure of the time breakdown (``engine.breakdown``) is a sum of durations
  over groups, and the order of its dictionaries is the order in which the keys first appear in
  the start-sorted table. Durations are int64 µs, so sums are exact in any order; the first
  appearance is the smallest (start, file, row) of the group, also exact in any order;
* the **events active at given instants / overlapping given intervals** (the correlations of
  CPUBottleneck, IOBottleneck and StepOutlier), which are only known after the system metrics and
  the steps were analysed: the per-file ``times`` columns (start, end, group code, node code; 24 bytes
  per event) are kept aside (``EventStore``: in memory, or spilled to a temporary folder) and answer
  those questions with the same group sums; with the node, they are also the step-time account's
  input (``node_events``, ``engine.framework_trace``).

``summarize_file`` is the per-file reduction (it runs where the files are read: in this process on
runs of consecutive files read together, ``readers.framework.reduce_framework``, which reduce to what
their files' summaries merged give; on a Dask worker file by file) and applies the clock-jump filter of
``readers.clock`` to the events; ``merge_summaries`` merges the files in file order into ``FrameworkEvents``. The key rows are
merged with the reader's own ``table_of_files``, so they are the rows, order and categories the
full event table gives. ``FrameworkEvents.from_table`` builds the same from a full table (tests,
notebooks): both paths give the same rule outputs byte for byte.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reportgen.readers.clock import PLAUSIBLE_EPOCH_US, clock_outliers
from reportgen.readers.framework import CATEGORICAL, COLUMNS, FileEvents, empty_events, table_of_files

LOADER_PHASES = ("DataLoaderWorker", "DataLoaderIter")
LOADER_INIT_PHASE = "DataLoaderIterInitialize"
STEP_NAME = "Step:ModeKeys"
GROUP_KEYS = ("phase", "file_type", "name")


def is_step_phase(phase: str) -> bool:
    """``engine.breakdown``'s training-step class: a phase with "Step" that is not a CPU / GPU phase."""
    low = phase.lower()
    return "cpu" not in low and "gpu" not in low and "Step" in phase


def _key_row_mask(names: list[str], phases: list[str], steps: list[str], name_c, phase_c, step_c) -> np.ndarray:
    """Rows the rules read one by one (see the module docstring)."""
    by_name = np.array([STEP_NAME in n for n in names] + [False], dtype=bool)
    by_phase = np.array([p in LOADER_PHASES or p == LOADER_INIT_PHASE for p in phases] + [False], dtype=bool)
    step_phase = np.array([is_step_phase(p) for p in phases] + [False], dtype=bool)
    numbered = np.array([s != "" for s in steps] + [False], dtype=bool)
    return by_name[name_c] | by_phase[phase_c] | (step_phase[phase_c] & numbered[step_c])


def group_reduce(codes: np.ndarray, start: np.ndarray, dur: np.ndarray, rows: np.ndarray, n_groups: int):
    """Per group code (0 <= code < ``n_groups``): (present codes, int64 duration sum, count, start
    and row of the first event by (start, row)); ``rows`` increase along the arrays (None: 0, 1, 2...). int64 sums are
    exact whatever the order (and wrap the same way on overflow). No sort of the events: a few bytes
    of temporaries per event."""
    if not len(codes):
        z = np.zeros(0, np.int64)
        return z, z, z, z, z
    codes = np.asarray(codes, np.intp)
    counts = np.bincount(codes, minlength=n_groups).astype(np.int64)
    sums = np.zeros(n_groups, np.int64)
    np.add.at(sums, codes, np.asarray(dur, np.int64))
    first_start = np.full(n_groups, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first_start, codes, np.asarray(start, np.int64))
    # among each group's events at its first start, the first one (rows increase)
    at = np.nonzero(start == first_start[codes])[0]
    present_at, first = np.unique(codes[at], return_index=True)
    first_row = np.zeros(n_groups, np.int64)
    first_row[present_at] = at[first] if rows is None else np.asarray(rows)[at[first]]
    present = np.nonzero(counts)[0]
    return present.astype(np.int64), sums[present], counts[present], first_start[present], first_row[present]


@dataclass
class FileGroups:
    """One file's group sums: per group its (phase, file_type, name) and int64 arrays. Plain lists
    and arrays, not a DataFrame: making and reading one per trace file cost more than the sums
    (medium profile, 465 files: 0.27 of 0.62 CPU s of the reduction and merge)."""

    phase: list
    file_type: list
    name: list
    dur: np.ndarray
    count: np.ndarray
    first_start: np.ndarray
    first_row: np.ndarray


@dataclass
class FileSummary:
    """One trace file reduced (``summarize_file``); everything in it merges exactly."""

    rows: FileEvents  # the key rows, all columns (with the file's problems)
    groups: FileGroups
    times: tuple  # (start int64, end int64, group code int32, node code int32) of every event kept, in file order
    n_events: int
    extent: tuple | None  # (min start, max end) of the events kept
    plausible_extent: tuple | None  # the same over events that start after PLAUSIBLE_EPOCH_US
    dropped: dict  # node -> events dropped as clock jumps
    stats: object = None  # cluster.task_stats.TaskStats when reduced on a Dask worker
    nodes: list = field(default_factory=list)  # the node ids ``times``' node codes index (the file's own)


def summarize_file(fe: FileEvents, span: tuple[int, int] | None = None) -> FileSummary:
    """The per-file reduction: ``fe`` (one file's columns, consumed: its columns are dropped as soon
    as they are reduced) less its clock jumps (``span``: the files' time range, ``readers.clock``),
    as key rows, group sums and the correlation columns."""
    cols = fe.columns
    n = fe.n_events
    start, end = cols["start_us"], cols["end_us"]
    dropped: dict = {}
    keep = None
    if span is not None and n:
        bad = clock_outliers(start, end, span)
        if bad.any():
            nodes = np.asarray(fe.strings["node_id"], dtype=object)[cols["node_id"][bad]]
            u, c = np.unique(nodes.astype(str), return_counts=True)
            dropped = {str(k): int(v) for k, v in zip(u, c)}
            keep = ~bad
    if keep is not None:
        cols = {c: cols[c][keep] for c in COLUMNS}
        start, end = cols["start_us"], cols["end_us"]
    n = len(start)
    rows_idx = np.nonzero(keep)[0] if keep is not None else None  # row numbers in the file
    s = fe.strings
    # group code per event from (phase, file_type, name) codes
    key = _key_row_mask(s["name"], s["phase"], s["step_num"], cols["name"], cols["phase"], cols["step_num"]) \
        if n else np.zeros(0, bool)
    rows = FileEvents({c: cols[c][key] for c in COLUMNS}, dict(s), fe.problem_counts, fe.problem_items)
    del key
    # the other columns are not needed any more: let a big file's go before the group sums
    cols = {c: cols[c] for c in ("start_us", "end_us", "dur_us", "phase", "file_type", "name", "node_id")}
    fe.columns = {}
    if n:
        # one int64 key per (phase, file_type, name) code triple (each code < its dictionary's size),
        # numbered in order of appearance (hashing, no sort of the events)
        n_ft, n_name = len(s["file_type"]), len(s["name"])
        gkey = cols["phase"].astype(np.int64)  # built in place: one array of temporaries, not three
        gkey *= n_ft
        gkey += cols["file_type"]
        gkey *= n_name
        gkey += cols["name"]
        gcode, ukey = pd.factorize(gkey)
        del gkey
        ukey = np.asarray(ukey, np.int64)
        uniq = np.stack([ukey // (n_ft * n_name), (ukey // n_name) % n_ft, ukey % n_name], axis=1)
    else:
        uniq, gcode = np.zeros((0, 3), np.int64), np.zeros(0, np.intp)
    codes, sums, counts, fstart, frow = group_reduce(gcode, start, cols["dur_us"], rows_idx, len(uniq))
    gcode = gcode.astype(np.int32)
    # every group of the file is present (each has an event), so codes == arange: gcode indexes groups
    groups = FileGroups([s["phase"][uniq[k, 0]] for k in codes], [s["file_type"][uniq[k, 1]] for k in codes],
                        [s["name"][uniq[k, 2]] for k in codes], sums, counts, fstart, frow)
    extent = plausible = None
    if n:
        extent = (int(start.min()), int(end.max()))
        ok = start >= PLAUSIBLE_EPOCH_US
        if ok.any():
            plausible = (int(start[ok].min()), int(end[ok].max()))
    node = np.asarray(cols["node_id"], np.int32)
    return FileSummary(rows, groups, (start, end, gcode, node), n, extent, plausible, dropped,
                       nodes=list(s["node_id"]))


# ------------------------------------------------------------------------------------ groups


class GroupTotals:
    """Duration sums per (phase, file_type, name) over files, merged exactly as files arrive:
    int64 sums and counts added (any order gives the same integers), the first event kept by
    (start, file, row), which is its place in the start-sorted event table. Memory: one entry per
    distinct group, whatever the number of files or events."""

    def __init__(self, labels: "GroupLabels | None" = None):
        self.labels = labels if labels is not None else GroupLabels()
        self.dur = np.zeros(0, np.int64)
        self.count = np.zeros(0, np.int64)
        self.first = np.zeros((0, 3), np.int64)  # start, file, row

    def add(self, gids: np.ndarray, sums, counts, fstart, frow, file: int) -> None:
        """One file's groups (``gids`` distinct, from ``labels``)."""
        n = len(self.labels)
        if len(self.dur) < n:
            grow = max(n, 2 * len(self.dur)) - len(self.dur)
            self.dur = np.concatenate([self.dur, np.zeros(grow, np.int64)])
            self.count = np.concatenate([self.count, np.zeros(grow, np.int64)])
            self.first = np.concatenate([self.first, np.full((grow, 3), np.iinfo(np.int64).max, np.int64)])
        gids = np.asarray(gids, np.int64)
        self.dur[gids] += np.asarray(sums, np.int64)
        self.count[gids] += np.asarray(counts, np.int64)
        new = np.stack([np.asarray(fstart, np.int64), np.full(len(gids), file, np.int64),
                        np.asarray(frow, np.int64)], axis=1)
        cur = self.first[gids]
        better = (new[:, 0] < cur[:, 0]) | ((new[:, 0] == cur[:, 0]) & (
            (new[:, 1] < cur[:, 1]) | ((new[:, 1] == cur[:, 1]) & (new[:, 2] < cur[:, 2]))))
        self.first[gids[better]] = new[better]

    def frame(self) -> pd.DataFrame:
        """phase, file_type, name, dur, count of every group seen, in first-appearance order."""
        k = min(len(self.dur), len(self.labels))
        present = np.nonzero(self.count[:k] > 0)[0]
        f = self.first[present]
        order = present[np.lexsort((f[:, 2], f[:, 1], f[:, 0]))]
        lab = self.labels.triples
        return pd.DataFrame({"phase": [lab[i][0] for i in order], "file_type": [lab[i][1] for i in order],
                             "name": [lab[i][2] for i in order], "dur": self.dur[order].astype(np.int64),
                             "count": self.count[order].astype(np.int64)})


class GroupLabels:
    """Global ids of (phase, file_type, name) triples."""

    def __init__(self):
        self.ids: dict = {}
        self.triples: list = []

    def __len__(self) -> int:
        return len(self.triples)

    def of(self, phases, file_types, names) -> np.ndarray:
        out = np.empty(len(phases), np.int64)
        for i, t in enumerate(zip(phases, file_types, names)):
            gid = self.ids.get(t)
            if gid is None:
                gid = self.ids[t] = len(self.triples)
                self.triples.append(t)
            out[i] = gid
        return out


def groups_of_table(events: pd.DataFrame) -> pd.DataFrame:
    """The group sums of a whole event table (one "file": its rows in table order)."""
    totals = GroupTotals()
    if len(events) == 0:
        return totals.frame()
    keys = [events[k].astype(str).to_numpy() for k in GROUP_KEYS]
    codes, uniq = pd.factorize(pd.MultiIndex.from_arrays(keys))
    c, sums, counts, fstart, frow = group_reduce(codes.astype(np.int64), events["start_us"].to_numpy(),
                                                 events["dur_us"].to_numpy(), np.arange(len(events)), len(uniq))
    gids = totals.labels.of([uniq[k][0] for k in c], [uniq[k][1] for k in c], [uniq[k][2] for k in c])
    totals.add(gids, sums, counts, fstart, frow, 0)
    return totals.frame()


# ------------------------------------------------------------------------------------ the store


@dataclass
class NodeEvents:
    """Every framework event as columns: start and end (µs), its group (an index into ``triples``: phase, file
    type, name) and its node (an index into ``nodes``: smdebug's node id, one per training process)."""

    start_us: np.ndarray
    end_us: np.ndarray
    group: np.ndarray
    node: np.ndarray
    triples: list
    nodes: list


def _instant_hits(start: np.ndarray, end: np.ndarray, instants_sorted: np.ndarray) -> np.ndarray:
    """Per event: whether an instant t falls strictly inside it (start < t < end)."""
    hit = np.zeros(len(start), bool)
    if not len(start) or not len(instants_sorted):
        return hit
    i = np.searchsorted(instants_sorted, start, side="right")
    ok = i < len(instants_sorted)
    hit[ok] = instants_sorted[i[ok]] < end[ok]
    return hit


def _interval_hits(start: np.ndarray, end: np.ndarray, seg_s: np.ndarray, seg_e: np.ndarray) -> np.ndarray:
    """Per event: whether it overlaps a merged closed segment (end >= a and start <= b)."""
    hit = np.zeros(len(start), bool)
    if not len(start) or not len(seg_s):
        return hit
    i = np.searchsorted(seg_s, end, side="right") - 1
    ok = i >= 0
    hit[ok] = seg_e[i[ok]] >= start[ok]
    return hit


# Correlation columns buffered before they are written as one ``.npy`` triple: 4 MiB is ~200,000 events.
# One triple per trace file cost more than the rest of the merge (medium profile, 465 files: 0.35 CPU s to
# write, 0.2 s to read back per correlation, of which the rules ask three), while the buffer bounds memory.
SPILL_BATCH_BYTES = 4 << 20


class EventStore:
    """The correlation columns of every file (start, end, global group id, global node code), in memory or, with
    ``folder``, spilled there as the files arrive, in batches of about ``SPILL_BATCH_BYTES`` (one
    ``.npy`` triple per batch, so the client's memory does not grow with the events);
    ``groups_where`` reads them back one batch at a time and sums them file by file."""

    def __init__(self, labels: GroupLabels, folder: str | None = None):
        self.labels = labels
        self.nodes: list[str] = []  # the node ids the node codes index
        self.folder = folder
        # per batch: its arrays, or the path stem of their .npy files, and the lengths of its files
        self.batches: list = []
        self._pending: list = []  # files not written yet (at most SPILL_BATCH_BYTES of them)
        self._pending_bytes = 0
        # the folder goes when the store is closed, collected, or at exit (load_data's callers)
        self._remove = weakref.finalize(self, shutil.rmtree, folder, True) if folder is not None else None

    def add(self, times: tuple) -> None:
        """(start, end, global group id, global node code) of one file's events."""
        if self.folder is None:
            self.batches.append((times, [len(times[0])]))
            return
        self._pending.append(times)
        self._pending_bytes += sum(a.nbytes for a in times)
        if self._pending_bytes >= SPILL_BATCH_BYTES:
            self._spill()

    def _spill(self) -> None:
        """The pending files as one batch, written to the folder (kept in memory when it is full)."""
        lengths = [len(t[0]) for t in self._pending]
        held = tuple(np.concatenate([t[k] for t in self._pending]) for k in range(4))
        self._pending, self._pending_bytes = [], 0
        stem = os.path.join(self.folder, f"{len(self.batches):08d}")
        try:
            for tag, arr in zip("segn", held):
                np.save(f"{stem}.{tag}.npy", arr, allow_pickle=False)
            held = stem
        except OSError:  # a full disk costs memory, not the run
            pass
        self.batches.append((held, lengths))

    def _each_batch(self):
        """Every batch's arrays and its files' lengths, in file order (the files not spilled yet last)."""
        for held, lengths in self.batches:
            if isinstance(held, str):
                held = tuple(np.load(f"{held}.{tag}.npy", allow_pickle=False) for tag in "segn")
            yield held, lengths
        for times in list(self._pending):
            yield times, [len(times[0])]

    def groups_where(self, hits) -> pd.DataFrame:
        """Group sums of the events for which ``hits(start, end)`` is true (an event-wise test, so it
        is asked of a whole batch at once); the sums are made file by file, as the files came."""
        totals = GroupTotals(self.labels)
        i = 0  # the file's place in the store: the first event of a group is kept by (start, file, row)
        for (start_b, end_b, gid_b, _), lengths in self._each_batch():
            hit_b = hits(start_b, end_b)
            off = 0
            for n in lengths:
                sl = slice(off, off + n)
                off += n
                hit = hit_b[sl]
                if hit.any():
                    start, end, gid = start_b[sl], end_b[sl], gid_b[sl]
                    rows = np.nonzero(hit)[0]
                    c, sums, counts, fstart, frow = group_reduce(gid[hit].astype(np.int64), start[hit],
                                                                 end[hit] - start[hit], rows, len(self.labels))
                    totals.add(c, sums, counts, fstart, frow, i)
                i += 1
        return totals.frame()

    def node_events(self) -> NodeEvents:
        """Every event's start, end, group and node, the batches joined (the step-time account's input)."""
        parts = list(self._each_batch())
        cols = [np.concatenate([held[k] for held, _ in parts]) if parts else np.zeros(0, np.int64) for k in range(4)]
        return NodeEvents(cols[0].astype(np.int64), cols[1].astype(np.int64), cols[2].astype(np.int64),
                          cols[3].astype(np.int64), list(self.labels.triples), list(self.nodes))

    def close(self) -> None:
        self.batches = []
        self._pending = []
        if self._remove is not None:
            self._remove()


class TableStore:
    """The correlations answered from a whole event table in memory (``FrameworkEvents.from_table``)."""

    def __init__(self, events: pd.DataFrame):
        self.events = events

    def node_events(self) -> NodeEvents:
        ev = self.events
        if len(ev) == 0:
            z = np.zeros(0, np.int64)
            return NodeEvents(z, z, z, z, [], [])
        labels = GroupLabels()
        gid = labels.of(*(ev[k].astype(str).to_numpy() for k in GROUP_KEYS))
        node, nodes = pd.factorize(ev["node_id"].astype(str).to_numpy())
        return NodeEvents(ev["start_us"].to_numpy(np.int64), ev["end_us"].to_numpy(np.int64), gid,
                          node.astype(np.int64), list(labels.triples), [str(n) for n in nodes])

    def groups_where(self, hits) -> pd.DataFrame:
        ev = self.events
        if len(ev) == 0:
            return GroupTotals().frame()
        hit = hits(ev["start_us"].to_numpy(), ev["end_us"].to_numpy())
        return groups_of_table(ev[hit])

    def close(self) -> None:
        pass


# ------------------------------------------------------------------------------------ merged


@dataclass
class FrameworkEvents:
    """What the rules read of the framework traces (see the module docstring)."""

    rows: pd.DataFrame  # the key rows, start-sorted like the event table (same columns)
    groups: pd.DataFrame  # phase, file_type, name, dur, count in first-appearance order
    n_events: int
    extent: tuple | None  # (min start, max end) µs of all events
    plausible_extent: tuple | None  # the same over events starting after PLAUSIBLE_EPOCH_US
    store: object = None  # EventStore / TableStore
    dropped: dict = field(default_factory=dict)  # node -> clock-jump events dropped

    @classmethod
    def from_table(cls, events: pd.DataFrame) -> "FrameworkEvents":
        """The same from a whole event table held in memory (its rows serve as the key rows)."""
        n = len(events)
        extent = plausible = None
        if n:
            s, e = events["start_us"].to_numpy(), events["end_us"].to_numpy()
            extent = (int(s.min()), int(e.max()))
            ok = s >= PLAUSIBLE_EPOCH_US
            if ok.any():
                plausible = (int(s[ok].min()), int(e[ok].max()))
        return cls(events, groups_of_table(events), n, extent, plausible, TableStore(events))

    def groups_at_instants(self, instants_us) -> pd.DataFrame:
        """Groups of the events active at any of the instants (strictly inside, each event once)."""
        t = np.sort(np.asarray(instants_us, dtype=np.int64))
        return self.store.groups_where(lambda s, e: _instant_hits(s, e, t))

    def groups_in_intervals(self, seg_s: np.ndarray, seg_e: np.ndarray) -> pd.DataFrame:
        """Groups of the events overlapping merged segments (closed, each event once)."""
        return self.store.groups_where(lambda s, e: _interval_hits(s, e, seg_s, seg_e))

    def node_events(self) -> NodeEvents:
        """Every event with its group and node (``NodeEvents``), for the step-time account."""
        return self.store.node_events()

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def merge_summaries(summaries, problems, spill: bool = True) -> FrameworkEvents:
    """``FileSummary`` objects in file order (an iterable: each is merged and dropped in turn) ->
    ``FrameworkEvents``; the files' reading problems go to ``problems`` in file order. ``spill``:
    the correlation columns go to a temporary folder instead of memory."""
    folder = None
    if spill:
        try:
            folder = tempfile.mkdtemp(prefix="reportgen-events-")
        except OSError:
            folder = None
    labels = GroupLabels()
    store = EventStore(labels, folder)
    totals = GroupTotals(labels)
    n = 0
    extents: list = [None, None]  # all events, plausible ones: (min start, max end) so far
    dropped: dict = {}
    node_code: dict = {}  # node id -> global code (the store's ``nodes``)

    def widen(k, ex):
        if ex is not None:
            cur = extents[k]
            extents[k] = ex if cur is None else (min(cur[0], ex[0]), max(cur[1], ex[1]))

    def each():
        nonlocal n
        for i, fs in enumerate(summaries):
            n += fs.n_events
            widen(0, fs.extent)
            widen(1, fs.plausible_extent)
            for node, k in fs.dropped.items():
                dropped[node] = dropped.get(node, 0) + k
            if fs.n_events:
                g = fs.groups
                gids = labels.of(g.phase, g.file_type, g.name)
                totals.add(gids, g.dur, g.count, g.first_start, g.first_row, i)
                start, end, gcode, ncode = fs.times
                node_ids = np.array([node_code.setdefault(n, len(node_code)) for n in fs.nodes], np.int32)
                store.add((start, end, gids[gcode].astype(np.int32), node_ids[ncode]))
            yield fs.rows

    try:
        rows = table_of_files(each(), problems)
    except BaseException:
        store.close()
        raise
    store.nodes = list(node_code)

    return FrameworkEvents(rows, totals.frame(), n, extents[0], extents[1], store, dropped)


def empty_framework() -> FrameworkEvents:
    return FrameworkEvents.from_table(empty_events())


__all__ = ["FrameworkEvents", "FileSummary", "summarize_file", "merge_summaries", "empty_framework",
           "CATEGORICAL", "LOADER_PHASES"]
