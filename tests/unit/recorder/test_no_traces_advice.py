"""``record --trace-dir DIR`` whose DIR stayed empty says how to add a profiler (#49): three lines of PyTorch
that write traces into DIR, valid Python with the folder as given."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

from reportgen.recorder import run as recorder_run


def test_the_advice_is_three_lines_of_python_writing_into_the_trace_dir():
    lead, *code = recorder_run.no_traces_advice("out/tr'aces")
    assert lead.startswith("no profiler traces were written into out/tr'aces; to record some, add these three lines")
    assert len(code) == 3 and "tensorboard_trace_handler(\"out/tr'aces\")" in code[1] and "prof.step()" in code[2]
    compile(textwrap.dedent("\n".join(code)), "advice", "exec")  # runnable as printed


def test_record_prints_it_when_no_trace_was_copied(monkeypatch, tmp_path):
    said = []
    result = SimpleNamespace(gpus=0, gpu_note="none", samples=3, wall_s=1.0, out_dir=tmp_path, traces_copied=[],
                             traces_skipped=[], traces_skipped_why={}, job_cpu_pct_of_host=None,
                             sampler_cpu_pct_of_one_core=0.1, sampler_cpu_s=0.001, exit_code=0)
    monkeypatch.setattr(recorder_run, "record", lambda *a, **k: result)
    args = SimpleNamespace(cmd=["--", "true"], interval="500ms", out=str(tmp_path / "rec"), trace_dir="tr")
    assert recorder_run.main(args, said.append) == 0
    assert said[1:5] == recorder_run.no_traces_advice("tr")
    said.clear()
    result.traces_copied = ["a.pt.trace.json"]
    recorder_run.main(args, said.append)
    assert not any("no profiler traces" in line for line in said)
