"""The sources layer's tests run with fake AWS credentials and the local moto endpoint, never real AWS
(``tests.support.aws.aws_env``, autouse in this folder only)."""

from tests.support.aws import aws_env  # noqa: F401  (an autouse fixture)
