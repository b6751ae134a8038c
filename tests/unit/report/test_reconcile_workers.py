"""The Dataloading box agrees with At a glance: no "consider more workers" under "the cores are the limit"."""

from __future__ import annotations

from types import SimpleNamespace

from reportgen.report.model import Report, Section, Text
from reportgen.report.reconcile import reconcile

ADVICE = ("The instance has 4 cores, but on average only 2 data-loading workers ran in parallel: consider more "
          "workers. Pinned memory was off: setting pin_memory=True speeds up host-to-GPU copies.")


def _report(fix: str) -> Report:
    finding = SimpleNamespace(cause="input-pipeline", counts=False, title="The input pipeline starves the GPUs",
                              fix=fix, sections=[], evidence=[], metrics={})
    diagnosis = SimpleNamespace(findings=[finding], evidence=SimpleNamespace(states={}, loop=None, loop_s=None, trace_only=False))
    section = Section("dataloading-analysis", "Dataloading analysis", blocks=[Text(ADVICE, tone="finding")])
    return Report(job_name="job", sections=[section], diagnosis=diagnosis)


def test_more_workers_advice_gives_way_to_the_cores_limit():
    report = _report("The cores are the limit: 4 cores per node leave 1 data-loading worker to each of 2 training "
                     "processes. Make samples cheaper to prepare (cached decoding, lighter augmentation); set "
                     "pin_memory=True.")
    reconcile(report)
    (text,) = [b.text for b in report.sections[0].blocks]
    assert text == ("The instance has 4 cores, but on average only 2 data-loading workers ran in parallel [At a "
                    "glance: the cores are the limit, 4 cores per node leave 1 data-loading worker to each of 2 "
                    "training processes; more workers would compete with training for them]. Pinned memory was "
                    "off: setting pin_memory=True speeds up host-to-GPU copies.")
    assert "consider more workers" not in text


def test_more_workers_advice_stays_when_at_a_glance_asks_for_more_workers_too():
    report = _report("Raise the DataLoader's num_workers from 1 to 3 (8 cores per node for 2 training processes, one "
                     "core left to each process).")
    reconcile(report)
    assert [b.text for b in report.sections[0].blocks] == [ADVICE]
