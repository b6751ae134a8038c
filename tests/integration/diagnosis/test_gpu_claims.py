"""One GPU idle interval, one claim (issue 46, item 4): on every real GPU trace we hold, the GPU causes that price the
GPU's idle time claim disjoint parts of it, each within the step-time account's slice that holds its gaps, and all of
them within the steps' time outside compute; and a pageable copy that blocks the host and leaves the GPU idle is one
finding, the copy's, with the copy's fix (docs/diagnosis.md, "The GPU causes' precedence")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from reportgen.diagnosis import diagnose, gpu_causes
from reportgen.diagnosis.causes import GPU_CAUSES
from reportgen.readers.kineto_trace import read_trace
from reportgen.rule_outputs import RuleOutputs
from reportgen.trace_analysis import analyze_job, find_traces
from reportgen.trace_analysis.account import step_account
from reportgen.trace_analysis.analysis import steps_of
from reportgen.trace_analysis.gpu_analyses import gpu_analyses
from tests.support.paths import RAW, RECORDINGS, need

GPU_TRACES = [RECORDINGS / "gpu-host-sync" / "h100-host-sync", RECORDINGS / "gpu-input" / "w0",
              RECORDINGS / "gpu-input" / "w4", RAW / "kineto-resnet50-num-workers-0",
              RAW / "kineto-resnet50-num-workers-4", RAW / "hta-resnet-v100-1gpu", RAW / "hta-trace-diff-rank3of8",
              RAW / "hta-sampled-128rank"]
# the GPU causes that price the GPU's idle time (and the copies beside it), and the account slices their gaps lie in
IDLE_CLAIMS = {"pageable-memcpy": ("memory_copies",), "host-sync": ("host_blocked",),
               "kernel-launch-bound": ("dispatch", "no_operator"), "allocator-churn": ("memory_management",),
               "input-pipeline": ("data_wait",)}
SLACK = 1e-9


def _diagnose(doc: dict):
    made = RuleOutputs(folder=Path("."))
    made.rules, made.timeline, made.traces = {}, None, doc
    return diagnose(made)


@pytest.fixture
def every_claim(monkeypatch):
    """The GPU causes' thresholds at zero: every cost they price is a finding, however small, so that each is
    checked against its slice (the thresholds decide what is worth saying, not what is claimed)."""
    for name in ("SYNC_MIN", "PAGEABLE_BYTES", "PAGEABLE_MIN", "LAUNCH_SHORT", "LAUNCH_IDLE", "LAUNCH_OF_IDLE"):
        monkeypatch.setattr(gpu_causes, name, 0.0)


@pytest.mark.parametrize("folder", GPU_TRACES, ids=lambda p: p.name)
def test_gpu_causes_claim_disjoint_parts_of_the_idle_gpu(folder, every_claim):
    doc, _ = analyze_job(find_traces(need(folder)))
    diagnosis = _diagnose(doc)
    accounts = [r.account for r in diagnosis.evidence.trace_ranks.values() if r.account is not None]
    assert accounts and all(a.perspective == "device" for a in accounts)

    def mean_share(*slices: str) -> float:  # a finding's share is the mean over the ranks: so is its slices'
        return sum(sum(a.share(name) for name in slices) for a in accounts) / len(accounts)

    claims = {f.cause: f.share for f in diagnosis.findings if f.cause in IDLE_CLAIMS}
    for cause, share in claims.items():
        assert share <= mean_share(*IDLE_CLAIMS[cause]) + SLACK, (cause, share)
    # the slices are the account's, each instant of a step in one of them: the claims within them are disjoint, and
    # together within the steps' time outside compute and exposed communication
    assert sum(claims.values()) <= 1.0 - mean_share("compute", "communication") + SLACK, claims
    # and every in-window idle gap of gpu_analysis went to one class: the classes add up to the idle time
    for label, rank in doc["ranks"].items():
        gaps = rank["gpu_analysis"]["idle_gaps_ms"]
        window = rank["gpu"]["window_idle_ms"]
        assert sum(gaps.values()) == pytest.approx(window, rel=1e-6, abs=1e-6), label


def test_every_gap_after_a_pageable_copy_is_the_copys():
    """kineto-resnet50-num-workers-4 (torch 1.8, V100): each step copies the images and labels from pageable memory
    (cudaMemcpyAsync, then the cudaStreamSynchronize torch calls inside aten::copy_): the GPU idle gaps that begin
    while the host is in them are the copies' (the account's memory_copies), none the synchronisations' (host_blocked),
    and gpu_analysis gives the same gaps to the copies: the host-sync cause has nothing left to claim."""
    folder = need(RAW / "kineto-resnet50-num-workers-4")
    trace = read_trace(sorted(folder.glob("*.pt.trace.json.gz"))[0])
    steps = steps_of(trace)
    account, ga = step_account(trace, steps), gpu_analyses(trace, steps)
    assert account["slices_ms"]["host_blocked"] == 0.0  # 2.84 ms of copies' gaps were here, the syncs' by name
    assert account["slices_ms"]["memory_copies"] > ga["memcpy"]["pageable_htod"]["exposed_ms"] + 2.0
    assert ga["idle_gaps_ms"]["after_sync"] == 0.0 and ga["idle_gaps_ms"]["after_pageable_copy"] > 2.0
    assert ga["sync"]["per_step"] == 2.0  # the two copies' synchronisations are still counted as such


def _copies_alone(source: Path, folder: Path) -> None:
    """A trace made of the real trace's own events: in each of its steps, the window from the images' copy call's
    return (its synchronisation begins) to the end of the first kernel after both copies have landed, as the step;
    every event that overlaps the window kept as it is. What is left of each step is the copies, the host blocked in
    their synchronisations and the GPU idle after them."""
    doc = json.loads(gzip.open(source).read())
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    calls = {e["args"]["correlation"]: e for e in events
             if e.get("cat") == "Runtime" and "correlation" in e.get("args", {})}
    gpu = sorted((e for e in events if e.get("cat") in ("Kernel", "Memcpy", "Memset")), key=lambda e: e["ts"])
    copies = [e for e in events if e["name"] == "Memcpy HtoD (Pageable -> Device)"]
    kept = []
    for step in (e for e in events if e["name"].startswith("ProfilerStep#")):
        mine = [c for c in copies if step["ts"] <= c["ts"] < step["ts"] + step["dur"]]
        if not mine:
            continue
        call = calls[mine[0]["args"]["correlation"]]
        lo = call["ts"] + call["dur"]
        landed = max(c["ts"] + c["dur"] for c in mine)
        after = next(g for g in gpu if g["ts"] >= landed and g.get("cat") == "Kernel")
        hi = after["ts"] + after["dur"]
        kept += [e for e in events if e["ts"] < hi and e["ts"] + e["dur"] > lo and not e["name"].startswith("ProfilerStep#")]
        kept.append({**step, "ts": lo, "dur": hi - lo})
    (folder / "worker0.pt.trace.json").write_text(json.dumps({**doc, "traceEvents": kept}))


def test_a_pageable_copy_that_blocks_the_host_is_one_finding_with_the_copys_fix(tmp_path):
    """Built from kineto-resnet50-num-workers-4's own events (_copies_alone): two pageable copies a step, each
    followed by its synchronisation, the GPU idle while the host waits in it. Before, the gaps were host-sync's
    (2 synchronisations a step, 20 % of the steps, "accumulate losses as tensors": the wrong fix) and the copies
    were priced over the whole trace, 3.16 ms a step in steps of 0.53 ms; now one finding, the copy's: pinned memory
    and non_blocking, within the steps' memory_copies slice."""
    source = need(RAW / "kineto-resnet50-num-workers-4") / "worker0.1623212756351.pt.trace.json.gz"
    _copies_alone(source, tmp_path)
    doc, _ = analyze_job(find_traces(tmp_path))
    diagnosis = _diagnose(doc)
    gpu = [f for f in diagnosis.findings if f.cause in GPU_CAUSES]
    assert [f.cause for f in gpu] == ["pageable-memcpy"], [(f.cause, f.share) for f in diagnosis.findings]
    finding = gpu[0]
    assert "pin_memory=True" in finding.fix and "non_blocking=True" in finding.fix
    rank = next(iter(doc["ranks"].values()))
    account = rank["account"]
    assert account["slices_ms"]["host_blocked"] == 0.0
    steps = account["steps"]
    per_step_copies = np.mean(account["per_step_ms"]["memory_copies"])
    assert finding.metrics["per_step_ms"] <= per_step_copies + SLACK
    # the copies and the GPU idle while the host was in them are nearly all of these steps
    assert account["slices_ms"]["memory_copies"] >= 0.95 * account["step_ms"] and steps == 6
    assert rank["gpu_analysis"]["sync"]["per_step"] == 2.0
