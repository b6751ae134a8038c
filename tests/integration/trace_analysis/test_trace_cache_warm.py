"""A warm run (every file's head and every rank's analysis from the trace cache, no trace read nor hashed, no
file's entry loaded, no rank analysed) writes exactly the cold run's
outputs: report.json, kineto.json, the rule outputs and Data quality, every table of the page; and
``--no-cache`` (``SourceOptions.trace_cache=False``) neither uses nor fills the cache."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from reportgen.pipeline import GenerateOptions, SourceOptions, generate
from reportgen.readers import digest_memo, trace_cache
from reportgen.trace_analysis import job
from tests.support.paths import RAW, ROOT, need

RECORDINGS = ROOT / "tests" / "recordings"
TABLE = re.compile(r"<table\b.*?</table>", re.S)


def _damaged_job(folder: Path) -> Path:
    """Two workers' traces, one cut at 60 % (its damage goes to Data quality), beside a JAX XSpace file."""
    folder.mkdir()
    workers = sorted((RECORDINGS / "gpu-input").glob("w*/*.pt.trace.json.gz"))
    shutil.copyfile(workers[0], folder / workers[0].name)
    text = gzip.decompress(workers[1].read_bytes())
    (folder / workers[1].name.removesuffix(".gz")).write_bytes(text[: len(text) * 6 // 10])
    return folder


def _outputs(run: Path) -> dict[str, bytes]:
    """What a run wrote, as compared: report.json (its time stamp blanked), the page's tables, every file of
    the rule outputs kept beside it (kineto.json, profiler-reports/, data-quality.json, timeline.json)."""
    report = json.loads((run / "report.json").read_text())
    report["generator"].pop("generated_at", None)
    out = {"report.json": json.dumps(report, sort_keys=True).encode(),
           "tables": "\n".join(TABLE.findall((run / "report.html").read_text())).encode()}
    for path in sorted((run / "rules").rglob("*")):
        if path.is_file():
            out[str(path.relative_to(run))] = path.read_bytes()
    return out


def _generate(source: Path, run: Path, cache_dir: Path, *, cached: bool = True) -> dict[str, bytes]:
    run.mkdir()
    generate(str(source), run / "report.html", GenerateOptions(
        source=SourceOptions(cache_dir=cache_dir, trace_cache=cached), rule_outputs=run / "rules"))
    return _outputs(run)


def _refuse_reading(monkeypatch) -> None:
    def refuse(path, problems=None):
        raise AssertionError(f"a warm run read {path}")

    def refuse_analysing(trace):
        raise AssertionError(f"a warm run analysed {trace.path}")
    def refuse_loading(cache, key, path):
        raise AssertionError(f"a warm run loaded the entry of {path}")
    monkeypatch.setattr(trace_cache, "read_trace_file", refuse)
    monkeypatch.setattr(trace_cache, "load_entry", refuse_loading)
    monkeypatch.setattr(job, "analyze_trace", refuse_analysing)


@pytest.mark.fixtures
def test_a_warm_run_of_a_real_job_writes_the_cold_runs_outputs(tmp_path, monkeypatch):
    source = need(RAW / "torch-cpu-record-ddp2")  # system metrics and 2 ranks x 2 cycles of traces
    cold = _generate(source, tmp_path / "cold", tmp_path / "cache")
    entries = sorted((tmp_path / "cache" / "traces").glob("*.npz"))
    assert len(entries) == 4
    assert len(list((tmp_path / "cache" / "traces").glob("*.rank.json"))) == 2  # the two ranks' analyses
    assert "kineto.json" in {Path(name).name for name in cold}
    _refuse_reading(monkeypatch)
    # nor hashed: the fixtures' files are older than the racy window, so their digests were remembered
    for module in (digest_memo, trace_cache):
        monkeypatch.setattr(module, "hash_file", lambda path: pytest.fail(f"a warm run hashed {path}"))
    warm = _generate(source, tmp_path / "warm", tmp_path / "cache")
    assert warm.keys() == cold.keys()
    assert [name for name in cold if warm[name] != cold[name]] == []
    assert sorted((tmp_path / "cache" / "traces").glob("*.npz")) == entries


def test_a_warm_run_keeps_the_damaged_traces_data_quality(tmp_path, monkeypatch):
    source = _damaged_job(tmp_path / "job")
    cold = _generate(source, tmp_path / "cold", tmp_path / "cache")
    quality = json.loads(cold["rules/data-quality.json"])
    assert quality["total"] > 0 and any(p["file"].endswith(".pt.trace.json") for p in quality["problems"])
    with monkeypatch.context() as patched:
        _refuse_reading(patched)
        warm = _generate(source, tmp_path / "warm", tmp_path / "cache")
    assert [name for name in cold if warm.get(name) != cold[name]] == []
    off = _generate(source, tmp_path / "off", tmp_path / "no-cache", cached=False)
    assert [name for name in cold if off.get(name) != cold[name]] == []
    assert not (tmp_path / "no-cache" / "traces").exists()
