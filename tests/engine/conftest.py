import os
from pathlib import Path

import pytest

from tests.conftest import SHARED_FIXTURES as FIXTURES, WHERE

SHARED = FIXTURES.parent


def need_fixture(path: Path) -> Path:
    """Skip when the shared fixtures are absent, unless REPORTGEN_REQUIRE_FIXTURES=1 (then fail)."""
    if not path.exists():
        if os.environ.get("REPORTGEN_REQUIRE_FIXTURES") == "1":
            pytest.fail(f"required fixture missing: {path}")
        pytest.skip(f"fixture not available: {path}: {WHERE}")
    return path
