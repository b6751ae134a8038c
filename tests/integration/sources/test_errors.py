"""Every failure is an InputError (exit code 2) with one exact line."""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from reportgen.errors import EXIT_INPUT, InputError
from reportgen.sources import resolve_source


def _fails(source, message, **kwargs):
    with pytest.raises(InputError) as info:
        resolve_source(source, **kwargs)
    assert type(info.value) is InputError
    assert info.value.exit_code == EXIT_INPUT
    assert "\n" not in str(info.value)
    assert str(info.value) == message
    return info.value


def test_no_credentials(tmp_path, monkeypatch):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key)
    _fails(
        "arn:aws:sagemaker:us-east-1:123456789012:training-job/some-job",
        "No AWS credentials found while describing training job 'some-job' in us-east-1: set AWS_PROFILE "
        "(or --profile), AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or configure ~/.aws/credentials.",
        cache_dir=tmp_path,
    )


def test_unknown_profile(tmp_path):
    _fails("s3://bucket/prefix", "AWS profile 'nope' not found in ~/.aws/config or ~/.aws/credentials.",
           cache_dir=tmp_path, session_kwargs={"profile_name": "nope"})


def test_no_region_for_bare_job_name(tmp_path, monkeypatch):
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    _fails("job:some-job", "No AWS region configured: set AWS_REGION (or a region in your AWS profile), or give the job's full ARN.",
           cache_dir=tmp_path)


@pytest.mark.fixtures
@pytest.mark.parametrize(
    "source, message",
    [
        ("job:missing-training-job", "Training job 'missing-training-job' not found in region us-east-1."),
        ("arn:aws:sagemaker:us-east-1:123456789012:training-job/missing-training-job",
         "Training job 'missing-training-job' not found in region us-east-1."),
        ("arn:aws:sagemaker:us-east-1:123456789012:processing-job/missing-rule-job",
         "Processing job 'missing-rule-job' not found in region us-east-1."),
    ],
)
def test_job_not_found(world, tmp_path, source, message):
    _fails(source, message, cache_dir=tmp_path)


@pytest.mark.fixtures
def test_bucket_not_found(world, tmp_path):
    _fails("s3://no-such-bucket-4711/models/job", "S3 bucket 'no-such-bucket-4711' does not exist (while listing s3://no-such-bucket-4711/models/job/).",
           cache_dir=tmp_path)


@pytest.mark.fixtures
def test_prefix_not_found(world, tmp_path):
    _fails(f"s3://{world.bucket}/models/no-such-job",
           f"Nothing found under s3://{world.bucket}/models/no-such-job/: the prefix is empty or does not exist.",
           cache_dir=tmp_path)


@pytest.mark.fixtures
def test_prefix_without_profiler_data(world, tmp_path):
    _fails(f"s3://{world.bucket}/models/{world.training_job}/output",
           f"No profiler data under s3://{world.bucket}/models/{world.training_job}/output/: 1 object but no rule outputs "
           "(profiler-output/profiler-reports/*.json), no raw profiler data (profiler-output/system/, framework/) "
           "and no PyTorch profiler traces (*.pt.trace.json[.gz]).",
           cache_dir=tmp_path)
    assert not any(p.is_file() for p in tmp_path.rglob("*") if "/s3/" in p.as_posix())


@pytest.mark.fixtures
def test_recompute_without_raw_data(world, tmp_path):
    uri = f"s3://{world.bucket}/{world.rule_prefix}"
    _fails(uri, f"--recompute needs raw profiler data (system/, framework/) but none is under {uri}/.",
           cache_dir=tmp_path, recompute=True)


@pytest.mark.fixtures
def test_training_job_without_profiler_data(world, tmp_path):
    from moto.sagemaker.models import sagemaker_backends

    import boto3

    sm = boto3.Session().client("sagemaker")
    sm.create_training_job(
        TrainingJobName="no-profiler-job",
        AlgorithmSpecification={"TrainingImage": "img", "TrainingInputMode": "File"},
        RoleArn="arn:aws:iam::123456789012:role/R",
        OutputDataConfig={"S3OutputPath": f"s3://{world.bucket}/empty"},
        ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 5},
        StoppingCondition={"MaxRuntimeInSeconds": 60},
    )
    sagemaker_backends["123456789012"]["us-east-1"].training_jobs["no-profiler-job"].profiling_status = "Disabled"
    _fails("job:no-profiler-job",
           "No profiler data for training job no-profiler-job (us-east-1, Completed): no profiler locations "
           "(profiling is disabled for this training job (ProfilingStatus: Disabled); "
           "the training job has no ProfilerReport rule).",
           cache_dir=tmp_path)


# ---------------------------------------------------------------------------------------- access denied


@pytest.fixture
def iam_user(world, monkeypatch):
    """Create IAM users in moto, then switch moto's IAM enforcement on for the test."""
    import boto3
    from moto.core import enable_iam_authentication

    iam = boto3.Session().client("iam")

    suffix = uuid.uuid4().hex[:8]

    def make(name, actions):
        name = f"{name}-{suffix}"
        iam.create_user(UserName=name)
        if actions:
            policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}
            iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=name)["AccessKey"]
        return key["AccessKeyId"], key["SecretAccessKey"]

    users = {"sagemaker-only": make("sagemaker-only", ["sagemaker:Describe*", "sagemaker:List*"]), "nothing": make("nothing", [])}

    def use(name):
        key_id, secret = users[name]
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", key_id)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
        monkeypatch.delenv("AWS_SESSION_TOKEN")

    with enable_iam_authentication():
        yield use


@pytest.mark.fixtures
def test_access_denied_on_s3(world, tmp_path, iam_user):
    iam_user("sagemaker-only")
    err = _fails(f"job:{world.training_job}", str_message := (
        f"Access denied while listing s3://{world.bucket}/{world.job_prefix}/rule-output/{world.rule}/ (AccessDenied: Access Denied): "
        "check that your AWS identity may read it (s3:ListBucket, s3:GetObject, kms:Decrypt for encrypted outputs, sagemaker:Describe*)."),
        cache_dir=tmp_path)
    assert str(err) == str_message


@pytest.mark.fixtures
def test_access_denied_on_sagemaker(world, tmp_path, iam_user):
    iam_user("nothing")
    # moto answers SageMaker denials with HTTP 403 and an XML body (the real service: AccessDeniedException).
    _fails(world.training_arn,
           f"Access denied while describing training job '{world.training_job}' in us-east-1 (403): check that your AWS identity "
           "may read it (s3:ListBucket, s3:GetObject, kms:Decrypt for encrypted outputs, sagemaker:Describe*).",
           cache_dir=tmp_path)


# ---------------------------------------------------------------------------------------- throttling


class _Throttler(BaseHTTPRequestHandler):
    hits = 0

    def _answer(self):
        type(self).hits += 1
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if self.headers.get("X-Amz-Target"):  # SageMaker (JSON protocol)
            body = json.dumps({"__type": "ThrottlingException", "message": "Rate exceeded"}).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/x-amz-json-1.1")
        else:  # S3 (REST-XML)
            body = b"<?xml version='1.0'?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
            self.send_response(503)
            self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_HEAD = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def throttling_endpoint(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Throttler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Throttler.hits = 0
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "3")
    yield _Throttler
    server.shutdown()
    thread.join()


def test_throttling_sagemaker_retried_then_fails(tmp_path, throttling_endpoint):
    _fails("arn:aws:sagemaker:us-east-1:123456789012:training-job/busy-job",
           "AWS kept throttling requests while describing training job 'busy-job' in us-east-1: gave up after 3 attempts "
           "(ThrottlingException: Rate exceeded); try again later or raise AWS_MAX_ATTEMPTS.",
           cache_dir=tmp_path)
    assert throttling_endpoint.hits == 3  # botocore's standard retry mode, with backoff, not our own loop


def test_throttling_s3_retried_then_fails(tmp_path, throttling_endpoint):
    _fails("s3://busy-bucket/prefix",
           "AWS kept throttling requests while listing s3://busy-bucket/prefix/: gave up after 3 attempts "
           "(SlowDown: Please reduce your request rate.); try again later or raise AWS_MAX_ATTEMPTS.",
           cache_dir=tmp_path)
    assert throttling_endpoint.hits == 3
