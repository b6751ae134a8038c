"""SageMaker jobs -> where their profiler data and ProfilerReport rule outputs live in S3.

A training job (DescribeTrainingJob) gives:
* raw profiler data: ``<ProfilerConfig.S3OutputPath>/<job>/profiler-output/`` (falls back to
  ``OutputDataConfig.S3OutputPath``, which the SageMaker SDK uses when no ProfilerConfig is given);
* the ProfilerReport rule (``RuleParameters.rule_to_invoke == "ProfilerReport"``, else a name starting with
  ``ProfilerReport``), its evaluation status, and its output
  ``<OutputDataConfig.S3OutputPath>/<job>/rule-output/<RuleConfigurationName>/``;
* instance type and count, and whether the job (or its rule job) is still running.

A ProfilerReport processing job (DescribeProcessingJob) is linked to its training job by, in order:
its ``TrainingJobArn``; the ``.../<job>/rule-output/...`` or ``.../<job>/profiler-output`` S3 URIs of its
inputs/outputs; or ListTrainingJobs(NameContains=<first 26 characters of its name>) keeping the job whose
rule evaluation statuses name this processing job's ARN.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from reportgen.errors import InputError
from reportgen.sources.arn import JOB_NAME_RE, SageMakerArn, parse_arn
from reportgen.sources.aws import aws_errors, is_not_found
from reportgen.sources.s3 import S3Uri, parse_s3_uri

RUNNING_STATUSES = frozenset({"InProgress", "Stopping"})
PROFILER_REPORT = "ProfilerReport"
TRAINING_NAME_PREFIX_LEN = 26  # rule-job names start with the first 26 characters of the training job name
MAX_TRAINING_CANDIDATES = 50


@dataclass(frozen=True)
class RuleJob:
    """One ProfilerReport rule evaluation of a training job."""

    name: str
    status: str | None = None
    status_details: str | None = None
    processing_job_arn: str | None = None


@dataclass(frozen=True)
class JobInfo:
    """What a job says about its profiler data; S3 URIs are candidates, listed by the caller."""

    kind: str  # "training-job" | "processing-job"
    name: str  # the job the user named
    region: str
    training_job_name: str | None = None
    training_job_status: str | None = None
    processing_job_name: str | None = None
    processing_job_status: str | None = None
    instance_type: str | None = None
    instance_count: int | None = None
    raw_uri: S3Uri | None = None
    rule_output_uris: tuple[S3Uri, ...] = ()  # most likely first
    rule: RuleJob | None = None
    incomplete: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    hyperparameters: tuple[tuple[str, str], ...] = ()  # the training job's HyperParameters, as (name, value) text


def _s3(uri: str | None) -> S3Uri | None:
    if not uri or not str(uri).lower().startswith("s3://"):
        return None
    try:
        return parse_s3_uri(str(uri))
    except InputError:
        return None


def _instances(desc: dict[str, Any]) -> tuple[str | None, int | None]:
    resources = desc.get("ResourceConfig") or {}
    groups = resources.get("InstanceGroups") or []
    if groups:  # heterogeneous cluster
        types = sorted({g.get("InstanceType") for g in groups if g.get("InstanceType")})
        count = sum(int(g.get("InstanceCount") or 0) for g in groups)
        return (", ".join(types) or None), (count or None)
    count = resources.get("InstanceCount")
    return resources.get("InstanceType"), (int(count) if count is not None else None)


def _is_profiler_report(config: dict[str, Any]) -> bool:
    params = config.get("RuleParameters") or {}
    return params.get("rule_to_invoke") == PROFILER_REPORT


def _pick_rule(desc: dict[str, Any], processing_arn: str | None = None) -> RuleJob | None:
    configs = desc.get("ProfilerRuleConfigurations") or []
    statuses = desc.get("ProfilerRuleEvaluationStatuses") or []
    by_name = {s.get("RuleConfigurationName"): s for s in statuses}
    chosen: dict[str, Any] | None = None
    if processing_arn:  # the rule evaluated by the processing job we were given
        for status in statuses + (desc.get("DebugRuleEvaluationStatuses") or []):
            if str(status.get("RuleEvaluationJobArn", "")).lower() == processing_arn.lower():
                chosen = status
                break
    if chosen is None:
        names = [c["RuleConfigurationName"] for c in configs if _is_profiler_report(c)]
        names += [
            n
            for n in [c.get("RuleConfigurationName") for c in configs] + list(by_name)
            if n and n.lower().startswith(PROFILER_REPORT.lower()) and n not in names
        ]
        if not names:
            return None
        chosen = by_name.get(names[0]) or {"RuleConfigurationName": names[0]}
    return RuleJob(
        name=chosen["RuleConfigurationName"],
        status=chosen.get("RuleEvaluationStatus"),
        status_details=chosen.get("StatusDetails"),
        processing_job_arn=chosen.get("RuleEvaluationJobArn"),
    )


def training_info_from_description(desc: dict[str, Any], region: str, processing_arn: str | None = None) -> JobInfo:
    """Interpret a DescribeTrainingJob response (pure; no AWS calls)."""
    name = desc["TrainingJobName"]
    status = desc.get("TrainingJobStatus")
    notes: list[str] = []
    instance_type, instance_count = _instances(desc)

    output_base = _s3((desc.get("OutputDataConfig") or {}).get("S3OutputPath"))
    profiler = desc.get("ProfilerConfig") or {}
    raw_uri = None
    if desc.get("ProfilingStatus") == "Disabled" or profiler.get("DisableProfiler"):
        notes.append("profiling is disabled for this training job (ProfilingStatus: Disabled)")
    else:
        base = _s3(profiler.get("S3OutputPath")) or output_base
        if base is not None:
            raw_uri = base.child(name, "profiler-output").as_prefix()

    rule = _pick_rule(desc, processing_arn)
    rule_uris: list[S3Uri] = []
    if rule is None:
        notes.append("the training job has no ProfilerReport rule")
    else:
        if output_base is not None:
            rule_uris.append(output_base.child(name, "rule-output", rule.name).as_prefix())
        for config in desc.get("ProfilerRuleConfigurations") or []:
            explicit = _s3(config.get("S3OutputPath")) if config.get("RuleConfigurationName") == rule.name else None
            if explicit is not None and explicit.as_prefix() not in rule_uris:
                rule_uris.append(explicit.as_prefix())
        if rule.status in RUNNING_STATUSES:
            notes.append(f"rule {rule.name} is still {rule.status}: its outputs may be partial")
        elif rule.status == "Error":
            notes.append(f"rule {rule.name} ended in Error: {rule.status_details or 'no details'}")
    if status in RUNNING_STATUSES:
        notes.append(f"training job is {status}: data so far only")
    incomplete = status in RUNNING_STATUSES or (rule is not None and rule.status in RUNNING_STATUSES)
    return JobInfo(
        kind="training-job",
        name=name,
        region=region,
        training_job_name=name,
        training_job_status=status,
        instance_type=instance_type,
        instance_count=instance_count,
        raw_uri=raw_uri,
        rule_output_uris=tuple(rule_uris),
        rule=rule,
        incomplete=incomplete,
        notes=tuple(notes),
        hyperparameters=_hyperparameters(desc.get("HyperParameters")),
    )


def _hyperparameters(value) -> tuple[tuple[str, str], ...]:
    """DescribeTrainingJob's ``HyperParameters`` (a map of text to text) as (name, value) pairs; anything else:
    none."""
    if not isinstance(value, dict):
        return ()
    return tuple((k, v) for k, v in value.items() if isinstance(k, str) and isinstance(v, str))


def describe_training_job(sm: Any, name: str, region: str, processing_arn: str | None = None) -> JobInfo:
    """DescribeTrainingJob(name) -> :class:`JobInfo`; a missing job is a one-line InputError."""
    from botocore.exceptions import ClientError

    with aws_errors(f"describing training job {name!r} in {region}"):
        try:
            desc = sm.describe_training_job(TrainingJobName=name)
        except ClientError as err:
            if is_not_found(err):
                raise InputError(f"Training job {name!r} not found in region {region}.") from None
            raise
    return training_info_from_description(desc, region, processing_arn)


def _uris_of_processing_job(desc: dict[str, Any]) -> tuple[list[str], list[str]]:
    inputs = [((i.get("S3Input") or {}).get("S3Uri") or "") for i in desc.get("ProcessingInputs") or []]
    outputs = [((o.get("S3Output") or {}).get("S3Uri") or "") for o in (desc.get("ProcessingOutputConfig") or {}).get("Outputs") or []]
    return [u for u in inputs if u], [u for u in outputs if u]


def _split_at(uri: str, marker: str) -> tuple[str, str] | None:
    """``s3://b/base/<job>/<marker>/...`` -> (``s3://b/base/<job>/<marker>``, ``<job>``)."""
    parts = uri.rstrip("/").split("/")
    for i, part in enumerate(parts):
        if part == marker and i >= 4 and JOB_NAME_RE.match(parts[i - 1]):
            return "/".join(parts[: i + 1]), parts[i - 1]
    return None


def _find_training_job_by_listing(sm: Any, arn: SageMakerArn) -> str | None:
    """ListTrainingJobs by name prefix, keep the one whose rule statuses name ``arn``."""
    prefix = arn.name[:TRAINING_NAME_PREFIX_LEN].rstrip("-")
    checked = 0
    with aws_errors(f"listing training jobs named like {prefix!r} in {arn.region}"):
        paginator = sm.get_paginator("list_training_jobs")
        for page in paginator.paginate(NameContains=prefix):
            for summary in page.get("TrainingJobSummaries", []):
                name = summary["TrainingJobName"]
                if not name.startswith(prefix):
                    continue
                checked += 1
                if checked > MAX_TRAINING_CANDIDATES:
                    return None
                desc = sm.describe_training_job(TrainingJobName=name)
                statuses = (desc.get("ProfilerRuleEvaluationStatuses") or []) + (desc.get("DebugRuleEvaluationStatuses") or [])
                if any(str(s.get("RuleEvaluationJobArn", "")).lower() == arn.arn.lower() for s in statuses):
                    return name
    return None


def describe_processing_job(sm: Any, arn: SageMakerArn) -> JobInfo:
    """DescribeProcessingJob -> :class:`JobInfo`, joined with its training job when it can be found."""
    from botocore.exceptions import ClientError

    name = arn.name
    with aws_errors(f"describing processing job {name!r} in {arn.region}"):
        try:
            desc = sm.describe_processing_job(ProcessingJobName=name)
        except ClientError as err:
            if is_not_found(err):
                raise InputError(f"Processing job {name!r} not found in region {arn.region}.") from None
            raise
    status = desc.get("ProcessingJobStatus")
    inputs, outputs = _uris_of_processing_job(desc)
    notes: list[str] = []

    raw_uri = rule_uri = None
    training_name = None
    for uri in inputs + outputs:
        hit = _split_at(uri, "profiler-output")
        if hit and raw_uri is None and uri in inputs:
            raw_uri, training_name = _s3(hit[0]), training_name or hit[1]
        hit = _split_at(uri, "rule-output")
        if hit and rule_uri is None and uri in outputs:
            rule_uri, training_name = _s3(uri), training_name or hit[1]

    training_arn = desc.get("TrainingJobArn")
    if training_arn:
        try:
            training_name = parse_arn(training_arn).name
        except InputError:
            pass
    if training_name is None:
        training_name = _find_training_job_by_listing(sm, arn)

    training: JobInfo | None = None
    if training_name is not None:
        try:
            training = describe_training_job(sm, training_name, arn.region, processing_arn=arn.arn)
        except InputError as err:
            if "not found" not in str(err):
                raise
            notes.append(f"training job {training_name!r} not found; using the processing job's S3 locations only")
    else:
        notes.append("could not find the training job of this processing job; instance type unknown")

    rule_uris: list[S3Uri] = [rule_uri.as_prefix()] if rule_uri else []
    if training is not None:
        rule_uris += [u for u in training.rule_output_uris if u not in rule_uris]
        raw_uri = raw_uri or training.raw_uri
        notes += list(training.notes)
    raw_uri = raw_uri.as_prefix() if raw_uri else None
    if not rule_uris and raw_uri is None:
        raise InputError(
            f"Processing job {name!r} names no profiler S3 locations and its training job could not be found; "
            "give the training job or an s3:// URI instead."
        )
    running = status in RUNNING_STATUSES
    if running:
        notes.append(f"processing job is {status}: rule outputs may be partial")
    base = training or JobInfo(kind="processing-job", name=name, region=arn.region)
    return replace(
        base,
        kind="processing-job",
        name=name,
        processing_job_name=name,
        processing_job_status=status,
        raw_uri=raw_uri,
        rule_output_uris=tuple(rule_uris),
        incomplete=running or base.incomplete,
        notes=tuple(dict.fromkeys(notes)),
    )
