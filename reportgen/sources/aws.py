"""boto3 sessions and clients as the user configured them, and AWS errors as one-line InputErrors.

* Credentials, profile (``AWS_PROFILE`` or ``profile_name=`` from ``--profile``), ``AWS_ENDPOINT_URL`` /
  ``AWS_ENDPOINT_URL_<SERVICE>``, ``AWS_RETRY_MODE`` and ``AWS_MAX_ATTEMPTS`` are all read by
  botocore itself; we only add defaults the user did not set.
* Retries (throttling, 5xx, connection errors) are botocore's ``standard`` (or the user's ``adaptive``)
  mode with exponential backoff and jitter; we raise the default attempt count to
  :data:`DEFAULT_MAX_ATTEMPTS` unless the user configured one.
* boto3 is imported lazily so resolving a local folder costs no AWS import time.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Iterator

from reportgen.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import boto3

DEFAULT_MAX_ATTEMPTS = 8
DEFAULT_REGION_FOR_S3 = "us-east-1"

THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "RequestThrottled",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "SlowDown",
        "EC2ThrottledException",
        "PriorRequestNotComplete",
    }
)
ACCESS_DENIED_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "403",
        "Forbidden",
        "UnauthorizedOperation",
        "AuthorizationError",
        "AllAccessDisabled",
        "KMS.AccessDeniedException",
    }
)
BAD_CREDENTIALS_CODES = frozenset(
    {
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidToken",
        "TokenRefreshRequired",
    }
)


def make_session(session_kwargs: dict[str, Any] | None = None) -> "boto3.Session":
    """A boto3 session; ``session_kwargs`` go to :class:`boto3.Session` (e.g. ``profile_name``, ``region_name``)."""
    import boto3
    from botocore.exceptions import ProfileNotFound

    kwargs = dict(session_kwargs or {})
    try:
        return boto3.Session(**kwargs)
    except ProfileNotFound as err:
        raise InputError(f"AWS profile {err.kwargs.get('profile')!r} not found in ~/.aws/config or ~/.aws/credentials.") from None


def make_client(session: "boto3.Session", service: str, region: str | None = None, *, max_pool: int = 10):
    """A client with our retry/timeouts defaults; endpoint and credentials resolved by botocore."""
    from botocore.config import Config

    retries: dict[str, Any] = {}
    # boto3 has no public accessor for the resolved config; ``_session`` is its documented-in-practice
    # botocore session. None = neither AWS_MAX_ATTEMPTS nor the profile's max_attempts is set.
    if session._session.get_config_variable("max_attempts") is None:
        retries["max_attempts"] = DEFAULT_MAX_ATTEMPTS
    config = Config(
        retries=retries or None,
        connect_timeout=10,
        read_timeout=60,
        max_pool_connections=max_pool,
    )
    region = region or session.region_name or (DEFAULT_REGION_FOR_S3 if service == "s3" else None)
    if region is None:
        raise InputError(
            "No AWS region configured: set AWS_REGION (or a region in your AWS profile), or give the job's full ARN."
        )
    return session.client(service, region_name=region, config=config)


def _error_code(err: Exception) -> str:
    response = getattr(err, "response", None) or {}
    return str(response.get("Error", {}).get("Code", "") or response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))


def _error_message(err: Exception) -> str:
    response = getattr(err, "response", None) or {}
    message = str(response.get("Error", {}).get("Message", "") or "")
    if message.lstrip().startswith("<"):  # moto/S3 sometimes put an XML document here
        message = ""
    return " ".join(message.split())


def _attempts(err: Exception) -> int:
    response = getattr(err, "response", None) or {}
    return int(response.get("ResponseMetadata", {}).get("RetryAttempts", 0)) + 1


def is_not_found(err: Exception) -> bool:
    """A SageMaker "no such job" answer (moto: "Could not find ..."; real: "Requested resource not found.")."""
    code = _error_code(err)
    if code in {"ResourceNotFound", "ResourceNotFoundException"}:
        return True
    if code == "ValidationException":
        message = _error_message(err).lower()
        return "could not find" in message or "not found" in message
    return False


def translate(err: Exception, action: str) -> InputError:
    """Turn a botocore exception raised while doing ``action`` (e.g. "listing s3://b/p") into an InputError."""
    from botocore import exceptions as bx

    if isinstance(err, bx.NoCredentialsError):
        return InputError(
            f"No AWS credentials found while {action}: set AWS_PROFILE (or --profile), "
            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or configure ~/.aws/credentials."
        )
    if isinstance(err, bx.PartialCredentialsError):
        return InputError(f"Incomplete AWS credentials while {action}: {err}.")
    if isinstance(err, bx.ProfileNotFound):
        return InputError(f"AWS profile {err.kwargs.get('profile')!r} not found in ~/.aws/config or ~/.aws/credentials.")
    if isinstance(err, bx.NoRegionError):
        return InputError(f"No AWS region configured while {action}: set AWS_REGION or give the job's full ARN.")
    if isinstance(err, (bx.EndpointConnectionError, bx.ConnectTimeoutError, bx.ReadTimeoutError)):
        return InputError(f"Cannot reach AWS while {action}: {err}.")
    if isinstance(err, bx.ClientError):
        code = _error_code(err)
        message = _error_message(err)
        detail = f" ({code}: {message})" if message else f" ({code})"
        if code in THROTTLING_CODES:
            return InputError(
                f"AWS kept throttling requests while {action}: gave up after {_attempts(err)} attempts{detail}; "
                "try again later or raise AWS_MAX_ATTEMPTS."
            )
        if code in ACCESS_DENIED_CODES:
            return InputError(
                f"Access denied while {action}{detail}: check that your AWS identity may read it "
                "(s3:ListBucket, s3:GetObject, kms:Decrypt for encrypted outputs, sagemaker:Describe*)."
            )
        if code in BAD_CREDENTIALS_CODES:
            return InputError(f"AWS rejected the credentials while {action}{detail}: check AWS_PROFILE or your keys.")
        if code == "NoSuchBucket":
            bucket = (getattr(err, "response", {}) or {}).get("Error", {}).get("BucketName")
            what = f"S3 bucket {bucket!r}" if bucket else "The S3 bucket"
            return InputError(f"{what} does not exist (while {action}).")
        if code in {"NoSuchKey", "404", "NotFound"}:
            return InputError(f"Not found while {action}{detail}.")
        return InputError(f"AWS error while {action}{detail}.")
    if isinstance(err, bx.BotoCoreError):
        return InputError(f"AWS error while {action}: {err}.")
    return InputError(f"Error while {action}: {err}.")


@contextlib.contextmanager
def aws_errors(action: str) -> Iterator[None]:
    """Re-raise botocore failures inside the block as one-line :class:`InputError`."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (ClientError, BotoCoreError) as err:
        raise translate(err, action) from err
