"""The recorded command's process count reduced to its changes, and its children's first start and last end (the
marks of the training loop's ends, reportgen/job_processes.py)."""

from __future__ import annotations

import json

from reportgen.job_processes import (child_processes, children_idle, churn_within, idle_to_script_end,
                                     process_changes)


def _ticks(path, counts, t0=1000.0, step=0.5, extra=""):
    lines = [json.dumps({"Timestamp": t0 + i * step, "CPUCores": 0.3, "Processes": n}) for i, n in enumerate(counts)]
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    return path


def test_changes_keep_the_tick_before_and_the_tick_that_shows_each(tmp_path):
    # the command alone, its 2 workers from the 4th tick, one left at the 7th, none at the 9th, the exit at the last
    path = _ticks(tmp_path / "job-metrics.jsonl", [1, 1, 1, 3, 3, 3, 2, 2, 1, 1, 0])
    assert process_changes(path) == [[1000.0, 1000.0, 1], [1001.0, 1001.5, 3], [1002.5, 1003.0, 2],
                                     [1003.5, 1004.0, 1], [1004.5, 1005.0, 0]]
    children = child_processes(process_changes(path))
    assert children.started == (1001.0, 1001.5) and children.start_s == 1001.25
    assert children.ended == (1003.5, 1004.0) and children.end_s == 1003.75


def test_children_that_end_with_the_command_mark_no_end(tmp_path):
    """Workers still there at the last tick with the command (its exit ends them): no mark of the loop's end."""
    children = child_processes(process_changes(_ticks(tmp_path / "m.jsonl", [1, 2, 2, 2, 0])))
    assert children.started == (1000.0, 1000.5) and children.ended is None and children.end_s is None


def test_a_command_without_children_has_no_marks(tmp_path):
    assert child_processes(process_changes(_ticks(tmp_path / "m.jsonl", [1, 1, 1, 0]))) is None
    assert child_processes([]) is None and child_processes(None) is None and child_processes("x") is None


def test_a_wrapper_process_counts_as_the_commands_own(tmp_path):
    """`sh -c "python train.py"`: two processes from the first tick; the workers are the ones above that."""
    children = child_processes(process_changes(_ticks(tmp_path / "m.jsonl", [2, 2, 4, 4, 2, 2, 0])))
    assert children.started == (1000.5, 1001.0) and children.ended == (1001.5, 1002.0)


def test_bad_lines_cost_only_themselves(tmp_path):
    """A recording cut short ends in half a line; other lines may hold no number where one belongs."""
    path = _ticks(tmp_path / "m.jsonl", [1, 2, 1], extra='{"Timestamp": 1002.0, "Processes": "two"}\n[]\nnot json\n'
                                                        '{"Timestamp": NaN, "Processes": 3}\n{"Timest')
    assert process_changes(path) == [[1000.0, 1000.0, 1], [1000.0, 1000.5, 2], [1000.5, 1001.0, 1]]
    assert process_changes(tmp_path / "missing.jsonl") == []
    # rows as a hand-edited recording.json may hold them
    assert child_processes([[1, 2], "x", [1000.0, 1000.0, 1], [1000.0, 1000.5, True], [1000.5, 1001.0, 3],
                            [1001.0, 1001.5, 1]]).ended == (1001.0, 1001.5)


def test_children_that_come_and_go_inside_the_loop_are_counted(tmp_path):
    """A worker for the loop, and a command started from the step now and then (a third process for a tick): the
    changes strictly inside the loop count, the worker's own start and end (the loop's marks) do not."""
    changes = process_changes(_ticks(tmp_path / "m.jsonl", [1, 2, 2, 3, 2, 2, 3, 2, 1, 1]))
    children = child_processes(changes)
    assert churn_within(changes, children.start_s, children.end_s) == (4, 3)
    assert churn_within(changes, 1000.9, 1002.1) == (2, 3)  # the first command only: its start and its end
    steady = process_changes(_ticks(tmp_path / "s.jsonl", [1, 2, 2, 2, 2, 1]))
    marks = child_processes(steady)
    assert churn_within(steady, marks.start_s, marks.end_s) == (0, 0) and churn_within([], 0.0, 1.0) == (0, 0)


def _busy(path, rows, t0=1000.0, step=0.5):
    """rows: (processes, the children's CPU in cores) a tick."""
    lines = [json.dumps({"Timestamp": t0 + i * step, "CPUCores": 0.3, "Processes": n, "ChildCPUCores": c})
             for i, (n, c) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_workers_idle_before_their_end_mark_where_they_last_worked(tmp_path):
    """A persistent worker's last batch at the 5th tick, then idle while the script goes on (3 ticks), its shutdown
    a busy tick before it is gone: [the last busy tick, the next]."""
    rows = [(1, 0.0), (2, 0.03), (2, 0.02), (2, 0.05), (2, 0.004), (2, 0.0), (2, 0.001), (2, 0.0), (2, 0.01),
            (1, 0.0), (0, 0.0)]
    assert children_idle(_busy(tmp_path / "m.jsonl", rows)) == [1002.0, 1002.5]
    # without the shutdown's tick the same, and one idle tick is enough (the script's end soon after the loop's);
    # one idle tick before a busy last one is no proof: the workers' end stands
    assert children_idle(_busy(tmp_path / "m.jsonl", rows[:8] + rows[9:])) == [1002.0, 1002.5]
    assert children_idle(_busy(tmp_path / "m.jsonl", rows[:5] + [(2, 0.0)] + rows[9:])) == [1002.0, 1002.5]
    assert children_idle(_busy(tmp_path / "m.jsonl", rows[:5] + [(2, 0.0), (2, 0.01)] + rows[9:])) == []


def test_no_idle_mark_where_workers_work_to_their_end_or_never_end(tmp_path):
    busy = [(1, 0.0), (2, 0.03), (2, 0.0), (2, 0.0), (2, 0.02), (2, 0.03), (1, 0.0)]  # idle mid-loop, then busy
    assert children_idle(_busy(tmp_path / "m.jsonl", busy)) == []
    assert children_idle(_busy(tmp_path / "m.jsonl", [(1, 0.0), (2, 0.03), (2, 0.0), (2, 0.0), (0, 0.0)])) == []
    assert children_idle(_busy(tmp_path / "m.jsonl", [(1, 0.0), (2, 0.0), (2, 0.0), (2, 0.0), (1, 0.0)])) == []
    # recordings before the children's CPU was kept
    assert children_idle(_ticks(tmp_path / "old.jsonl", [1, 2, 2, 2, 1])) == []
    assert children_idle(tmp_path / "missing.jsonl") == []


def _own(rows, t0=1000.0, step=0.5):
    """rows: (the command's CPU, its run-queue wait, in cores) a tick, as read_ticks gives them."""
    return [{"Timestamp": t0 + i * step, "CPUCores": c, "RunQueueCores": q, "Processes": 1}
            for i, (c, q) in enumerate(rows)]


def test_a_command_idle_up_to_its_scripts_end_last_worked_at_the_loops_end():
    """tf-generator's shape: the loop's last tick busy (1001.0), then neither running nor waiting until the script's
    end (1002.6, inside the tick it is seen in), the teardown after it busy: [the last busy tick, the next]."""
    rows = [(0.5, 1.2), (0.7, 2.0), (0.56, 1.3), (0.0, 0.0), (0.0, 0.0), (0.001, 0.0), (0.0, 0.0), (0.3, 0.6)]
    assert idle_to_script_end(_own(rows), 1002.6) == [1001.0, 1001.5]
    # the busy teardown after the script's end does not count; the ticks out of order are sorted
    assert idle_to_script_end(list(reversed(_own(rows))), 1002.6) == [1001.0, 1001.5]
    # two idle ticks are enough, one is a pause
    assert idle_to_script_end(_own(rows), 1002.1) == [1001.0, 1001.5]
    assert idle_to_script_end(_own(rows), 1001.6) == []


def test_no_idle_mark_for_a_starved_a_working_or_an_unaccounted_command():
    # no CPU but waiting for a core: starved, not idle (a loaded host)
    assert idle_to_script_end(_own([(0.5, 1.0), (0.0, 1.0), (0.0, 0.9), (0.0, 1.1)]), 1002.0) == []
    # busy up to the script's end, or idle all along (no last work to mark)
    assert idle_to_script_end(_own([(0.5, 1.0), (0.0, 0.0), (0.0, 0.0), (0.2, 0.0)]), 1002.0) == []
    assert idle_to_script_end(_own([(0.0, 0.0), (0.0, 0.0), (0.0, 0.0)]), 1002.0) == []
    # recordings without the run queue: a starved command uses no CPU either
    old = [{k: v for k, v in r.items() if k != "RunQueueCores"} for r in _own([(0.5, 1.0), (0.0, 0), (0.0, 0)])]
    assert idle_to_script_end(old, 1002.0) == [] and idle_to_script_end([], 1002.0) == []
