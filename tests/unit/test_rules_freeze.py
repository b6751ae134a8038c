"""The rules start with the profile's data out of the cyclic collector's scans where the process froze its imports
(``garbage_collector.freeze_long_lived_objects``): reportgen's own command line; a caller's collector is untouched."""

from __future__ import annotations

import gc

import pytest

from reportgen import engine
from reportgen.garbage_collector import freeze_long_lived_objects


@pytest.fixture
def collector_restored():
    frozen_before = gc.get_freeze_count()
    assert frozen_before == 0  # the test process never froze: each test starts from an unfrozen collector
    yield
    gc.unfreeze()


def test_a_process_that_did_not_freeze_its_imports_is_left_alone(collector_restored):
    data = [[i] for i in range(1000)]  # tracked containers
    assert freeze_long_lived_objects() is False
    assert gc.get_freeze_count() == 0 and gc.is_tracked(data)


def test_after_the_imports_froze_what_is_alive_now_is_frozen_too(collector_restored):
    gc.freeze()  # as the command line's freeze_imported_objects
    imports = gc.get_freeze_count()
    data = [[i] for i in range(1000)]  # the profile's data: 1,001 containers made after the imports
    assert freeze_long_lived_objects() is True
    assert gc.get_freeze_count() >= imports + 1001
    assert all(gc.is_tracked(x) for x in data)  # still tracked (freed by reference counting), just not scanned


def test_the_rules_freeze_when_they_start(monkeypatch):
    calls = []
    monkeypatch.setattr(engine, "freeze_long_lived_objects", lambda: calls.append("freeze") or False)

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        calls.append("task")
        raise Stop

    monkeypatch.setattr(engine, "_run_task", stop)
    with pytest.raises(Stop):
        engine._evaluate(None, None, None, threads=1, timeline=False)
    assert calls == ["freeze", "task"]  # before the first rule
