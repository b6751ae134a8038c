"""One stall, one price (issue 46): the input-pipeline finding of a SageMaker job against its training processes'
step-time account (framework-account.json), on planted synthetic jobs (testdata.synthetic).

Both jobs plant the same signs in the system metrics: a GPU idle beside a saturated core in over half the samples,
one DataLoader worker on 4 cores. In the first, the framework events say the steps never wait for their batch
(15 ms GetNext calls, as sample_data said before); in the second each step waits ~400 ms for it, and the samples
are exactly those taken during the waits. The same holds for io-bound (training that waits for storage waits in the
loader's calls too), and for cpu-bound (cores too busy to prepare the batches: the steps wait for them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.diagnosis import diagnose
from reportgen.engine import analyze
from reportgen.report.build import build_report
from reportgen.rule_outputs import load_rule_outputs
from reportgen.trace_analysis.framework_account import write_framework_account
from testdata.synthetic import Scenario, generate

STARVED = dict(init_s=20, final_s=2, step_ms=300, gap_ms=10, cpu_bottleneck_fraction=0.55, dataloader_workers=1,
               pin_memory=False)


def _job(root: Path, scenario: dict = STARVED, **planted):
    generate(root / "raw", nodes=1, cores=4, gpus=2, duration_s=600, scenario=Scenario(**scenario, **planted))
    result = analyze(root / "raw", root / "a")
    write_framework_account(result.node_traces, root / "a")
    outputs = load_rule_outputs(result.report_dir)
    return outputs, diagnose(outputs)


@pytest.fixture(scope="module")
def never_waits(tmp_path_factory):
    return _job(tmp_path_factory.mktemp("never-waits"))


@pytest.fixture(scope="module")
def waits(tmp_path_factory):
    return _job(tmp_path_factory.mktemp("waits"), data_wait_ms=400)


def _input_pipeline(diagnosis):
    (finding,) = [f for f in diagnosis.findings if f.cause == "input-pipeline"]
    return finding


def test_samples_that_the_account_contradicts_are_held_to_the_account(never_waits):
    outputs, diagnosis = never_waits
    finding = _input_pipeline(diagnosis)
    ev = diagnosis.evidence
    (account,) = ev.framework.nodes.values()
    waited = account.share("data_wait")  # the GetNext calls: ~10 ms of a ~320 ms step
    assert 0.02 < waited < 0.05
    # the samples alone priced it at over half the job (as sample_data's 51 % before); the account's wait bounds it
    assert finding.metrics["sampled_share"] == pytest.approx(ev.cpu_bn_share) and ev.cpu_bn_share > 0.5
    assert finding.share == pytest.approx(waited * ev.loop_s / ev.duration_s)
    assert finding.seconds == pytest.approx(waited * ev.loop_s)
    assert finding.metrics["account_data_wait_share"] == pytest.approx(waited)
    assert any(e.startswith("the step-time account from the framework events shows the training processes waiting "
                            f"for data {waited * 100:.0f} % of each step (process algo-1-27") and "not the 5" in e
               for e in finding.evidence)
    # the GPUs still idle half the time for another reason: the job is not called healthy, and Data quality says
    # which evidence was set aside and why
    assert finding.counts and diagnosis.status == "problems" and diagnosis.findings[0] is finding
    (note,) = diagnosis.quality_notes
    assert note.startswith(f"input-pipeline: the utilization samples put a GPU idle beside a saturated core for "
                           f"{ev.cpu_bn_share * 100:.0f} % of the job, but the step-time account")
    report = build_report(outputs, job_name="never-waits")
    quality = report.section("data-quality")
    assert note in quality.data["notes"] and note in report.notes


def test_samples_and_account_that_agree_give_one_price(waits):
    outputs, diagnosis = waits
    finding = _input_pipeline(diagnosis)
    ev = diagnosis.evidence
    (account,) = ev.framework.nodes.values()
    waited = account.share("data_wait")
    assert waited == pytest.approx(410 / 720, abs=0.03)  # planted: 10 + 400 ms of every 720 ms
    bound = waited * ev.loop_s / ev.duration_s
    assert finding.share == pytest.approx(min(ev.cpu_bn_share, bound))
    assert abs(ev.cpu_bn_share - bound) < 0.03  # one story: the samples are the waits
    assert finding.share > 0.5 and not diagnosis.quality_notes
    assert not [n for n in build_report(outputs, job_name="waits").notes if n.startswith("input-pipeline:")]


def test_storage_waits_the_account_contradicts_are_held_to_it(tmp_path):
    """io-bound: 45 % of the samples have a core waiting on I/O while the GPUs idle, the steps' GetNext calls take
    10 ms: held to the processes' wait, said in Data quality."""
    outputs, diagnosis = _job(tmp_path, dict(init_s=20, final_s=2, step_ms=300, gap_ms=10, iowait_spike_fraction=0.45,
                                             iowait_stalls_gpu=True, dataloader_workers=6))
    (finding,) = [f for f in diagnosis.findings if f.cause == "io-bound"]
    ev = diagnosis.evidence
    (account,) = ev.framework.nodes.values()
    waited = account.share("data_wait")
    assert ev.io_bn_share > 0.4 and finding.metrics["sampled_share"] == pytest.approx(ev.io_bn_share)
    assert finding.share == pytest.approx(waited * ev.loop_s / ev.duration_s) and finding.share < 0.05
    assert finding.counts and diagnosis.status == "problems"
    (note,) = diagnosis.quality_notes
    assert note.startswith("io-bound: the utilization samples put a GPU idle while a core waited on I/O for "
                           f"{ev.io_bn_share * 100:.0f} % of the job, but the step-time account")


SATURATED = dict(init_s=20, final_s=2, step_ms=300, gap_ms=10, cpu_util=93, cpu_noise=3, dataloader_workers=6)


def test_saturated_cores_the_account_contradicts_are_held_to_it(tmp_path):
    """cpu-bound: every core at ~93 % and the GPUs idle half the time, but the steps' GetNext calls take 10 ms: the
    GPUs do not wait for batches, so the cores' saturation is priced at the processes' wait, said in Data quality."""
    outputs, diagnosis = _job(tmp_path, dict(SATURATED, gpu_idle_fraction=(0.5,)))
    (finding,) = [f for f in diagnosis.findings if f.cause == "cpu-bound"]
    ev = diagnosis.evidence
    (account,) = ev.framework.nodes.values()
    waited = account.share("data_wait")
    assert 0.02 < waited < 0.05
    assert finding.metrics["sampled_share"] > 0.5  # the GPU idle of the samples: its price before
    assert finding.share == pytest.approx(waited * ev.loop_s / ev.duration_s)
    assert finding.counts and diagnosis.status == "problems"
    (note,) = diagnosis.quality_notes
    assert note.startswith("cpu-bound: the utilization samples put the GPUs idle with the cores saturated for "
                           f"{finding.metrics['sampled_share'] * 100:.0f} % of the job, but the step-time account")
    assert note in build_report(outputs, job_name="saturated").notes


def test_saturated_cores_that_starve_the_steps_keep_the_accounts_price(tmp_path):
    """The same cores with each step waiting ~400 ms for its batch: the samples with a saturated core are those waits,
    and the finding's price is the processes' wait, within a point of them."""
    _, diagnosis = _job(tmp_path, SATURATED, data_wait_ms=400)
    (finding,) = [f for f in diagnosis.findings if f.cause == "cpu-bound"]
    ev = diagnosis.evidence
    (account,) = ev.framework.nodes.values()
    bound = account.share("data_wait") * ev.loop_s / ev.duration_s
    assert account.share("data_wait") == pytest.approx(410 / 720, abs=0.03)
    assert finding.share == pytest.approx(bound) and abs(ev.cpu_bn_share - bound) < 0.01
    assert finding.metrics["account_data_wait_share"] == pytest.approx(account.share("data_wait"))
