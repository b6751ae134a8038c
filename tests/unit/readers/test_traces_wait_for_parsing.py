"""The traces thread starts its work once DuckDB parses the system metrics (``readers.ingest``): its Python
work (pandas' import first) would otherwise hold the GIL that the system reader needs to start its first
query. ``read_system`` sets the event as its first row query starts, and whatever happens after."""

import threading
import time

import pytest

from reportgen.problems import ProblemLog
from reportgen.readers import ingest
from reportgen.readers import system as sr
from reportgen.readers.system import read_system

from .test_readers import T, instant, write_sys


def test_read_system_sets_parsing_before_its_first_rows_are_handed_over(tmp_path, monkeypatch):
    for m in range(2):
        write_sys(tmp_path, T + 60 * m, [l for k in range(4) for l in instant(T + 60 * m + 0.5 * k)])
    parsing = threading.Event()
    seen = []
    real = sr._RowFeed._put
    monkeypatch.setattr(sr._RowFeed, "_put", lambda self, item: seen.append((item[0], parsing.is_set())) or real(self, item))
    data = read_system(tmp_path, ProblemLog(), parsing=parsing)
    assert seen[0] == ("rows", True) and parsing.is_set()
    assert list(data.nodes) == ["algo-1"] and data.nodes["algo-1"].values.shape == (8, 6)


def test_read_system_sets_parsing_when_it_fails(tmp_path, monkeypatch):
    write_sys(tmp_path, T, instant(T))
    parsing = threading.Event()
    monkeypatch.setattr(sr.SystemReader, "read", lambda self, files: (_ for _ in ()).throw(OSError("disk gone")))
    with pytest.raises(OSError):
        read_system(tmp_path, ProblemLog(), parsing=parsing)
    assert parsing.is_set()


@pytest.mark.parametrize("fails", [False, True])
def test_the_traces_start_after_the_system_reader_says_it_parses(tmp_path, monkeypatch, fails):
    from reportgen.readers import framework

    order = []

    def system(raw_root, problems, *, parsing=None, **kw):
        time.sleep(0.2)  # the traces thread is running by now, and must still be waiting
        order.append("system parses")
        if fails:
            raise OSError("no system metrics")
        parsing.set()
        time.sleep(0.1)
        order.append("system done")
        return "tables"

    def read_framework(raw_root, problems, stop=None):
        order.append("traces start")
        return "events"

    monkeypatch.setattr(ingest, "read_system_metrics", system)
    monkeypatch.setattr(framework, "read_framework", read_framework)
    if fails:
        with pytest.raises(OSError):
            ingest._read_both(tmp_path, ProblemLog(), None, None, None)
        assert order[0] == "system parses"
    else:
        assert ingest._read_both(tmp_path, ProblemLog(), None, None, None) == ("tables", "events", None)
        assert order == ["system parses", "traces start", "system done"]
