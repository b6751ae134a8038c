"""One run of a comparison: its own report, built exactly as ``generate`` builds it, plus its instances.

The comparison sections only read these reports' section ``data``, so a comparison's numbers are
each side's own report's numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reportgen.compare import traces
from reportgen.compare.traces import TraceSummary
from reportgen.compare.batch import BatchSize, batch_size_of
from reportgen.compare.output import RunMeta
from reportgen.compare.work import Work, work_of
from reportgen.report.build import build_report
from reportgen.report.efficiency import RunEfficiency
from reportgen.report.json_views import TrainingLoop
from reportgen.report.model import Report
from reportgen.report.views import JobSummary
from reportgen.rule_outputs import RuleOutputs, command_line, load_rule_outputs
from reportgen.section_ids import SectionId


@dataclass
class Side:
    """One run: its own report (built as ``generate`` builds it) plus what is known about its instances."""

    label: str  # "A" or "B"
    name: str
    source: str
    description: str
    report: Report
    outputs: RuleOutputs
    instance_type: str | None = None
    instance_count: int | None = None
    instance_from: str = ""
    region: str | None = None
    notes: list[str] = field(default_factory=list)
    batch_size: BatchSize | None = None  # given on the command line (--batch-size-a/-b) or by the job

    def batch(self) -> BatchSize | None:
        """This run's batch size where something says it (``compare.batch``), else None."""
        return batch_size_of(self.batch_size, self.outputs.recording)

    def data(self, section_id: str) -> dict:
        try:
            return self.report.section(section_id).data
        except KeyError:
            return {}

    def sections(self) -> dict:
        """Every section's data by id, as the run's report.json holds them."""
        return {section.id: section.data for section in self.report.sections}

    def available(self, section_id: str) -> bool:
        data = self.data(section_id)
        return bool(data) and data.get("available") is not False

    def work(self) -> Work | None:
        """This run's work in training steps, counted, given by its command or estimated, with its batch size
        where known (``compare.work``)."""
        diagnosis = self.report.diagnosis
        found = work_of(self.sections(), TrainingLoop.of_diagnosis(diagnosis.to_data()) if diagnosis else None,
                        command_line(self.outputs.recording))
        batch = self.batch()
        return found.with_batch(batch.value) if found is not None and batch is not None else found

    def traces(self) -> TraceSummary | None:
        """This run's PyTorch profiler traces summarised (``compare.traces``), None without steps."""
        return traces.summarize(self.outputs.traces, self.summary().job_duration_s)

    def efficiency(self) -> RunEfficiency:
        """TFLOP/s, MFU and the memory peaks of this run's traces (``report.efficiency``)."""
        return RunEfficiency.of_sections(self.sections())

    def summary(self) -> JobSummary:
        """The training job summary's numbers (``report.views.JobSummary``)."""
        return JobSummary.of(self.data(SectionId.TRAINING_JOB_SUMMARY))

    def meta(self) -> RunMeta:
        return RunMeta(self.label, self.name, self.source, self.description, self.instance_type, self.instance_count,
                       self.instance_from or None, self.region)


def load_side(label: str, rule_dir: str | Path, *, name: str = "", source: str = "", description: str = "",
              instance_type: str | None = None, instance_count: int | None = None, instance_from: str = "",
              region: str | None = None, notes: list[str] | None = None, batch: BatchSize | None = None) -> Side:
    outputs = load_rule_outputs(Path(rule_dir))
    report = build_report(outputs, job_name=name, extra_notes=notes)
    return Side(label, name or Path(rule_dir).name, source or str(rule_dir), description, report, outputs,
                instance_type or None, int(instance_count) if instance_count else None, instance_from,
                region or None, list(notes or []), batch)
