"""resolve_source against a real local endpoint (moto server): every remote form gives the original bytes."""

from __future__ import annotations

import pytest

from reportgen.sources import resolve_source
from tests.support.sources_testlib import tree

pytestmark = pytest.mark.fixtures


def _assert_rule_outputs(resolved, world):
    assert resolved.rule_output_dir is not None
    assert resolved.rule_output_dir.name == "profiler-reports"
    assert tree(resolved.rule_output_dir) == world.rule_files  # byte-identical, nothing else


def _assert_nothing_else(cache, world):
    names = {p.name for p in cache.rglob("*") if p.is_file()}
    for key in world.other_keys:
        assert key.rsplit("/", 1)[1] not in names  # model, html, ipynb, debug tensors: never downloaded
    assert not [p for p in cache.rglob("*.part")]


@pytest.mark.parametrize("which", ["processing_by_uris", "processing_by_arn", "processing_by_listing"])
def test_processing_job_arn(world, tmp_path, which):
    arn = getattr(world, which)
    resolved = resolve_source(arn, cache_dir=tmp_path)
    assert resolved.kind == "processing-job"
    _assert_rule_outputs(resolved, world)
    assert resolved.raw_dir is None  # rule outputs exist and no --recompute: raw data is not downloaded
    assert resolved.raw_available is True
    assert resolved.raw_uri == f"s3://{world.bucket}/models/{world.training_job}/profiler-output/"
    assert resolved.rule_output_uri == f"s3://{world.bucket}/{world.rule_prefix}/"
    assert resolved.job_name == world.training_job
    assert resolved.processing_job_name == arn.rsplit("/", 1)[1]
    assert (resolved.instance_type, resolved.instance_count) == ("ml.p3.2xlarge", 1)
    assert resolved.region == "us-east-1"
    assert resolved.rule_name == world.rule
    assert resolved.incomplete is False
    assert dict(resolved.hyperparameters) == {"epochs": "2", "batch-size": "64"}  # the training job's (compare.batch)
    assert resolved.downloads == 11
    assert resolved.description.startswith(f"processing job {arn.rsplit('/', 1)[1]} (us-east-1, Completed): "
                                           f"rule job of training job {world.training_job}; rule outputs")
    _assert_nothing_else(tmp_path, world)


@pytest.mark.parametrize("form", ["arn", "name"])
def test_training_job(world, tmp_path, form):
    source = world.training_arn if form == "arn" else f"job:{world.training_job}"
    resolved = resolve_source(source, cache_dir=tmp_path)
    assert resolved.kind == "training-job"
    _assert_rule_outputs(resolved, world)
    assert resolved.raw_dir is None and resolved.raw_available is True
    assert resolved.rule_status == "IssuesFound"
    assert (resolved.job_name, resolved.instance_type, resolved.instance_count) == (world.training_job, "ml.p3.2xlarge", 1)
    assert dict(resolved.hyperparameters) == {"epochs": "2", "batch-size": "64"}
    assert resolved.downloads == 11
    assert resolved.description == (
        f"training job {world.training_job} (us-east-1, Completed): rule outputs (IssuesFound) from "
        f"s3://{world.bucket}/{world.rule_prefix}/; raw profiler data at "
        f"s3://{world.bucket}/models/{world.training_job}/profiler-output/ (not downloaded)"
    )
    _assert_nothing_else(tmp_path, world)


def test_training_job_recompute_downloads_raw(world, tmp_path):
    resolved = resolve_source(f"job:{world.training_job}", cache_dir=tmp_path, recompute=True)
    _assert_rule_outputs(resolved, world)
    assert resolved.raw_dir is not None and resolved.raw_dir.name == "profiler-output"
    assert tree(resolved.raw_dir) == world.raw_files
    assert resolved.end_marker is True
    assert resolved.downloads == 11 + 5


@pytest.mark.parametrize(
    "suffix",
    ["", "/", "/rule-output", "/rule-output/ProfilerReport-1640205487/profiler-output/profiler-reports/"],
)
def test_s3_uri_to_rule_outputs(world, tmp_path, suffix):
    uri = f"s3://{world.bucket}/models/{world.training_job}{suffix}"
    resolved = resolve_source(uri, cache_dir=tmp_path)
    assert resolved.kind == "s3"
    _assert_rule_outputs(resolved, world)
    assert resolved.job_name == world.training_job
    assert resolved.downloads == 11
    _assert_nothing_else(tmp_path, world)


def test_s3_uri_raw_prefix(world, tmp_path):
    uri = f"s3://{world.bucket}/models/{world.training_job}/profiler-output"
    resolved = resolve_source(uri, cache_dir=tmp_path)
    assert resolved.rule_output_dir is None
    assert tree(resolved.raw_dir) == world.raw_files
    assert resolved.raw_uri == uri + "/"
    assert resolved.downloads == 5
    assert resolved.description == f"{uri}/: raw profiler data at {uri}/"


def test_s3_job_prefix_recompute(world, tmp_path):
    resolved = resolve_source(f"s3://{world.bucket}/models/{world.training_job}/", cache_dir=tmp_path, recompute=True)
    _assert_rule_outputs(resolved, world)
    assert tree(resolved.raw_dir) == world.raw_files


def test_progress_reports_bytes_and_files(world, tmp_path):
    seen = []
    resolve_source(f"job:{world.training_job}", cache_dir=tmp_path, progress=seen.append)
    assert seen[0].files_done == 0 and seen[0].bytes_done == 0
    assert seen[-1].files_done == seen[-1].files_total == 11
    assert seen[-1].bytes_done == seen[-1].bytes_total == sum(len(b) for b in world.rule_files.values())


def test_default_cache_dir_respects_xdg(world, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    resolved = resolve_source(f"job:{world.training_job}")
    assert resolved.rule_output_dir.is_relative_to(tmp_path / "xdg" / "reportgen" / "s3")


def test_running_job_is_incomplete_and_uses_raw_data(world, tmp_path):
    """Training still running, ProfilerReport InProgress with no outputs yet: raw data so far, incomplete=True."""
    import datetime as dt

    from moto.sagemaker.models import sagemaker_backends

    from tests.support.sources_testlib import client

    name = "running-training-job-1"
    s3, sm = client("s3"), client("sagemaker")
    rel = "system/incremental/2021122220/1640205540.algo-1.json"
    s3.put_object(Bucket=world.bucket, Key=f"live/{name}/profiler-output/{rel}", Body=world.raw_files[rel])
    sm.create_training_job(
        TrainingJobName=name,
        AlgorithmSpecification={"TrainingImage": "img", "TrainingInputMode": "File"},
        RoleArn="arn:aws:iam::123456789012:role/R",
        OutputDataConfig={"S3OutputPath": f"s3://{world.bucket}/live"},
        ResourceConfig={"InstanceType": "ml.g4dn.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 5},
        StoppingCondition={"MaxRuntimeInSeconds": 60},
    )
    job = sagemaker_backends["123456789012"]["us-east-1"].training_jobs[name]
    # moto always reports Completed and drops the profiler fields (spec section 6): set them on its object
    job.training_job_status = "InProgress"
    job.profiler_rule_configurations = [{"RuleConfigurationName": "ProfilerReport", "RuleEvaluatorImage": "img",
                                         "RuleParameters": {"rule_to_invoke": "ProfilerReport"}}]
    job.profiler_rule_evaluation_statuses = [{"RuleConfigurationName": "ProfilerReport", "RuleEvaluationStatus": "InProgress",
                                              "LastModifiedTime": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)}]
    resolved = resolve_source(f"job:{name}", cache_dir=tmp_path)
    assert resolved.incomplete is True
    assert resolved.rule_output_dir is None
    assert tree(resolved.raw_dir) == {rel: world.raw_files[rel]}
    assert (resolved.instance_type, resolved.instance_count) == ("ml.g4dn.xlarge", 2)
    assert resolved.rule_status == "InProgress"
    assert resolved.end_marker is False
    assert resolved.notes == (
        "rule ProfilerReport is still InProgress: its outputs may be partial",
        "training job is InProgress: data so far only",
    )
