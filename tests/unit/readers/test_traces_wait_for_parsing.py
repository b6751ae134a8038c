"""The system read shares the cores with the traces thread (``readers.system.SharedCores``): the traces thread
starts its work once DuckDB parses the system metrics (its Python work, pandas' import first, would otherwise
hold the GIL that the system reader needs to start its first query), and DuckDB runs with one thread fewer
until the traces are read (one row query at a time instead of two). ``read_system`` sets ``parsing`` once its first row query is bound (DuckDB's bind
waits for pandas' module lock while the traces thread imports pandas), and whatever happens after."""

import threading
import time

import pytest

from reportgen.problems import ProblemLog
from reportgen.readers import ingest
from reportgen.readers import system as sr
from reportgen.readers.system import DUCKDB_THREADS, SharedCores, read_system

from .test_readers import T, instant, write_sys


def test_read_system_sets_parsing_before_its_first_rows_are_handed_over(tmp_path, monkeypatch):
    for m in range(2):
        write_sys(tmp_path, T + 60 * m, [l for k in range(4) for l in instant(T + 60 * m + 0.5 * k)])
    sharing = SharedCores()
    seen = []
    real = sr._RowFeed._finish
    monkeypatch.setattr(sr._RowFeed, "_finish",
                        lambda self, task, item: seen.append((item[0], sharing.parsing.is_set())) or real(self, task, item))
    data = read_system(tmp_path, ProblemLog(), sharing=sharing)
    assert seen[0] == ("rows", True) and sharing.parsing.is_set()
    assert list(data.nodes) == ["algo-1"] and data.nodes["algo-1"].values.shape == (8, 6)


def test_a_row_query_says_it_is_bound_between_its_binding_and_its_run():
    events = []

    class Relation:
        def fetchnumpy(self):
            events.append("run")
            return {"h": [7]}

    class Cursor:
        def __init__(self, fail):
            self.fail = fail

        def sql(self, sql, params):
            events.append(("bind", params["files"]))
            if self.fail:
                raise RuntimeError("Binder Error")
            return Relation()

    assert sr._rows(Cursor(False), "SELECT 1", ["a.json"], lambda: events.append("bound")) == {"h": [7]}
    assert events == [("bind", ["a.json"]), "bound", "run"]
    events.clear()
    with pytest.raises(RuntimeError, match="Binder"):
        sr._rows(Cursor(True), "SELECT 1", ["b.json"], lambda: events.append("bound"))
    assert events == [("bind", ["b.json"]), "bound"]  # the traces thread is not left waiting


def test_read_system_sets_parsing_when_it_fails(tmp_path, monkeypatch):
    write_sys(tmp_path, T, instant(T))
    sharing = SharedCores()
    monkeypatch.setattr(sr.SystemReader, "read", lambda self, files: (_ for _ in ()).throw(OSError("disk gone")))
    with pytest.raises(OSError):
        read_system(tmp_path, ProblemLog(), sharing=sharing)
    assert sharing.parsing.is_set() and not sharing.alone.is_set()


@pytest.mark.parametrize("fails", [False, True])
def test_the_traces_start_after_the_system_reader_says_it_parses(tmp_path, monkeypatch, fails):
    from reportgen.readers import framework

    order = []

    def system(raw_root, problems, *, sharing=None, **kw):
        time.sleep(0.2)  # the traces thread is running by now, and must still be waiting
        order.append("system parses")
        if fails:
            raise OSError("no system metrics")
        sharing.parsing.set()
        assert sharing.alone.wait(5)  # set once the traces thread is done
        order.append("system alone")
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
        assert order == ["system parses", "traces start", "system alone"]


def test_duckdb_runs_one_query_fewer_until_the_caller_is_alone(tmp_path, monkeypatch):
    """Before ``alone``, one feed thread queries; from it on, every feed thread, each query on one DuckDB thread."""
    for node in ("algo-1", "algo-2", "algo-3"):
        write_sys(tmp_path, T, [l for k in range(4) for l in instant(T + 0.5 * k, node=node)], node=node)
    sharing = SharedCores()
    ran = []  # (feed thread, alone when its row query started, DuckDB's threads)
    third = threading.Event()
    real = sr._rows

    def rows(cursor, sql, files, bound=None):
        threads = int(cursor.execute("SELECT current_setting('threads')").fetchall()[0][0])
        ran.append((threading.current_thread().name, sharing.alone.is_set(), threads))
        if len(ran) == 2:
            sharing.alone.set()  # the other thread is done: the next query runs beside this one
            assert third.wait(5)  # ... started by the other feed thread while this one still runs
        if len(ran) == 3:
            third.set()
        return real(cursor, sql, files, bound)

    monkeypatch.setattr(sr, "_rows", rows)
    taken = []
    real_grouped = sr.SystemReader._grouped
    monkeypatch.setattr(sr.SystemReader, "_grouped", lambda self, r: taken.append(real_grouped(self, r)) or taken[-1])
    data = read_system(tmp_path, ProblemLog(), sharing=sharing)
    assert len(data.nodes) == 3 and taken == [True] * 3  # every node read by the row queries
    assert [(name, alone) for name, alone, _ in ran[:2]] == [("reportgen-duckdb-0", False)] * 2
    assert all(threads == 1 for *_, threads in ran)
    assert DUCKDB_THREADS == 2 and ran[2][0] == "reportgen-duckdb-1"  # the second thread starts once alone
    ran.clear()
    second = threading.Event()

    def rows_at_once(cursor, sql, files, bound=None):
        ran.append(threading.current_thread().name)
        if len(ran) == 2:
            second.set()
        assert second.wait(5)  # the first query still runs when the second starts
        return real(cursor, sql, files, bound)

    monkeypatch.setattr(sr, "_rows", rows_at_once)
    read_system(tmp_path, ProblemLog())  # alone from the start: both threads query at once
    assert sorted(ran[:2]) == ["reportgen-duckdb-0", "reportgen-duckdb-1"]
