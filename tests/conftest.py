"""Shared test helpers: where the real third-party fixtures are, and how to skip without them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The real third-party fixtures (real/ rule outputs, raw/ profiler data), read in place: beside the
# checkout in ../shared/fixtures, or wherever REPORTGEN_FIXTURES points (a clone elsewhere).
FIXTURES_ENV = "REPORTGEN_FIXTURES"
SHARED_FIXTURES = Path(os.environ.get(FIXTURES_ENV) or ROOT / ".." / "shared" / "fixtures").expanduser().resolve()
REAL = SHARED_FIXTURES / "real"
RAW = SHARED_FIXTURES / "raw"
WHERE = (f"the real fixtures are looked for in {SHARED_FIXTURES} (../shared/fixtures beside the checkout); "
         f"set {FIXTURES_ENV}=/path/to/fixtures to point elsewhere")


def pytest_report_header(config):
    """Say up front where the fixtures are, so a run that skips their tests says why."""
    if SHARED_FIXTURES.is_dir():
        return f"reportgen fixtures: {SHARED_FIXTURES}"
    return f"reportgen fixtures: none ({WHERE}); the tests that need them are skipped"


def fixtures_required() -> bool:
    """CI sets REPORTGEN_REQUIRE_FIXTURES=1: then a missing fixture fails instead of skipping."""
    return os.environ.get("REPORTGEN_REQUIRE_FIXTURES") == "1"


def need(path: Path) -> Path:
    if not path.exists():
        if fixtures_required():
            pytest.fail(f"fixture {path} is missing but REPORTGEN_REQUIRE_FIXTURES=1")
        pytest.skip(f"fixture {path} not available: {WHERE}")
    return path


def real_jobs() -> list[str]:
    if not REAL.is_dir():
        return ["<no fixtures>"]
    return sorted(p.name for p in REAL.iterdir() if (p / "profiler-reports").is_dir())
