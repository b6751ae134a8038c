"""compare on the README's own path, run as a user would (CLI subprocess).

record -> record -> compare with a price: costs below a cent; network with units; ``-o - --format md``
without ``--json``; the cause table's change from the measured durations.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

from reportgen.cost import cost_text
from tests.support.cli import run_cli
from testdata.synthetic import Scenario, generate


run = run_cli


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """Two short recordings, as the README's record journey makes them."""
    out = tmp_path_factory.mktemp("rec")
    for name, code in (("run1", "import time; t = time.time()\nwhile time.time() - t < 2: pass"),
                       ("run2", "import time; time.sleep(2)")):
        result = run("record", "-q", "--interval", "200ms", "--out", name, "--", sys.executable, "-c", code, cwd=out)
        assert result.returncode == 0, result.stderr
    return out


def test_money_text_below_a_cent():
    assert cost_text(0.0001) == "< $0.01"
    assert cost_text(0.004999) == "< $0.01"
    assert cost_text(0.005) == "$0.01"  # half up, as printed elsewhere
    assert cost_text(0.0) == "$0.00"
    assert cost_text(1.519375) == "$1.52"
    assert cost_text(None) == "unknown"
    assert cost_text(0.0001, "EUR") == "< 0.01 EUR"  # the prices file's currency, as given


def test_compare_of_two_short_recordings_with_prices_to_stdout(recordings):
    """The crash of the issue: a side's cost rounds to $0.00 (TypeError, exit 3); -o - needed --json."""
    result = run("compare", "run1", "run2", "--instance-a", "ml.m5.xlarge", "--instance-b", "ml.m5.xlarge",
                 "-o", "-", "--format", "md", cwd=recordings)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert sorted(p.name for p in recordings.iterdir()) == ["run1", "run2"]  # no compare.json, no stray file
    assert "(no compare.json: give --json PATH)" in result.stderr
    # both costs are a few hundredths of a cent: shown as such, never $0.00
    rows = [line for line in text.splitlines() if line.startswith(("| A | ml.m5", "| B | ml.m5"))]
    assert len(rows) == 2 and all("| &lt; $0.01 |" in row for row in rows), rows
    assert "$0.00" not in text.split("### Cost per run")[1].split("###")[0].replace("$0.00 saved", "")
    assert "A run of B costs &lt; $0.01 instead of &lt; $0.01" in text
    # network: the unit and humane numbers, never raw bytes
    (network,) = [line for line in text.splitlines() if line.startswith("| Network | bytes")]
    cells = [c.strip() for c in network.strip("|").split("|")]
    assert cells[1] == "bytes/s"
    assert all(re.fullmatch(r"[+\u2212]?\d+(\.\d)? (B|KB|MB|GB)/s", c) for c in cells[2:]), cells


def test_compare_json_beside_a_file_and_with_json_to_stdout(recordings, tmp_path):
    result = run("compare", "run1", "run2", "--instance-a", "ml.m5.xlarge", "--instance-b", "ml.m5.xlarge",
                 "-o", str(tmp_path / "c.md"), "--format", "md", "-q", cwd=recordings)
    assert result.returncode == 0, result.stderr
    data = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    cost = data["sections"]["cost"]
    assert 0 < cost["a"]["cost"] < 0.005 and cost["a"]["cost_rounded"] == 0.0
    assert cost["saving_pct_from_rounded"] is None and cost["saving_pct"] is not None
    network = next(r for r in data["sections"]["utilization"]["overall"] if r["metric"] == "Network")
    assert network["unit"] == "bytes"  # compare.json keeps the raw bytes per second
    result = run("compare", "run1", "run2", "-o", "-", "--format", "md", "--json", "-", cwd=recordings)
    assert result.returncode == 2 and "standard output" in result.stderr  # two outputs cannot share stdout


@pytest.fixture(scope="module")
def fixed_pair(tmp_path_factory):
    """A: an input pipeline that starves the GPUs (15 min); B: the same job fixed, 12 min: the same work (2676
    and 2600 steps, within compare.work's 5 %), its steps 240 ms instead of 300 (at 300 ms B ran 2099 steps: 20 %
    less work, which compare judges per step)."""
    out = tmp_path_factory.mktemp("pair")
    base = dict(nodes=1, cores=8, gpus=2, interval_ms=500, seed=1)
    generate(out / "before", **base, duration_s=900,
             scenario=Scenario(cpu_bottleneck_fraction=0.5, dataloader_workers=1, pin_memory=False))
    generate(out / "after", **base, duration_s=720,
             scenario=Scenario(gpu_util_busy=(90,), gpu_idle_fraction=(0.03,), dataloader_workers=6, step_ms=240.0))
    result = run("compare", "before", "after", "-o", "c.md", "--format", "md", "-q", cwd=out)
    assert result.returncode == 0, result.stderr
    return out


def test_cause_change_is_the_measured_one_with_the_estimate_beside_it(fixed_pair):
    data = json.loads((fixed_pair / "c.json").read_text(encoding="utf-8"))
    verdict = data["sections"]["verdict"]
    assert "work" not in verdict  # the same work: the durations compare as they are
    causes = verdict["causes"]
    (cause,) = causes["causes"]
    assert cause["cause"] == "input-pipeline" and cause["status"] == "fixed"
    measured = verdict["duration_b_s"] - verdict["duration_a_s"]
    assert causes["measured_delta_seconds"] == cause["measured_delta_seconds"] == measured
    assert -200 < measured < -150  # 12 min against 15 min, as generated
    assert cause["delta_seconds"] == pytest.approx(-cause["a_seconds"])  # the estimate stays in compare.json
    text = (fixed_pair / "c.md").read_text(encoding="utf-8")
    (row,) = [line for line in text.splitlines() if line.startswith("| input-pipeline |")]
    estimate = f"\u2212{abs(cause['delta_seconds']):.0f} s"
    assert f"| \u2212{abs(measured):.0f} s measured (estimate {estimate}) | fixed |" in row


def test_prices_help_names_the_tables_date_and_source():
    from reportgen.cost import load_prices

    table = load_prices()
    for command in ("generate", "compare"):
        result = run(command, "--help")
        assert result.returncode == 0
        text = " ".join(result.stdout.split())
        assert f"taken {table.taken}" in text and "approximate" in text
        assert "AWS SageMaker pricing page" in text and "us-east-1" in text
