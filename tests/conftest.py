"""Shared test helpers: where the real third-party fixtures are, and how to skip without them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = (ROOT / ".." / "shared" / "fixtures").resolve()
REAL = SHARED_FIXTURES / "real"
RAW = SHARED_FIXTURES / "raw"


def fixtures_required() -> bool:
    """CI sets REPORTGEN_REQUIRE_FIXTURES=1: then a missing fixture fails instead of skipping."""
    return os.environ.get("REPORTGEN_REQUIRE_FIXTURES") == "1"


def need(path: Path) -> Path:
    if not path.exists():
        if fixtures_required():
            pytest.fail(f"fixture {path} is missing but REPORTGEN_REQUIRE_FIXTURES=1")
        pytest.skip(f"fixture {path} not available (../shared is absent)")
    return path


def real_jobs() -> list[str]:
    if not REAL.is_dir():
        return ["<no fixtures>"]
    return sorted(p.name for p in REAL.iterdir() if (p / "profiler-reports").is_dir())
