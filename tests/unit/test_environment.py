"""One place validates the environment values (``reportgen.environment``): a ``REPORTGEN_*`` size or count,
or a ``TZ``, that cannot be used is one line naming it, exit 2, before any work.

Before: ``REPORTGEN_STREAM_TRACE_MB=inf`` and ``REPORTGEN_XSPACE_MAX_MB=inf`` raised OverflowError inside a
trace read (exit 3), ``REPORTGEN_MAX_JSON_MB=inf`` at import, a typo was taken silently as the default,
and ``TZ=UTC+25`` raised wherever a local time was made.
"""

from __future__ import annotations

import time

import pytest

from reportgen import cli, environment
from reportgen.errors import InputError
from reportgen.readers.tick_table import spill_budget_bytes
from reportgen.readers.trace_cache import trace_cache_for
from reportgen.readers.xspace_trace import max_bytes as xspace_max_bytes
from reportgen.traces.read import stream_bytes

# what each reader asks, by variable: the reader's own call must say the same as the command line
READERS = {"REPORTGEN_STREAM_TRACE_MB": stream_bytes, "REPORTGEN_XSPACE_MAX_MB": xspace_max_bytes,
           "REPORTGEN_TABLES_MEMORY_MB": spill_budget_bytes,
           "REPORTGEN_MAX_JSON_MB": lambda: environment.megabytes("REPORTGEN_MAX_JSON_MB"),
           "REPORTGEN_CACHE_MAX_MB": lambda: trace_cache_for().max_bytes}
BAD_SIZES = ["inf", "-inf", "nan", "-1", "64MB", "1e400", "0x40"]


@pytest.mark.parametrize("value", BAD_SIZES)
@pytest.mark.parametrize("name", sorted(environment.SIZES_MB))
def test_a_bad_size_is_one_line_exit_2_before_any_work(tmp_path, monkeypatch, capsys, name, value):
    monkeypatch.setenv(name, value)
    assert cli.main(["check", str(tmp_path / "no-such-report.json")]) == 2  # the file is never looked at
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"reportgen: error: {name}={value!r}: not a size in MB (a number from 0 to {environment.MAX_MB}, "
                   f"e.g. {environment.SIZES_MB[name]}); unset it for the default"]
    with pytest.raises(InputError, match=name):
        READERS[name]()


@pytest.mark.parametrize("name", sorted(environment.SIZES_MB))
def test_good_sizes_are_used(monkeypatch, name):
    monkeypatch.setenv(name, "1.5")
    assert READERS[name]() == 3 << 19
    monkeypatch.setenv(name, " ")
    assert READERS[name]() == environment.SIZES_MB[name] << 20
    monkeypatch.delenv(name)
    assert READERS[name]() == environment.SIZES_MB[name] << 20


@pytest.mark.parametrize("value, ok", [("0", False), ("two", False), ("1e3", False), ("99999", False),
                                       ("4", True), ("", True)])
def test_counts(monkeypatch, value, ok):
    monkeypatch.setenv("REPORTGEN_DASK_DUCKDB_THREADS", value)
    if ok:
        assert environment.count("REPORTGEN_DASK_DUCKDB_THREADS") == int(value or 1)
    else:
        with pytest.raises(InputError, match="REPORTGEN_DASK_DUCKDB_THREADS=.*not a whole number from 1 to 4096"):
            environment.check()


@pytest.fixture
def time_zone(monkeypatch):
    def use(value: str) -> None:
        monkeypatch.setenv("TZ", value)
        time.tzset()
    yield use
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("value", ["UTC+25", "UTC+24", "XYZ-24:30"])
def test_an_unusable_time_zone_is_one_line_exit_2(tmp_path, capsys, time_zone, value):
    time_zone(value)
    assert cli.main(["check", str(tmp_path / "no-such-report.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"reportgen: error: TZ={value!r}: not a usable time zone"), err


@pytest.mark.parametrize("value", ["UTC", "UTC+23", "<+0530>-5:30", "Europe/Berlin", "Nowhere/Made_Up"])
def test_usable_time_zones_pass(time_zone, value):
    """glibc reads an unknown zone name as UTC: a local time exists, so nothing to refuse."""
    time_zone(value)
    environment.check()
