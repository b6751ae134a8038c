"""``reportgen record`` measures the job, not the host: the command's process tree while another process
loads the CPU (a shared host). Run as a user would (CLI subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psutil
import pytest

from tests.support.paths import ROOT

# The command: a child that burns CPU for 2 s and a parent that burns 1 s; each prints its CPU seconds as
# the kernel counts them (what psutil reads for that process tree).
COMMAND = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import time\\nt = time.time()\\nwhile time.time() - t < 2: pass\\nprint(time.process_time())"],
    stdout=subprocess.PIPE, text=True)
t = time.time()
while time.time() - t < 1:
    pass
child_cpu = float(child.communicate()[0])
print(time.process_time() + child_cpu)
"""
NEIGHBOUR = "import time\nt = time.time()\nwhile time.time() - t < 30: pass"


def test_record_measures_the_command_not_its_neighbours(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    neighbours = [subprocess.Popen([sys.executable, "-c", NEIGHBOUR]) for _ in range(psutil.cpu_count() or 1)]
    try:
        time.sleep(0.5)
        started = time.monotonic()
        result = subprocess.run([sys.executable, "-m", "reportgen", "record", "--interval", "200ms", "--out",
                                 str(tmp_path / "rec"), "--", sys.executable, "-c", COMMAND],
                                capture_output=True, text=True, env=env, timeout=120)
        elapsed = time.monotonic() - started
    finally:
        for proc in neighbours:
            proc.kill()
            proc.wait()
    assert result.returncode == 0, result.stderr
    own_cpu_s = float(result.stdout.strip().splitlines()[-1])  # the tree's CPU seconds, as the kernel counts them
    summary = json.loads((tmp_path / "rec" / "recording.json").read_text(encoding="utf-8"))
    cores = psutil.cpu_count()
    assert summary["cpu_cores"] == cores
    assert abs(summary["job_cpu_s"] - own_cpu_s) <= 0.05 * own_cpu_s + 0.05
    expected_pct = 100.0 * own_cpu_s / summary["wall_s"] / cores
    assert abs(summary["job_cpu_pct_of_host"] - expected_pct) <= 3.0  # within a few points
    assert summary["wall_s"] <= elapsed
    # every core had a neighbour burning it: the host was busy, the command had only a share of it
    assert summary["host_cpu_pct"] > 90.0 and summary["host_shared"] is True
    assert summary["host_cpu_pct"] - summary["job_cpu_pct_of_host"] > 5.0
    # the series, tick by tick, beside the host's: the child was seen (two processes at some tick)
    ticks = [json.loads(line) for line in (tmp_path / "rec" / "job-metrics.jsonl").read_text().splitlines()]
    assert len(ticks) == summary["samples"]
    assert max(t["Processes"] for t in ticks) == 2 and all(t["RSSBytes"] > 0 for t in ticks[:-1])
    assert max(t["CPUCores"] for t in ticks) > 0.1
    assert summary["job_rss_peak_bytes"] == max(t["RSSBytes"] for t in ticks)
    assert all(t["HostCPUPercent"] is None or t["HostCPUPercent"] >= t["CPUPercentOfHost"] - 5 for t in ticks)
    # the scheduler's run queue: the busy loops were runnable for 3 s of wall time (the child 2 s, the parent 1 s)
    # on cores every neighbour also wanted, so what they did not run they waited for (each process's last
    # part, after its last tick, is not seen: up to one 200 ms tick each)
    assert summary["job_run_queue_s"] > 0.1
    assert all(t["RunQueueCores"] >= 0 if t["Processes"] else t["RunQueueCores"] is None for t in ticks)
    assert summary["job_cpu_s"] + summary["job_run_queue_s"] >= 3.0 - 2 * 0.2 - 0.2
    assert summary["job_run_queue_pct_of_host"] == pytest.approx(
        100.0 * summary["job_run_queue_s"] / summary["wall_s"] / cores)
    (line,) = [l for l in result.stderr.splitlines() if "the command's processes used" in l]
    assert f"used {summary['job_cpu_pct_of_host']:.0f} % of the host's CPU" in line
    assert ": the host is shared (its CPU " in line
    assert f"its threads waited {summary['job_run_queue_s']:.1f} s for a core while runnable" in result.stderr
    # the report says whose CPU the system metrics show
    report = subprocess.run([sys.executable, "-m", "reportgen", "generate", str(tmp_path / "rec"), "-o",
                             str(tmp_path / "r.html"), "-q"], capture_output=True, text=True, env=env, timeout=300)
    assert report.returncode == 0, report.stderr
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    command = data["sections"]["system-usage-statistics"]["recorded_command"]
    assert command == {k: summary[k] for k in ("job_cpu_pct_of_host", "host_cpu_pct", "job_cpu_s", "cpu_cores",
                                               "job_rss_peak_bytes", "host_shared", "job_cpu_pct_of_host_p50",
                                               "job_cpu_pct_of_host_p95", "job_run_queue_s",
                                               "job_run_queue_pct_of_host")}
    shares = sorted(t["CPUPercentOfHost"] for t in ticks)
    assert shares[0] <= summary["job_cpu_pct_of_host_p50"] <= summary["job_cpu_pct_of_host_p95"] <= shares[-1]
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert (f"own processes used {summary['job_cpu_pct_of_host']:.0f} % of the host&#39;s CPU on average" in page
            and "The host was shared: the CPU figures above are the host&#39;s, not the job&#39;s" in page)
    queued = summary["job_run_queue_pct_of_host"] / 100 * cores
    assert (f"Its threads also waited for a core while runnable (the scheduler&#39;s run queue): {queued:.2f} of a "
            "core on average" in page)
    # the node's sentence is judged by the command's own CPU, not the host's busy cores
    assert ("The host was shared with other work, so this is judged by the recorded command&#39;s own CPU use"
            in page)
    assert f"CPU use by the recorded command is only {int(summary['job_cpu_pct_of_host_p95'])} %" in page  # truncated, as the original's texts
    assert "the CPUs are well utilized" not in page
