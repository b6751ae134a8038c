"""Fixtures for the sources layer: a real local AWS endpoint (moto server) and the boto3 client (the
moto fixtures are shared by every lane through tests/conftest.py; ``aws_env`` is autouse in each lane's
``sources/`` folder).

Nothing here reaches AWS: every test runs with ``AWS_ENDPOINT_URL`` pointing at a moto server bound
to 127.0.0.1 on a free port, fake credentials, no shared config files and IMDS disabled.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest

from reportgen.rulebook import RULE_ORDER
from tests.support.sources_testlib import ACCOUNT, BUCKET, REGION, ROLE, RULE, TRAINING_JOB, client, pythontimeline, system_lines

FIXTURE_JOB = "beauvilerobed-dd30fc8e"


def fixtures_dir() -> Path | None:
    """The real fixture folder for beauvilerobed-dd30fc8e, or None (tests then skip)."""
    from tests.support.paths import REAL

    base = Path(os.environ.get("REPORTGEN_FIXTURES_DIR") or REAL)  # REPORTGEN_FIXTURES_DIR: the real/ folder itself
    folder = base / FIXTURE_JOB / "profiler-reports"
    if folder.is_dir():
        return folder
    if os.environ.get("REPORTGEN_REQUIRE_FIXTURES") == "1":
        pytest.fail(f"REPORTGEN_REQUIRE_FIXTURES=1 but {folder} is missing")
    return None


@pytest.fixture(scope="session")
def rule_fixture_dir() -> Path:
    folder = fixtures_dir()
    if folder is None:
        from tests.support.paths import WHERE

        pytest.skip(f"real fixtures not available: {WHERE}")
    return folder


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "AWS_MAX_ATTEMPTS": "3",
    "AWS_RETRY_MODE": "standard",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/nonexistent/reportgen-test/config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/reportgen-test/credentials",
}
CLEARED_ENV = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SECURITY_TOKEN", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
               "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "REPORTGEN_CACHE_DIR")


@pytest.fixture(scope="session")
def moto_endpoint():
    """A moto server on 127.0.0.1:<free port>, started once, stopped at the end of the session."""
    from moto.server import ThreadedMotoServer

    saved = {k: os.environ.get(k) for k in (*FAKE_ENV, *CLEARED_ENV, "AWS_ENDPOINT_URL")}
    os.environ.update(FAKE_ENV)
    for key in CLEARED_ENV:
        os.environ.pop(key, None)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=_free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    os.environ["AWS_ENDPOINT_URL"] = url
    yield url
    server.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(autouse=True)
def aws_env(request, monkeypatch):
    """Every test: fake credentials and the moto endpoint (when the test uses it), never real AWS."""
    for key, value in FAKE_ENV.items():
        monkeypatch.setenv(key, value)
    for key in CLEARED_ENV:
        monkeypatch.delenv(key, raising=False)
    if "moto_endpoint" in request.fixturenames or "world" in request.fixturenames:
        monkeypatch.setenv("AWS_ENDPOINT_URL", request.getfixturevalue("moto_endpoint"))
    else:
        monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # discard port: fails fast, never AWS


def count_gets(monkeypatch) -> list[str]:
    """The key of every GetObject the moto server answers from now on, whichever process asked (the server runs in
    this one): how a test tells what was downloaded."""
    from moto.s3.responses import S3Response

    seen: list[str] = []
    real = S3Response.get_object

    def counted(self):
        seen.append(self.parse_key_name())
        return real(self)

    monkeypatch.setattr(S3Response, "get_object", counted)
    return seen


@dataclass(frozen=True)
class World:
    """What the moto fixture created, with the expected bytes of every profiler file."""

    endpoint: str
    bucket: str
    training_job: str
    training_arn: str
    rule: str
    processing_by_uris: str  # ARN: links to its training job through its S3 input/output URIs
    processing_by_arn: str  # ARN: has TrainingJobArn set, no S3 URIs
    processing_by_listing: str  # ARN: no link at all; found via ListTrainingJobs + rule statuses
    rule_files: dict[str, bytes]  # file name -> bytes (the 11 real rule JSONs)
    raw_files: dict[str, bytes]  # path relative to profiler-output/ -> bytes
    other_keys: tuple[str, ...]  # keys that must never be downloaded

    @property
    def job_prefix(self) -> str:
        return f"models/{self.training_job}"

    @property
    def rule_prefix(self) -> str:
        return f"{self.job_prefix}/rule-output/{self.rule}/profiler-output/profiler-reports"


def _arn(kind: str, name: str) -> str:
    return f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:{kind}/{name}"


@pytest.fixture(scope="session")
def world(moto_endpoint, rule_fixture_dir) -> World:
    """Bucket with real rule outputs + a tiny raw profile, one training job and three rule processing jobs."""
    import datetime as dt

    from moto.sagemaker.models import sagemaker_backends

    s3 = client("s3")
    sm = client("sagemaker")
    s3.create_bucket(Bucket=BUCKET)
    job_prefix = f"models/{TRAINING_JOB}"
    rule_files = {p.name: p.read_bytes() for p in sorted(rule_fixture_dir.glob("*.json"))}
    assert sorted(rule_files) == sorted(f"{name}.json" for name in RULE_ORDER)  # the fixture holds every rule
    rule_key_prefix = f"{job_prefix}/rule-output/{RULE}/profiler-output"
    for name, data in rule_files.items():
        s3.put_object(Bucket=BUCKET, Key=f"{rule_key_prefix}/profiler-reports/{name}", Body=data)
    raw_files = {
        "system/incremental/2021122220/1640205540.algo-1.json": system_lines(1640205540),
        "system/incremental/2021122220/1640205600.algo-1.json": system_lines(1640205600),
        "system/training_job_end.ts": b"",
        "framework/pevents/2021122220/1640205600250000_27-algo-1_pythontimeline.json": pythontimeline(),
        "framework/training_job_end.ts": b"",
    }
    for rel, data in raw_files.items():
        s3.put_object(Bucket=BUCKET, Key=f"{job_prefix}/profiler-output/{rel}", Body=data)
    other_keys = (
        f"{job_prefix}/output/model.tar.gz",
        f"{rule_key_prefix}/profiler-report.html",
        f"{rule_key_prefix}/profiler-report.ipynb",
        f"{job_prefix}/debug-output/index/000000000/000000000000_worker_0.json",
        f"{job_prefix}/source/sourcedir.tar.gz",
    )
    for key in other_keys:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"not profiler data " + key.encode())

    training_arn = sm.create_training_job(
        TrainingJobName=TRAINING_JOB,
        AlgorithmSpecification={"TrainingImage": "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:1.8-gpu-py36", "TrainingInputMode": "File"},
        RoleArn=ROLE,
        OutputDataConfig={"S3OutputPath": f"s3://{BUCKET}/models", "KmsKeyId": ""},
        ResourceConfig={"InstanceType": "ml.p3.2xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30},
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
        HyperParameters={"epochs": "2", "batch-size": "64"},  # as the SageMaker SDK passes them: text
    )["TrainingJobArn"]

    prefix26 = TRAINING_JOB[:26]
    by_uris = f"{prefix26}-profilerreport-1640205487-dd30fc8e"
    by_arn = f"{prefix26}-ProfilerReport-1640205487-0a1b2c3d"
    by_listing = f"{prefix26}-ProfilerReport-1640205487-feedbeef"
    common = dict(
        ProcessingResources={"ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.xlarge", "VolumeSizeInGB": 30}},
        AppSpecification={"ImageUri": "503895931360.dkr.ecr.us-east-1.amazonaws.com/sagemaker-debugger-rules:latest"},
        RoleArn=ROLE,
        StoppingCondition={"MaxRuntimeInSeconds": 86400},
    )
    sm.create_processing_job(
        ProcessingJobName=by_uris,
        ProcessingInputs=[{
            "InputName": "profiler",
            "S3Input": {"S3Uri": f"s3://{BUCKET}/{job_prefix}/profiler-output", "LocalPath": "/opt/ml/processing/input/profiler",
                        "S3DataType": "S3Prefix", "S3InputMode": "File"},
        }],
        ProcessingOutputConfig={"Outputs": [{
            "OutputName": "rule",
            "S3Output": {"S3Uri": f"s3://{BUCKET}/{job_prefix}/rule-output/{RULE}", "LocalPath": "/opt/ml/processing/output/rule",
                         "S3UploadMode": "Continuous"},
        }]},
        **common,
    )
    sm.create_processing_job(ProcessingJobName=by_arn, **common)
    sm.create_processing_job(ProcessingJobName=by_listing, **common)

    # moto 5.2 accepts but does not return these DescribeTrainingJob / DescribeProcessingJob fields
    # (spec section 6): set them on moto's own job objects, which it camel-cases into the response.
    backend = sagemaker_backends[ACCOUNT][REGION]
    now = dt.datetime(2021, 12, 22, 21, 0, tzinfo=dt.timezone.utc)
    tj = backend.training_jobs[TRAINING_JOB]
    tj.profiler_config = {"S3OutputPath": f"s3://{BUCKET}/models/", "ProfilingIntervalInMilliseconds": 500}
    tj.profiling_status = "Enabled"
    tj.profiler_rule_configurations = [{
        "RuleConfigurationName": RULE,
        "RuleEvaluatorImage": "503895931360.dkr.ecr.us-east-1.amazonaws.com/sagemaker-debugger-rules:latest",
        "VolumeSizeInGB": 0,
        "RuleParameters": {"rule_to_invoke": "ProfilerReport"},
    }]
    tj.profiler_rule_evaluation_statuses = [{
        "RuleConfigurationName": RULE,
        "RuleEvaluationJobArn": _arn("processing-job", by_listing),
        "RuleEvaluationStatus": "IssuesFound",
        "LastModifiedTime": now,
    }]
    backend.processing_jobs[by_arn].training_job_arn = training_arn
    return World(
        endpoint=moto_endpoint,
        bucket=BUCKET,
        training_job=TRAINING_JOB,
        training_arn=training_arn,
        rule=RULE,
        processing_by_uris=_arn("processing-job", by_uris),
        processing_by_arn=_arn("processing-job", by_arn),
        processing_by_listing=_arn("processing-job", by_listing),
        rule_files=rule_files,
        raw_files=raw_files,
        other_keys=other_keys,
    )


