"""Where things are, computed once: the checkout, its test data, and the real third-party fixtures.

Every path a test needs comes from here, so moving a test file never breaks a path computed from its
own ``__file__``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the checkout (tests/support/paths.py -> ../..)
TESTS = ROOT / "tests"
RECORDINGS = TESTS / "recordings"  # small real recordings committed with the scripts that made them
SNAPSHOTS = TESTS / "snapshots"  # frozen outputs compared byte for byte
SAMPLE_DATA = ROOT / "sample_data"
# The real third-party fixtures (real/ rule outputs, raw/ profiler data), read in place: beside the
# checkout in ../shared/fixtures, or wherever REPORTGEN_FIXTURES points (a clone elsewhere).
FIXTURES_ENV = "REPORTGEN_FIXTURES"
SHARED_FIXTURES = Path(os.environ.get(FIXTURES_ENV) or ROOT / ".." / "shared" / "fixtures").expanduser().resolve()
REAL = SHARED_FIXTURES / "real"
RAW = SHARED_FIXTURES / "raw"
WHERE = (f"the real fixtures are looked for in {SHARED_FIXTURES} (../shared/fixtures beside the checkout); "
         f"set {FIXTURES_ENV}=/path/to/fixtures to point elsewhere")


def fixtures_required() -> bool:
    """CI sets REPORTGEN_REQUIRE_FIXTURES=1: then a missing fixture fails instead of skipping."""
    return os.environ.get("REPORTGEN_REQUIRE_FIXTURES") == "1"


def need(path: Path) -> Path:
    """``path`` if it exists; else skip the test (fail it under REPORTGEN_REQUIRE_FIXTURES=1)."""
    if not path.exists():
        if fixtures_required():
            pytest.fail(f"fixture {path} is missing but REPORTGEN_REQUIRE_FIXTURES=1")
        pytest.skip(f"fixture {path} not available: {WHERE}")
    return path


def real_jobs() -> list[str]:
    """The real SageMaker jobs with a ``profiler-reports`` folder (one placeholder without the fixtures,
    so that the parametrized tests are collected and then skipped by ``need``)."""
    if not REAL.is_dir():
        return ["<no fixtures>"]
    return sorted(p.name for p in REAL.iterdir() if (p / "profiler-reports").is_dir())
