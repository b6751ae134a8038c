"""ARN parsing: valid forms and the exact one-line errors."""

from pathlib import Path

import pytest

from reportgen.errors import EXIT_INPUT, InputError
from reportgen.sources.arn import parse_arn
from reportgen.sources.resolve import classify


@pytest.mark.parametrize(
    "arn, partition, region, kind, name",
    [
        ("arn:aws:sagemaker:us-east-1:450092352571:processing-job/pytorch-training-2021-12-2-profilerreport-dd30fc8e",
         "aws", "us-east-1", "processing-job", "pytorch-training-2021-12-2-profilerreport-dd30fc8e"),
        ("arn:aws-cn:sagemaker:cn-north-1:123456789012:training-job/BASIC-2025-06-24-x",
         "aws-cn", "cn-north-1", "training-job", "BASIC-2025-06-24-x"),
        ("arn:aws-us-gov:sagemaker:us-gov-west-1:123456789012:processing-job/train-eco-im03-2024-11-05--ProfilerReport-ec744a47",
         "aws-us-gov", "us-gov-west-1", "processing-job", "train-eco-im03-2024-11-05--ProfilerReport-ec744a47"),
    ],
)
def test_parse_valid(arn, partition, region, kind, name):
    parsed = parse_arn(arn)
    assert (parsed.partition, parsed.region, parsed.account, parsed.resource_type, parsed.name) == (
        partition, region, arn.split(":")[4], kind, name)
    assert parsed.arn == arn
    assert classify(arn) == kind


@pytest.mark.parametrize(
    "arn, message",
    [
        ("arn:aws:sagemaker:us-east-1:123456789012",
         "Malformed ARN 'arn:aws:sagemaker:us-east-1:123456789012': expected "
         "arn:aws:sagemaker:<region>:<account-id>:processing-job/<name> (or training-job/<name>)."),
        ("arn:aws:sagemaker:us-east-1:12345:training-job/x",
         "Malformed ARN 'arn:aws:sagemaker:us-east-1:12345:training-job/x': invalid account id '12345' (expected 12 digits)."),
        ("arn:aws:sagemaker:US_EAST:123456789012:training-job/x",
         "Malformed ARN 'arn:aws:sagemaker:US_EAST:123456789012:training-job/x': invalid region 'US_EAST'."),
        ("arn:gcp:sagemaker:us-east-1:123456789012:training-job/x",
         "Malformed ARN 'arn:gcp:sagemaker:us-east-1:123456789012:training-job/x': unknown partition 'gcp' "
         "(expected aws, aws-cn, aws-us-gov, ...)."),
        ("arn:aws:sagemaker:us-east-1:123456789012:training-job",
         "Malformed ARN 'arn:aws:sagemaker:us-east-1:123456789012:training-job': expected "
         "arn:aws:sagemaker:<region>:<account-id>:processing-job/<name> (or training-job/<name>)."),
        ("arn:aws:sagemaker:us-east-1:123456789012:training-job/bad_name",
         "Malformed ARN 'arn:aws:sagemaker:us-east-1:123456789012:training-job/bad_name': invalid job name 'bad_name' "
         "(1-63 letters, digits or hyphens, starting and ending with a letter or digit)."),
        ("arn:aws:sagemaker:us-east-1:123456789012:training-job/a/b",
         "Malformed ARN 'arn:aws:sagemaker:us-east-1:123456789012:training-job/a/b': invalid job name 'a/b' "
         "(1-63 letters, digits or hyphens, starting and ending with a letter or digit)."),
    ],
)
def test_malformed_arn(arn, message):
    with pytest.raises(InputError) as info:
        parse_arn(arn)
    assert type(info.value) is InputError
    assert str(info.value) == message
    assert info.value.exit_code == EXIT_INPUT == 2


def test_too_long_arn():
    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-job/" + "a" * 250
    with pytest.raises(InputError) as info:
        parse_arn(arn)
    assert str(info.value) == f"Malformed ARN {arn[:117] + '...'!r}: longer than 256 characters."


@pytest.mark.parametrize(
    "arn, message",
    [
        ("arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/tune-1",
         "Unsupported SageMaker resource type 'hyper-parameter-tuning-job' in ARN "
         "'arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/tune-1': "
         "only processing-job and training-job ARNs are supported."),
        ("arn:aws:sagemaker:us-east-1:123456789012:model/my-model",
         "Unsupported SageMaker resource type 'model' in ARN 'arn:aws:sagemaker:us-east-1:123456789012:model/my-model': "
         "only processing-job and training-job ARNs are supported."),
        ("arn:aws:s3:::my-bucket/prefix",
         "Unsupported ARN 'arn:aws:s3:::my-bucket/prefix': service 's3' is not supported; give a SageMaker processing-job "
         "or training-job ARN, a training-job name, an s3:// URI or a local folder."),
    ],
)
def test_unsupported_resource(arn, message):
    from reportgen.sources import resolve_source

    with pytest.raises(InputError) as info:
        resolve_source(arn)
    assert str(info.value) == message


def test_classify_without_aws(tmp_path):
    assert classify(str(tmp_path)) == "local"
    assert classify("s3://bucket/prefix") == "s3"
    assert classify("job:my-training-job-1") == "training-job"
    with pytest.raises(InputError) as info:
        classify("./no/such/folder")
    assert str(info.value) == f"no folder ./no/such/folder here ({Path.cwd()})"
