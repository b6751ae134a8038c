"""The test lanes (see docs/testing.md) and the fixtures every lane shares.

A test's lane is the first folder under ``tests/``: ``unit`` (in this process, no child process, no
browser: the fast lane), ``integration`` (the whole pipeline in this process, on the sample job and the
real ones, each made once per session), ``e2e`` (``reportgen`` in child processes, a browser, packaging,
signals). The lane is set here as a marker, so ``pytest tests/unit`` and ``pytest -m unit`` are the same."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Re-exported for the tests written before the lanes (``from tests.conftest import REAL, need``); new
# tests import them from tests.support.paths.
from tests.support.paths import (FIXTURES_ENV, RAW, REAL, ROOT, SHARED_FIXTURES, WHERE,  # noqa: F401
                                 fixtures_required, need, real_jobs)
from tests.support.aws import moto_endpoint, rule_fixture_dir, world  # noqa: F401  (fixtures, started on first use)
from tests.support.shared_runs import (dask_cluster, installed_wheel, real_report, sample_report,  # noqa: F401
                                     sample_rule_outputs)  # (fixtures)

LANES = ("unit", "integration", "e2e")
TESTS = Path(__file__).resolve().parent

# The user cache (S3 downloads, the trace cache: on by default) goes to a folder of this session's, never the
# real user's: every test that reads traces through the pipeline fills and reuses it, as users' runs do.
CACHE_HOME = tempfile.mkdtemp(prefix="reportgen-tests-cache-")
atexit.register(shutil.rmtree, CACHE_HOME, True)
os.environ["XDG_CACHE_HOME"] = CACHE_HOME
os.environ.pop("REPORTGEN_CACHE_DIR", None)
# The page cache is off: a test that patches what makes a page (a builder, the worker) must run the notebook, and
# must not leave its page for the next test of the same inputs. Its own tests turn it on (``monkeypatch.delenv``).
os.environ["REPORTGEN_PAGE_CACHE"] = "0"


def pytest_report_header(config):
    """Say up front where the fixtures are, so a run that skips their tests says why."""
    if SHARED_FIXTURES.is_dir():
        return f"reportgen fixtures: {SHARED_FIXTURES}"
    return f"reportgen fixtures: none ({WHERE}); the tests that need them are skipped"


def lane_of(path: Path) -> str | None:
    """The lane a test file is in: the first folder under tests/, when it is one of LANES."""
    try:
        first = Path(path).resolve().relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return None
    return first if first in LANES else None


def pytest_collection_modifyitems(config, items):
    """Mark every test with its lane; name the files that are in no lane (they run with the whole suite
    only, and belong in one: docs/testing.md says which)."""
    outside = set()
    for item in items:
        lane = lane_of(item.path)
        if lane is None:
            outside.add(str(Path(item.path).resolve().relative_to(ROOT)))
        else:
            item.add_marker(getattr(pytest.mark, lane))
    config.stash[_OUTSIDE] = sorted(outside)


_OUTSIDE = pytest.StashKey[list]()


class XdistLanes:
    """Under pytest-xdist the workers collect, not this process: the files in no lane are read from the test
    ids each worker collected, so the summary line below names them there too."""

    def __init__(self, config):
        self.config = config

    def pytest_xdist_node_collection_finished(self, node, ids):
        files = {nodeid.split("::", 1)[0] for nodeid in ids}
        outside = {name for name in files if lane_of(ROOT / name) is None}
        self.config.stash[_OUTSIDE] = sorted(set(self.config.stash.get(_OUTSIDE, [])) | outside)


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist") and getattr(config.option, "numprocesses", None):
        config.pluginmanager.register(XdistLanes(config), "reportgen-xdist-lanes")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    outside = config.stash.get(_OUTSIDE, [])
    if outside:
        terminalreporter.write_line(f"reportgen: {len(outside)} test file(s) in no lane (tests/unit, tests/integration, "
                                    f"tests/e2e; see docs/testing.md): {', '.join(outside)}", yellow=True)
