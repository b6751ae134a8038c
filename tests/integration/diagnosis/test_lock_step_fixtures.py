"""The lock-step straggler (diagnosis/straggler_account.lock_step_straggler) on the real data with several workers and
on single-worker jobs: none of them has one. The multi-worker ones either record their collectives (the straggler is
told from them: torch-cpu-record-ddp2's rank 0) or do equal work (sample_data's two processes, hta-sampled-128rank's
two ranks): their work, step less slack, within the margin even where the collectives are looked past."""

from __future__ import annotations

import statistics

import pytest

from reportgen.diagnosis import diagnose
from reportgen.diagnosis.account_causes import accounts
from reportgen.diagnosis.slow_step_story import SLICE_TITLES
from reportgen.diagnosis.straggler_account import SLACK, WORK_GAP, lock_step_straggler
from reportgen.pipeline import analyze as analyze_source
from reportgen.rule_outputs import load_rule_outputs
from tests.support.paths import RAW, RECORDINGS, SAMPLE_DATA, need

SEVERAL = {"sample_data": SAMPLE_DATA, "torch-cpu-record-ddp2": RAW / "torch-cpu-record-ddp2",
           "hta-sampled-128rank": RAW / "hta-sampled-128rank"}
ONE = {"hta-trace-diff-rank3of8": RAW / "hta-trace-diff-rank3of8",
       "kineto-resnet50-num-workers-0": RAW / "kineto-resnet50-num-workers-0",
       "h100-host-sync": RECORDINGS / "gpu-host-sync" / "h100-host-sync",
       "smdebug-horovod-timeline": RAW / "smdebug-horovod-timeline"}


def _diagnosis(folder, tmp_path):
    return diagnose(load_rule_outputs(analyze_source(str(need(folder)), tmp_path / "o")))


@pytest.mark.parametrize("name", sorted(SEVERAL))
def test_workers_doing_equal_work_or_recording_their_collectives_have_no_lock_step_straggler(name, tmp_path):
    diagnosis = _diagnosis(SEVERAL[name], tmp_path)
    found = accounts(diagnosis.evidence)
    assert len(found) >= 2
    assert lock_step_straggler(found, SLICE_TITLES, "ranks") is None
    work = {label: statistics.median(a.step_durations_ms()) - statistics.median(a.per_step_ms[SLACK] or (0.0,))
            for label, a in found.items()}
    steps = {label: statistics.median(a.step_durations_ms()) for label, a in found.items()}
    assert (max(work.values()) - min(work.values())) / max(steps.values()) < WORK_GAP  # balanced by their work
    assert not [f for f in diagnosis.findings if f.cause == "straggler" and f.metrics.get("method") == "busy time"]
    if name == "torch-cpu-record-ddp2":  # its straggler stays the one its collectives tell
        (straggler,) = [f for f in diagnosis.findings if f.cause == "straggler"]
        assert straggler.metrics["who"] == "rank 0" and "method" not in straggler.metrics


@pytest.mark.parametrize("name", sorted(ONE))
def test_a_single_worker_never_has_one(name, tmp_path):
    diagnosis = _diagnosis(ONE[name], tmp_path)
    assert len(accounts(diagnosis.evidence)) <= 1
    assert lock_step_straggler(accounts(diagnosis.evidence), SLICE_TITLES, "ranks") is None
    assert "straggler" not in [f.cause for f in diagnosis.findings]
