#!/usr/bin/env bash
# The whole test suite as CI runs it (docs/testing.md, "Lanes"): the fast unit lane first, so that a failure
# there ends the run in about a minute, then every other test (integration, e2e, and any file not yet in a
# lane), each test once. Each run is spread over the machine's cores by pytest-xdist (the test extra): one
# worker per core, a test file's tests on one worker (--dist loadfile), so a module fixture runs once.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pytest tests/unit -n auto --dist loadfile
.venv/bin/python -m pytest -m "not unit" -n auto --dist loadfile
