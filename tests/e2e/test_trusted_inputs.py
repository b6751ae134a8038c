"""Inputs validated where they are trusted (issue #30 item 4): Kineto times out of range, a trace-only
source with nothing usable, a prices file's currency. (``check`` failing closed: tests/e2e/test_text_outputs.py.)"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from reportgen.readers.kineto_trace import OUT_OF_RANGE
from tests.support.cli import run_cli
from tests.support.paths import ROOT

REPO = ROOT
SAMPLE = REPO / "sample_data"
T0 = 1.7e15  # µs since the epoch


_reportgen = functools.partial(run_cli, timeout=240)


def _trace(folder: Path, events: list, name: str = "host_1.1700000000000.pt.trace.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps({"traceEvents": events, "distributedInfo": {"rank": 0}}))
    return folder


def _kernels(n: int) -> list[dict]:
    return [{"ph": "X", "cat": "kernel", "name": "k", "ts": T0 + i * 100, "dur": 50, "pid": 0, "tid": 7,
             "args": {"device": 0}} for i in range(n)]


def test_a_kernel_whose_end_kineto_never_saw_is_dropped_and_counted(tmp_path):
    """Kineto writes dur = 2**64 ns for such a kernel: it made a 584-year rank with the GPU 100 % busy."""
    bad = [{"ph": "X", "cat": "kernel", "name": "k", "ts": T0 + 20_000, "dur": 2**64 / 1000, "pid": 0, "tid": 7,
            "args": {"device": 0}},
           {"ph": "X", "cat": "kernel", "name": "k", "ts": 2.0**60, "dur": 5, "pid": 0, "tid": 7, "args": {"device": 0}},
           {"ph": "B", "cat": "cpu_op", "name": "b", "ts": T0, "pid": 1, "tid": 1},
           {"ph": "E", "cat": "cpu_op", "name": "b", "ts": T0 + 40 * 86400e6, "pid": 1, "tid": 1}]
    folder = _trace(tmp_path / "t", _kernels(100) + bad)
    html = tmp_path / "r.html"
    proc = _reportgen("generate", folder, "-o", html, "-q")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(html.with_suffix(".json").read_text())
    quality = data["sections"]["data-quality"]["raw_data"]
    assert quality["by_reason"] == {OUT_OF_RANGE: 3}
    assert data["sections"]["data-quality"]["problems"] == 3
    span_ms = _rank_span_ms(folder)
    assert 9.9 < span_ms < 10.1  # 100 kernels 100 µs apart: 10 ms, not 584 years


def _rank_span_ms(folder: Path) -> float:
    from reportgen.trace_analysis.job import analyze_traces

    doc, _ = analyze_traces(sorted(folder.iterdir()))
    rank, = doc["ranks"].values()
    return rank["span_ms"]


def test_a_trace_only_source_with_nothing_usable_is_exit_2(tmp_path):
    """Raw SageMaker data in this state was exit 2; a trace folder made an empty report with exit 0."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "host_1.1700000000000.pt.trace.json").write_bytes(b"")
    garbage = _trace(tmp_path / "garbage", [1, "x", None])
    for folder, why in ((empty, "empty file ×1"), (garbage, "event without numeric ts/dur (dropped) ×3")):
        out = tmp_path / f"out-{folder.name}" / "r.html"
        proc = _reportgen("generate", folder, "-o", out, "-q")
        assert proc.returncode == 2, proc.stderr
        line, = proc.stderr.strip().splitlines()
        assert line.startswith(f"reportgen: error: no usable profiler data in {folder}: none of the PyTorch "
                               "profiler traces holds a complete event (") and why in line
        assert not out.parent.exists()


def test_an_xspace_folder_with_nothing_usable_names_its_traces(tmp_path):
    """A binary file saved as text (every byte over 0x7F made U+FFFD, ``ef bf bd``) announces a plane far
    longer than the file: no event is read, and the error names the traces as what they are."""
    run = tmp_path / "logs" / "plugins" / "profile" / "run1"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes(b"\x0a\xef\xbf\xbd\xef\xbf\xbd\x06\x08\x02\x12\x0a/device:TPU:0" * 4)
    proc = _reportgen("generate", tmp_path / "logs", "-o", tmp_path / "out" / "r.html", "-q")
    assert proc.returncode == 2, proc.stderr
    line, = proc.stderr.strip().splitlines()
    assert ": none of the JAX / TensorFlow profiler traces holds a complete event (XSpace protobuf damaged" in line


def test_a_prices_file_in_euros_is_shown_in_euros(tmp_path):
    prices = tmp_path / "eur.toml"
    prices.write_text('[meta]\ncurrency = "EUR"\n\n[regions.us-east-1]\n"ml.p3.2xlarge" = 3.5\n')
    html = tmp_path / "r.html"
    proc = _reportgen("generate", SAMPLE, "-o", html, "-q", "--instance", "ml.p3.2xlarge", "--prices", prices,
                      "--markdown", tmp_path / "s.md")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(html.with_suffix(".json").read_text())
    cost = data["sections"]["cost"]
    assert cost["prices"]["currency"] == "EUR" and cost["price_per_hour"] == 3.5
    page = html.read_text(encoding="utf-8")
    assert f"{cost['cost_rounded']:,.2f} EUR" in page and "3.500 EUR" in page
    assert f"${cost['cost_rounded']:,.2f}" not in page and "$3.500" not in page
    summary = (tmp_path / "s.md").read_text()  # the diagnosis' impact: "..., about 0.39 EUR"
    assert "$" not in summary and summary.count(" EUR") >= 1


def test_money_text():
    from reportgen.formatting import money_text

    assert money_text(1234.5) == "$1,234.50" and money_text(1234.5, "usd") == "$1,234.50"
    assert money_text(3.5, "EUR", 3) == "3.500 EUR" and money_text(2, "CHF") == "2.00 CHF"
    assert money_text(None) == "" and money_text(float("nan")) == ""
