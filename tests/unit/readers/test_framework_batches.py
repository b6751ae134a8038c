"""``reduce_framework`` reads consecutive trace files in runs (``readers.framework._batches``): the runs' bounds,
a file bigger than a run alone, a file that is gone, and ``stop`` between files."""

from __future__ import annotations

import threading

from reportgen.readers import framework


def _files(tmp_path, sizes):
    paths = []
    for i, n in enumerate(sizes):
        p = tmp_path / f"{1700000000000000 + i}_27-algo-1_pythontimeline.json"
        p.write_bytes(b" " * n)
        paths.append(p)
    return paths


def test_runs_hold_consecutive_files_up_to_the_bound_and_a_bigger_file_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(framework, "REDUCE_BATCH_BYTES", 100)
    files = _files(tmp_path, [40, 40, 30, 250, 10, 90, 5])
    runs = list(framework._batches(files))
    assert [[files.index(p) for p in run] for run in runs] == [[0, 1], [2], [3], [4, 5], [6]]
    assert sum(runs, []) == files  # every file once, in order
    gone = tmp_path / "1800000000000000_27-algo-1_pythontimeline.json"  # listed, then deleted: size 0 here
    assert list(framework._batches([gone, files[0]])) == [[gone, files[0]]]
    assert list(framework._batches([])) == []


def test_stop_ends_the_runs_and_the_reading_between_files(tmp_path, monkeypatch):
    monkeypatch.setattr(framework, "REDUCE_BATCH_BYTES", 100)
    files = _files(tmp_path, [40, 40, 40, 40])
    stop = threading.Event()
    runs = framework._batches(files, stop)
    assert next(runs) == files[:2]
    stop.set()
    assert list(runs) == []
    read = []
    monkeypatch.setattr(framework.FrameworkReader, "read_file", lambda self, p: read.append(p) or stop.set())
    stop.clear()
    framework.read_trace_files(tmp_path, files[:3], 10, stop)
    assert read == files[:1]  # stopped after the first file of the run


def test_a_run_ends_after_the_file_whose_events_pass_the_bound(tmp_path, monkeypatch):
    """Files whose sizes put them in one run (as a compressed TF trace's size would, whatever it holds): the event
    bound ends the run after each file that passes it, so a run never holds more than one file's events past the
    bound (one file at a time did); every file is still read once, in order."""
    import json

    from reportgen.problems import ProblemLog

    d = tmp_path / "framework" / "pevents" / "2023111422"
    d.mkdir(parents=True)
    meta = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"start_time_since_epoch_in_micros": 1_700_000_000_000_000}}]
    paths = []
    for i in range(4):
        events = meta + [{"name": "op", "ph": "X", "pid": 1, "ts": t, "dur": 1} for t in range(3000)]
        p = d / f"{1700000060000000 + i}_27-algo-1_pythontimeline.json"
        p.write_text(json.dumps(events))
        paths.append(p)
    monkeypatch.setattr(framework, "REDUCE_BATCH_BYTES", 1 << 30)  # one run by their sizes
    monkeypatch.setattr(framework, "REDUCE_BATCH_EVENTS", 5000)
    runs = []
    framework.reduce_framework(tmp_path, ProblemLog(), lambda fe: runs.append(fe.n_events) or fe,
                               lambda it, problems: list(it), files=paths)
    assert runs == [6000, 6000]  # two files a run: the second brings each past 5,000
    monkeypatch.setattr(framework, "REDUCE_BATCH_EVENTS", 2000)
    runs.clear()
    framework.reduce_framework(tmp_path, ProblemLog(), lambda fe: runs.append(fe.n_events) or fe,
                               lambda it, problems: list(it), files=paths)
    assert runs == [3000] * 4
