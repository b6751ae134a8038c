"""SageMaker ARNs and job names: parse, validate, explain what is wrong in one line.

Grammar (AWS API model): ``arn:<partition>:sagemaker:<region>:<12-digit account>:<type>/<name>``,
at most 256 characters, partition ``aws`` / ``aws-cn`` / ``aws-us-gov`` / ISO partitions.
``Describe*Job`` take the job *name*, so the name is what we hand to the API.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reportgen.errors import InputError

SUPPORTED_RESOURCE_TYPES = ("processing-job", "training-job")

MAX_ARN_LENGTH = 256
_PARTITION_RE = re.compile(r"^aws[a-z\-]*$")
_REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
_ACCOUNT_RE = re.compile(r"^\d{12}$")
# 1-63 characters: letters, digits, hyphens; starts and ends alphanumeric ("--" is allowed).
JOB_NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")

_EXPECTED = "arn:aws:sagemaker:<region>:<account-id>:processing-job/<name> (or training-job/<name>)"


@dataclass(frozen=True)
class SageMakerArn:
    """A validated SageMaker job ARN."""

    partition: str
    region: str
    account: str
    resource_type: str  # "processing-job" | "training-job"
    name: str

    @property
    def arn(self) -> str:
        return f"arn:{self.partition}:sagemaker:{self.region}:{self.account}:{self.resource_type}/{self.name}"

    def __str__(self) -> str:
        return self.arn


def looks_like_arn(text: str) -> bool:
    return text.strip().lower().startswith("arn:")


def is_job_name(text: str) -> bool:
    return bool(JOB_NAME_RE.match(text))


# A bare word is a local folder; a training-job name is asked for with this prefix (or by its ARN),
# so a mistyped folder name is reported as a missing folder, not sent to AWS.
JOB_PREFIX = "job:"


def job_name_of(text: str) -> str | None:
    """The training-job name in ``job:<name>``; None when ``text`` does not start with ``job:``.
    A malformed name after the prefix is an input error."""
    if not text.lower().startswith(JOB_PREFIX):
        return None
    name = text[len(JOB_PREFIX):].strip()
    if not is_job_name(name):
        raise InputError(f"{_short(text)}: {_short(name)} is not a SageMaker training-job name "
                         "(1-63 letters, digits and hyphens, starting and ending with a letter or digit)")
    return name


def _short(text: str, limit: int = 120) -> str:
    """Quote user input for an error message without letting it span lines or pages."""
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return repr(shown)


def parse_arn(text: str) -> SageMakerArn:
    """Parse a SageMaker processing-job or training-job ARN; raise :class:`InputError` otherwise."""
    arn = text.strip()
    if len(arn) > MAX_ARN_LENGTH:
        raise InputError(f"Malformed ARN {_short(arn)}: longer than {MAX_ARN_LENGTH} characters.")
    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[0] != "arn":
        raise InputError(f"Malformed ARN {_short(arn)}: expected {_EXPECTED}.")
    _, partition, service, region, account, resource = parts
    if not _PARTITION_RE.match(partition):
        raise InputError(f"Malformed ARN {_short(arn)}: unknown partition {partition!r} (expected aws, aws-cn, aws-us-gov, ...).")
    if service != "sagemaker":
        raise InputError(
            f"Unsupported ARN {_short(arn)}: service {service!r} is not supported; "
            "give a SageMaker processing-job or training-job ARN, a training-job name, an s3:// URI or a local folder."
        )
    if not _REGION_RE.match(region):
        raise InputError(f"Malformed ARN {_short(arn)}: invalid region {region!r}.")
    if not _ACCOUNT_RE.match(account):
        raise InputError(f"Malformed ARN {_short(arn)}: invalid account id {account!r} (expected 12 digits).")
    resource_type, sep, name = resource.partition("/")
    if not sep:
        raise InputError(f"Malformed ARN {_short(arn)}: expected {_EXPECTED}.")
    if resource_type not in SUPPORTED_RESOURCE_TYPES:
        raise InputError(
            f"Unsupported SageMaker resource type {resource_type!r} in ARN {_short(arn)}: "
            "only processing-job and training-job ARNs are supported."
        )
    if not JOB_NAME_RE.match(name):
        raise InputError(
            f"Malformed ARN {_short(arn)}: invalid job name {name!r} "
            "(1-63 letters, digits or hyphens, starting and ending with a letter or digit)."
        )
    return SageMakerArn(partition=partition, region=region, account=account, resource_type=resource_type, name=name)

