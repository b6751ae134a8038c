"""A recording on a shared host is judged by the recorded command's own CPU in generate; compare's verdict and
trend use the same figure (#49: generate said 15 %, compare "CPU 100 % → 100 %", trend 100 %: the host's)."""

from __future__ import annotations

import json
import shutil

from reportgen import cli
from reportgen.compare.run import CompareOptions, compare
from reportgen.notebook import open_report
from tests.support.paths import ROOT

SHORT = ROOT / "tests" / "recordings" / "cpu-torch" / "short"
COMMAND = {"job_cpu_pct_of_host": 14.0, "host_cpu_pct": 97.0, "job_cpu_s": 20.0, "cpu_cores": 8,
           "job_rss_peak_bytes": 400_000_000, "host_shared": True}


def _shared(folder, p50: float, p95: float):
    shutil.copytree(SHORT, folder)
    recording = json.loads((folder / "recording.json").read_text())
    recording.update(COMMAND, job_cpu_pct_of_host_p50=p50, job_cpu_pct_of_host_p95=p95)
    (folder / "recording.json").write_text(json.dumps(recording))
    return folder


def test_compare_and_trend_use_the_commands_own_cpu(tmp_path, capsys):
    a, b = _shared(tmp_path / "a", 12.0, 15.0), _shared(tmp_path / "b", 30.0, 41.0)
    out = tmp_path / "c.md"
    compare(str(a), str(b), out, CompareOptions(fmt="md"))
    verdict = json.loads(out.with_suffix(".json").read_text())["sections"]["verdict"]
    cpu = verdict["utilization_p95"]["CPU"]
    assert (cpu["a_p95"], cpu["b_p95"], cpu["delta"]) == (15.0, 41.0, 26.0)
    assert cpu["recorded_command"] == {"a": True, "b": True} and cpu["utilization"] == "better"
    assert "A's host was shared, so its figure is the recorded command's own CPU" in verdict["text"]
    assert "rose from 15 % to 41 %" in verdict["text"]
    for name, folder in (("a", a), ("b", b)):
        open_report(str(folder), standalone=True).save_json(tmp_path / name)
    reports = [str(tmp_path / "a" / "report.json"), str(tmp_path / "b" / "report.json")]
    usage = json.loads((tmp_path / "a" / "report.json").read_text())["sections"]["system-usage-statistics"]
    assert usage["recorded_command"]["job_cpu_pct_of_host_p50"] == 12.0  # what generate judged by
    assert cli.main(["trend", *reports, "-o", "-", "--format", "md", "--json", str(tmp_path / "t.json"), "-q"]) == 0
    runs = json.loads((tmp_path / "t.json").read_text())["runs"]
    assert [(r["cpu_p50_pct"], r["cpu_of_recorded_command"]) for r in runs] == [(12.0, True), (30.0, True)]
    assert "| 12 % (command) |" in capsys.readouterr().out


def test_a_host_of_its_own_keeps_the_hosts_cpu(tmp_path):
    out = tmp_path / "c.md"
    compare(str(SHORT), str(SHORT), out, CompareOptions(fmt="md"))
    cpu = json.loads(out.with_suffix(".json").read_text())["sections"]["verdict"]["utilization_p95"].get("CPU")
    assert cpu is not None and "recorded_command" not in cpu and cpu["delta"] == 0
