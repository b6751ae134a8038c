"""Typed views of report.json's own parts as reportgen writes them (``notebook.report_data``): the job, the
generator, the diagnosis and its findings, and the few section values the CI outputs, ``check --base`` and
``trend`` read besides the section views of ``report/views.py``.

These readers take a report.json from disk, of any 1.x version and possibly damaged, so every view takes
anything: a missing key or a value of the wrong type is None (numbers through ``json_values.given``: an
integer of 400 digits or a NaN is no number), a finding that is not an object is skipped.
``load_report_json`` is the one reader of a report.json file (``check``, ``check --base``, ``trend``): it
refuses outright (exit code 2) what no view can use: no ``sections`` object, a part that must be an object
and is not, another schema version, a rules table unfit to gate on. docs/architecture.md ("Typed contracts")
lists the views.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reportgen.errors import InputError
from reportgen.json_file import JsonFileError, read_json_file
from reportgen.json_values import as_items, as_object, finite, given
from reportgen.section_ids import SectionId
from reportgen.terminal_text import printable


def _text(value: object) -> str:
    """A value as the CI outputs print it: "" for none, else its ``str``."""
    return "" if value is None else str(value)


@dataclass(frozen=True)
class Risk:
    """A risk finding's ``impact.risk`` (memory that grows): no time lost yet, the numbers of the growth."""

    per_step_bytes_listed: bool = False  # the key is there (its value may be no number: shown as "?")
    per_step_bytes: float | None = None
    time_to_full_s: float | None = None
    peak_pct: float | None = None
    peak_activity_pct: float | None = None

    @classmethod
    def of(cls, data: dict[str, Any]) -> Risk:
        return cls("per_step_bytes" in data, given(data.get("per_step_bytes")), given(data.get("time_to_full_s")),
                   given(data.get("peak_pct")), given(data.get("peak_activity_pct")))


@dataclass(frozen=True)
class Impact:
    """A finding's ``impact``: its share of the job (or of the profiled steps), seconds, cost; or a risk."""

    share: float | None = None
    seconds: float | None = None
    cost: float | None = None
    loop_share: float | None = None
    share_of: str | None = None  # "profiled steps" when the share is of the traces' steps, not of the job
    risk: Risk | None = None

    @classmethod
    def of(cls, value: object) -> Impact:
        data = as_object(value)
        risk = data.get("risk")
        share_of = data.get("share_of")
        return cls(given(data.get("share")), given(data.get("seconds")), given(data.get("cost")),
                   given(data.get("loop_share")), share_of if isinstance(share_of, str) else None,
                   Risk.of(risk) if isinstance(risk, dict) else None)


@dataclass(frozen=True)
class Finding:
    """One finding of report.json's diagnosis (``diagnosis.findings``): its cause, texts, rules and impact.
    Texts as the CI outputs print them (``str`` of the value, "" when absent); ``serious`` only when a bool
    (a report.json written before the field has None: ``ci_outputs.serious`` judges it from the impact)."""

    cause: str
    title: str = ""
    fix: str = ""
    evidence: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    serious: bool | None = None
    impact: Impact = Impact()

    @classmethod
    def of(cls, data: dict[str, Any]) -> Finding:
        serious = data.get("serious")
        return cls(_text(data.get("cause")), _text(data.get("title")), _text(data.get("fix")),
                   tuple(_text(e) for e in as_items(data.get("evidence"))),
                   tuple(_text(r) for r in as_items(data.get("rules"))),
                   serious if isinstance(serious, bool) else None, Impact.of(data.get("impact")))

    @property
    def headline(self) -> str:
        """The title, else the cause."""
        return self.title or self.cause


@dataclass(frozen=True)
class Diagnosis:
    """report.json's ``diagnosis``: the status and the findings that name a cause, in the report's order."""

    status: str = ""
    status_given: object = None  # the status as written (``check --base`` refuses one that is not text)
    findings: tuple[Finding, ...] = ()

    @classmethod
    def of(cls, data: dict[str, Any]) -> Diagnosis:
        status = data.get("status")
        return cls(_text(status), status, tuple(Finding.of(f) for f in as_items(data.get("findings"))
                                                if isinstance(f, dict) and f.get("cause")))


@dataclass(frozen=True)
class TrainingLoop:
    """A recording's training loop as the diagnosis measured it (``diagnosis.loop``): ``seconds`` is the loop less
    the profiler's export, what ``compare`` divides by the profiled steps' mean step to estimate the steps run."""

    seconds: float

    @classmethod
    def of_diagnosis(cls, diagnosis: object) -> TrainingLoop | None:
        """From report.json's ``diagnosis`` (or ``Diagnosis.to_data()``); None without a loop of some seconds."""
        seconds = finite(as_object(as_object(diagnosis).get("loop")).get("seconds"))
        return cls(seconds) if seconds is not None and seconds > 0 else None

    @classmethod
    def of_report(cls, data: object) -> TrainingLoop | None:
        """From a whole report.json's data."""
        return cls.of_diagnosis(as_object(data).get("diagnosis"))


@dataclass(frozen=True)
class ReportJson:
    """A report.json's parts that the CI outputs, the regression gate and ``trend`` read, typed; ``sections``
    is each section's data by id as written (read through the section views: ``report/views.py``,
    ``report/efficiency.py``), an empty dict when the file has none as an object."""

    sections: dict[str, Any]
    schema_version: str = ""
    job_name: str = ""
    incomplete: bool = False  # the job was still running when the report was made
    reportgen_version: str = ""
    generated_at: str = ""
    diagnosis: Diagnosis | None = None  # None for a report.json written before the diagnosis
    currency: str = "USD"  # the cost section's price table's
    cost: float | None = None  # the cost section's total
    duration_listed: bool = False  # the job summary is available and lists ``job_duration_s`` (a number or not)
    duration_given: object = None  # ``job_duration_s`` as written (``check --base`` checks its range)
    data_quality_problems: int = 0  # problems while reading the input (data quality section)

    @classmethod
    def of(cls, data: object) -> ReportJson:
        """The view of a report.json's data (as ``json.load`` gives it, or ``notebook.report_data``'s)."""
        if isinstance(data, ReportJson):
            return data
        top = as_object(data)
        sections = as_object(top.get("sections"))
        job, generator, diagnosis = (top.get(key) for key in ("job", "generator", "diagnosis"))
        job, generator = as_object(job), as_object(generator)
        summary = as_object(sections.get(SectionId.TRAINING_JOB_SUMMARY))
        cost = as_object(sections.get(SectionId.COST))
        return cls(sections, _text(top.get("schema_version")), _text(job.get("name")), bool(job.get("incomplete")),
                   _text(generator.get("version")), _text(generator.get("generated_at")),
                   Diagnosis.of(diagnosis) if isinstance(diagnosis, dict) else None,
                   _text(as_object(cost.get("prices")).get("currency")) or "USD", given(cost.get("cost")),
                   summary.get("available") is not False and "job_duration_s" in summary,
                   summary.get("job_duration_s"), problems_of(sections.get(SectionId.DATA_QUALITY)))

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.diagnosis.findings if self.diagnosis is not None else ()

    @property
    def status(self) -> str:
        """The diagnosis' status ("" without a diagnosis)."""
        return self.diagnosis.status if self.diagnosis is not None else ""


def problems_of(data_quality: object) -> int:
    """The data quality section's count of problems met while reading the input (0 when it lists none)."""
    problems = as_object(data_quality).get("problems")
    return problems if isinstance(problems, int) and not isinstance(problems, bool) else 0


@dataclass(frozen=True)
class JobCpu:
    """A ``reportgen record`` run on a shared host: the recorded command's own CPU (% of the host's cores,
    the system usage section's ``recorded_command``), which ``generate`` judges the run by."""

    p50: float | None
    p95: float

    @classmethod
    def of_sections(cls, sections: object) -> JobCpu | None:
        """From a run's section data by id; None unless the host was shared and the p95 is a number (the
        host's CPU is then the job's)."""
        usage = as_object(as_object(sections).get(SectionId.SYSTEM_USAGE_STATISTICS))
        command = as_object(usage.get("recorded_command"))
        p95 = finite(command.get("job_cpu_pct_of_host_p95"))
        if command.get("host_shared") is not True or p95 is None:
            return None
        return cls(finite(command.get("job_cpu_pct_of_host_p50")), p95)


@dataclass(frozen=True)
class OperatorRow:
    """One row of the CPU or GPU operators overview (OverallFrameworkMetrics' operators by share of time)."""

    operator: str | None = None  # the name as text
    percentage: float | None = None


@dataclass(frozen=True)
class OperatorTable:
    """The CPU or GPU operators overview's ``rows``: as written (compare.json keeps them so) and as viewed (a
    row that is not an object is skipped), in the report's order."""

    written: list[Any]
    rows: tuple[OperatorRow, ...] = ()

    @classmethod
    def of(cls, data: object) -> OperatorTable:
        written = as_items(as_object(data).get("rows"))
        return cls(written, tuple(OperatorRow(None if r.get("operator") is None else str(r.get("operator")),
                                              given(r.get("percentage"))) for r in written if isinstance(r, dict)))


# ------------------------------------------------------------------------------------------ the reader


def load_report_json(path: Path | str) -> dict[str, Any]:
    """Read a report.json; anything we cannot use is a one-line InputError (exit code 2)."""
    path = Path(path)
    try:
        data = read_json_file(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read ({err.strerror or err})") from None
    except JsonFileError as err:
        raise InputError(f"{path}: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("sections"), dict):
        raise InputError(f"{path}: not a reportgen report.json (no 'sections' object)")
    damage = _damage(data)
    if damage:
        raise InputError(f"{path}: damaged report.json: {damage}")
    version = str(data.get("schema_version", ""))
    if version.split(".")[0] != "1":
        raise InputError(f"{path}: schema_version {version or '(none)'} is not supported (expected 1.x)")
    problem = rules_table_problem(data)
    if problem:
        raise InputError(f"{path}: damaged report.json: {problem}")
    return data


_COUNTS = ("times_triggered", "violations", "datapoints")


def _damage(data: dict[str, Any]) -> str | None:
    """What makes a report.json (an object with a ``sections`` object) unfit for the CI outputs, or None:
    a job, generator, diagnosis or section that is not an object, or a rules table unfit to gate on."""
    for key in ("job", "generator", "diagnosis"):  # what the CI outputs read besides the sections
        if key in data and data[key] is not None and not isinstance(data[key], dict):
            return f"'{key}' is a {json_type(data[key])}, not an object"
    for key, section in data["sections"].items():
        if section is not None and not isinstance(section, dict):
            return f"section '{key}' is a {json_type(section)}, not an object"
    return None


def rules_table_problem(data: dict[str, Any]) -> str | None:
    """What makes the rules table unfit to gate on, or None. ``check`` fails closed: a table whose rows were
    replaced by ``[1, "x", null]`` or removed used to pass ``--fail-on any`` with a JUnit file of 0 tests.
    The schema says the section is always there, and has rows unless it says ``available: false``."""
    from reportgen.diagnosis.evaluation import STATES  # the diagnosis package (1.5 s) only once a file is read

    section = data["sections"].get(SectionId.RULES_SUMMARY_SECTION)
    if section is None:
        return "the rules summary section (rules-summary-section) is missing"
    if section.get("available") is False:
        return None
    rows = section.get("rows")
    if not isinstance(rows, list) or not rows:
        return "the rules summary has no rows, and does not say it is unavailable"
    for number, row in enumerate(rows, 1):
        where = f"rules summary row {number}"
        if not isinstance(row, dict):
            return f"{where} is a {json_type(row)}, not an object"
        if not isinstance(row.get("rule"), str) or not row["rule"].strip():
            return f"{where} has no rule name"
        for key in _COUNTS:
            value = row.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    isinstance(value, int) or (math.isfinite(value) and value.is_integer())) or value < 0:
                return f"{where} ({printable(row['rule'])}): {key} is {printable(json.dumps(value))[:40]}, not a count"
        status = row.get("status")
        if status is not None and status not in (*STATES, "no_data"):
            return f"{where} ({printable(row['rule'])}): unknown status {printable(json.dumps(status))[:40]}"
    return None


def json_type(value: object) -> str:
    """A JSON value's type in the words of a damage message."""
    return {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), "value")
