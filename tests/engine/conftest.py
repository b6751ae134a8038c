import os
from pathlib import Path

import pytest

SHARED = (Path(__file__).resolve().parents[2] / ".." / "shared").resolve()
FIXTURES = SHARED / "fixtures"


def need_fixture(path: Path) -> Path:
    """Skip when the shared fixtures are absent, unless REPORTGEN_REQUIRE_FIXTURES=1 (then fail)."""
    if not path.exists():
        if os.environ.get("REPORTGEN_REQUIRE_FIXTURES") == "1":
            pytest.fail(f"required fixture missing: {path}")
        pytest.skip(f"fixture not available: {path}")
    return path
