"""The integration lane runs the whole pipeline in this process; its pages are made here too
(``page_in_this_process``: the notebook's imports once per session, not once per run in a worker process).
The worker itself is tested in tests/e2e/test_page_worker.py, which also proves the two pages the same."""

from __future__ import annotations

import pytest

from tests.support.shared_runs import page_in_this_process


@pytest.fixture(autouse=True)
def page_made_here():
    with page_in_this_process():
        yield
