"""The page cache (render/page_cache.py): the key changes with every input of the page and with nothing else; an
entry gives back the page and report.json byte for byte, each run with its own time; a damaged, foreign or
non-regular entry is never trusted nor followed; the forecast tells a run whose page is kept."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from reportgen.pipeline import CostOptions, GenerateOptions, SourceOptions
from reportgen.readers.trace_cache import TraceCache, evict
from reportgen.render import page_cache
from reportgen.render.html import Page
from reportgen.render.page_cache import (cached_page, code_roots, expects_hit, fixed_generation_time,
                                         generation_time, load_page, page_cache_for, page_entry_path, page_key,
                                         prune_hints, source_stamp, sources_stamp, store_page, tree_digest)
from reportgen.resources import notebook_path, plotly_js_gzip, template_dir

NOW = "2031-02-03 04:05 UTC"


@pytest.fixture
def work(tmp_path) -> Path:
    """A run's work folder holding its rule outputs (``analysis/profiler-reports``) and an extra beside them."""
    folder = tmp_path / "work"
    rules = folder / "analysis" / "profiler-reports"
    rules.mkdir(parents=True)
    (rules / "LowGPUUtilization.json").write_text('{"RuleTriggered": 0}')
    (rules / "CPUBottleneck.json").write_text('{"RuleTriggered": 1}')
    (folder / "analysis" / "kineto.json").write_text('{"ranks": {}}')
    return folder


def _parameters(work: Path, **changes) -> dict:
    base = {"source": str(work / "analysis" / "profiler-reports"), "output_dir": str(work), "job_name": "job",
            "standalone": True, "notes": [], "description": "d", "incomplete": False, "source_label": "src",
            "cost": {}}
    return {**base, **changes}


ENV = {"REPORTGEN_CACHE_DIR": "/x", "TZ": "UTC"}


def test_the_key_is_the_same_for_the_same_inputs_wherever_the_work_folder_lies(work, tmp_path):
    key = page_key(_parameters(work), work, ENV)
    assert key is not None and len(key) == 64
    other = tmp_path / "other-work"
    shutil.copytree(work, other)
    assert page_key(_parameters(other), other, ENV) == key


@pytest.mark.parametrize("change", ["rule byte", "extra beside", "new rule file", "parameter", "notes", "env",
                                    "tz", "source outside the work folder"])
def test_every_input_of_the_page_changes_the_key(work, tmp_path, change):
    key = page_key(_parameters(work), work, ENV)
    parameters, env = _parameters(work), dict(ENV)
    rules = work / "analysis" / "profiler-reports"
    if change == "rule byte":
        (rules / "CPUBottleneck.json").write_text('{"RuleTriggered": 2}')
    elif change == "extra beside":
        (work / "analysis" / "kineto.json").write_text('{"ranks": {"0": {}}}')
    elif change == "new rule file":
        (rules / "Dataloader.json").write_text("{}")
    elif change == "parameter":
        parameters["job_name"] = "job2"
    elif change == "notes":
        parameters["notes"] = ["one note"]
    elif change == "env":
        env["REPORTGEN_MAX_JSON_MB"] = "12"
    elif change == "tz":
        env["TZ"] = "Europe/Paris"
    else:
        outside = tmp_path / "user-folder"
        shutil.copytree(work, outside)
        parameters["source"] = str(outside / "analysis" / "profiler-reports")
    assert page_key(parameters, work, env) not in (None, key)


def test_the_cache_settings_and_the_work_folder_are_not_keyed(work):
    key = page_key(_parameters(work), work, ENV)
    env = {**ENV, "REPORTGEN_CACHE_DIR": "/elsewhere", "REPORTGEN_CACHE_MAX_MB": "5", "REPORTGEN_NOTEBOOK_PROCESS": "0",
           "REPORTGEN_DIGEST_MEMO": "0"}
    assert page_key(_parameters(work, output_dir="/tmp/somewhere"), work, env) == key


def test_a_prices_file_is_keyed_by_content(work, tmp_path):
    prices = tmp_path / "prices.toml"
    prices.write_text("[a]\n")
    cost = {"instance_type": "ml.p3.2xlarge", "instance_count": 1, "region": None, "prices_file": str(prices),
            "instance_from": "command line"}
    key = page_key(_parameters(work, cost=cost), work, ENV)
    prices.write_text("[b]\n")
    assert page_key(_parameters(work, cost=cost), work, ENV) not in (None, key)
    prices.unlink()
    assert page_key(_parameters(work, cost=cost), work, ENV) is None  # cannot be told: no page kept


def test_no_key_without_rule_outputs_or_for_a_fifo_among_them(work, tmp_path):
    assert page_key(_parameters(work, source=str(tmp_path / "absent")), work, ENV) is None
    assert page_key(_parameters(work, source=""), work, ENV) is None
    os.mkfifo(work / "analysis" / "profiler-reports" / "Dataloader.json")
    assert page_key(_parameters(work), work, ENV) is None  # and no hang on the FIFO


def test_the_code_digest_covers_templates_notebooks_and_plotly(tmp_path):
    roots = code_roots()
    for part in (template_dir() / "blocks" / "header.html.j2", notebook_path()):
        assert any(part.resolve().is_relative_to(root) for root in roots), part
    assert plotly_js_gzip()  # in the package, one of the roots
    copy = tmp_path / "templates"
    shutil.copytree(template_dir(), copy)
    before = tree_digest((copy,))
    header = copy / "blocks" / "header.html.j2"
    header.write_text(header.read_text() + " ")
    assert tree_digest((copy,)) != before


def test_the_code_digest_remembered_reads_no_byte_of_unchanged_code(tmp_path, monkeypatch):
    """The code's files' digests from the cache folder's memo (readers/digest_memo.py): the same tree digest as
    every file hashed, a next run (a fresh memo read from disk) hashes none, and a file changed since is hashed
    again and changes the digest."""
    import time

    from reportgen.readers import digest_memo
    from reportgen.readers.digest_memo import RACY_NS, DigestMemo

    copy = tmp_path / "templates"
    shutil.copytree(template_dir(), copy)
    memo_folder = tmp_path / "cache"
    memo_folder.mkdir()
    later = lambda: time.time_ns() + 10 * RACY_NS  # noqa: E731 - every file safely older than its hashing
    hashed = tree_digest((copy,))
    assert tree_digest((copy,), DigestMemo(memo_folder, clock=later)) == hashed  # hashed and remembered
    files = sum(1 for path in copy.rglob("*") if path.is_file())
    assert (memo_folder / digest_memo.MEMO_NAME).stat().st_size == files * digest_memo.RECORD

    def refuse(*args, **kwargs):
        raise AssertionError("a remembered code file was read")
    with monkeypatch.context() as patched:
        patched.setattr(digest_memo, "hash_file", refuse)
        patched.setattr(page_cache, "file_digest", refuse)
        assert tree_digest((copy,), DigestMemo(memo_folder, clock=later)) == hashed
    header = copy / "blocks" / "header.html.j2"
    header.write_text(header.read_text() + " ")
    changed = tree_digest((copy,), DigestMemo(memo_folder, clock=later))
    assert changed != hashed and changed == tree_digest((copy,))


PH = "reportgen-time-" + "0" * 32


def test_an_entry_gives_back_page_and_json_byte_for_byte(cache):
    html = f"<p>Generated {PH}</p>\udcff é"  # a lone surrogate (a name that was not UTF-8) comes back as it was
    assert store_page(cache, "k" * 64, PH, html, f'{{"generated_at": "{PH}"}}')
    assert load_page(cache, "k" * 64) == (html, f'{{"generated_at": "{PH}"}}', PH)


def test_an_entry_whose_placeholder_is_no_placeholder_is_not_trusted(cache):
    store_page(cache, "f" * 64, "e", "<p>Generated e</p>", "{}")  # whole, but its "e" would become the time
    assert load_page(cache, "f" * 64) is None and not page_entry_path(cache, "f" * 64).exists()


@pytest.mark.parametrize("damage", ["truncated", "flipped byte", "foreign key", "empty", "no header"])
def test_a_damaged_entry_is_removed_and_missed(cache, damage):
    store_page(cache, "a" * 64, PH, "<p>page PH</p>", "{}")
    where = page_entry_path(cache, "a" * 64)
    raw = where.read_bytes()
    if damage == "truncated":
        where.write_bytes(raw[:-5])
    elif damage == "flipped byte":
        where.write_bytes(raw[:-3] + bytes([raw[-3] ^ 1]) + raw[-2:])
    elif damage == "foreign key":
        store_page(cache, "b" * 64, PH, "<p>other PH</p>", "{}")
        os.replace(page_entry_path(cache, "b" * 64), where)
    elif damage == "empty":
        where.write_bytes(b"")
    else:
        where.write_bytes(b"<html>")
    assert load_page(cache, "a" * 64) is None
    assert not where.exists()


def test_a_link_or_fifo_under_an_entry_name_is_neither_followed_nor_replaced(cache, tmp_path):
    outside = tmp_path / "outside"
    store_page(cache, "c" * 64, PH, "<p>PH</p>", "{}")
    os.replace(page_entry_path(cache, "c" * 64), outside)  # a whole, valid entry, but outside the folder
    link = page_entry_path(cache, "c" * 64)
    link.symlink_to(outside)
    assert load_page(cache, "c" * 64) is None
    assert not store_page(cache, "c" * 64, PH, "<p>new</p>", "{}")
    assert link.is_symlink() and outside.read_bytes().endswith(b"<p>PH</p>{}")
    fifo = page_entry_path(cache, "d" * 64)
    os.mkfifo(fifo)
    assert load_page(cache, "d" * 64) is None  # no hang
    assert not store_page(cache, "d" * 64, PH, "<p>new</p>", "{}")
    assert fifo.exists() and not fifo.is_file()


def test_a_read_only_cache_keeps_nothing(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    assert not store_page(TraceCache(folder, 1 << 30, writable=False), "e" * 64, PH, "<p/>", "{}")
    assert list(folder.iterdir()) == []


def test_pages_are_under_the_folder_bound(cache):
    store_page(cache, "1" * 64, PH, "x" * 5000, "{}")
    old = page_entry_path(cache, "1" * 64)
    os.utime(old, (1, 1))
    store_page(cache, "2" * 64, PH, "y" * 5000, "{}")
    assert evict(TraceCache(cache.folder, 6000)) == 1
    assert not old.exists() and page_entry_path(cache, "2" * 64).exists()


def _maker(work: Path, calls: list, html: str = "<p>Generated {t}</p><p>{job}</p>", with_time: bool = True):
    def make(placeholder):
        calls.append(placeholder)
        when = placeholder if placeholder is not None else generation_time()
        (work / "report.json").write_text(json.dumps({"generator": {"generated_at": when if with_time else "x"}}))
        return Page(html.format(t=when, job=len(calls)))
    return make


def test_a_second_run_serves_the_first_runs_bytes_with_its_own_time(cache, work, tmp_path):
    calls: list = []
    with fixed_generation_time(NOW):
        first = cached_page(_maker(work, calls), _parameters(work), work, cache, print)
    first_json = (work / "report.json").read_text()
    assert first.html == f"<p>Generated {NOW}</p><p>1</p>" and NOW in first_json
    assert calls[0].startswith("reportgen-time-")  # made with the placeholder, the time put in after
    other = tmp_path / "work2"
    shutil.copytree(work, other)
    (other / "report.json").unlink()
    said: list = []
    with fixed_generation_time("2032-01-01 00:00 UTC"):
        second = cached_page(_maker(other, calls), _parameters(other), other, cache, said.append)
    assert len(calls) == 1 and "page cache" in said[0]  # no notebook executed
    assert second.html == first.html.replace(NOW, "2032-01-01 00:00 UTC")
    assert (other / "report.json").read_text() == first_json.replace(NOW, "2032-01-01 00:00 UTC")
    cached_page(_maker(other, calls), _parameters(other, job_name="other"), other, cache, said.append)
    assert len(calls) == 2  # a changed parameter: made again


def test_a_page_without_the_placeholder_or_with_its_notebook_is_not_kept(cache, work):
    calls: list = []
    cached_page(_maker(work, calls, with_time=False), _parameters(work), work, cache, print)
    assert list(cache.folder.iterdir()) == []  # made where the placeholder could not reach: not kept

    def with_notebook(placeholder):
        (work / "report.json").write_text(json.dumps({"t": placeholder}))
        return Page(f"<p>{placeholder}</p>", notebook=f'{{"t": "{placeholder}"}}')
    with fixed_generation_time(NOW):
        page = cached_page(with_notebook, _parameters(work), work, cache, print)
    assert page.notebook == f'{{"t": "{NOW}"}}' and list(cache.folder.iterdir()) == []


def test_no_cache_makes_the_page_with_the_real_time(work):
    calls: list = []
    with fixed_generation_time(NOW):
        page = cached_page(_maker(work, calls), _parameters(work), work, None, print)
    assert calls == [None] and page.html.startswith(f"<p>Generated {NOW}")


def test_the_forecast_follows_the_source_and_the_kept_page(cache, work, tmp_path):
    source = tmp_path / "traces"
    source.mkdir()
    (source / "a.pt.trace.json").write_text("{}")
    stamp = source_stamp(str(source), "settings")
    assert stamp is not None and source_stamp(str(source), "other settings") != stamp
    assert not expects_hit(cache, stamp)
    calls: list = []
    cached_page(_maker(work, calls), _parameters(work), work, cache, print, stamp)
    assert expects_hit(cache, stamp)
    (source / "a.pt.trace.json").write_text("{ }")
    assert source_stamp(str(source), "settings") != stamp
    for entry in cache.folder.glob("*.page"):
        entry.unlink()
    assert not expects_hit(cache, stamp)
    assert source_stamp("s3://bucket/job", "settings") is None
    assert source_stamp("~no-such-user-x/job", "settings") is None  # no error: the run says what is wrong
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert source_stamp(str(loop), "settings") is None


def test_only_the_most_recent_forecasts_are_kept(cache):
    for n in range(5):
        hint = cache.folder / f"{n:064x}.page-hint"
        hint.write_text("0" * 64)
        os.utime(hint, (1000 + n, 1000 + n))
    (cache.folder / "x.page").write_text("not a hint")
    assert prune_hints(cache, keep=2) == 3
    assert sorted(p.name for p in cache.folder.iterdir()) == [f"{3:064x}.page-hint", f"{4:064x}.page-hint", "x.page"]


def test_the_page_cache_follows_the_trace_caches_switches(tmp_path):
    assert page_cache_for(tmp_path, {}) is not None
    assert page_cache_for(tmp_path, {"REPORTGEN_NO_CACHE": "1"}) is None
    assert page_cache_for(tmp_path, {"REPORTGEN_PAGE_CACHE": "0"}) is None


@pytest.mark.parametrize("options", [GenerateOptions(source=SourceOptions(trace_cache=False)),
                                     GenerateOptions(keep_notebook=Path("nb.ipynb")), GenerateOptions(debug=True)])
def test_no_page_cache_with_no_cache_keep_notebook_or_debug(options, tmp_path, monkeypatch):
    from reportgen import pipeline

    monkeypatch.delenv("REPORTGEN_PAGE_CACHE", raising=False)
    monkeypatch.setenv("REPORTGEN_CACHE_DIR", str(tmp_path))
    assert pipeline.page_cache_of(str(tmp_path), options) == (None, None)
    cache, stamp = pipeline.page_cache_of(str(tmp_path), GenerateOptions(cost=CostOptions(instance="x")))
    assert cache is not None and stamp is not None


def test_the_time_placeholder_nests_and_is_restored():
    with fixed_generation_time("A"):
        with fixed_generation_time(None):
            assert generation_time() == "A"
        with fixed_generation_time("B"):
            assert generation_time() == "B"
        assert generation_time() == "A"
    assert generation_time() != "A" and page_cache.TIME_FORMAT.endswith("UTC")


def test_a_users_folder_rewritten_while_the_page_is_made_keeps_no_page(cache, work, tmp_path):
    user = tmp_path / "user"
    shutil.copytree(work / "analysis", user)
    parameters = _parameters(work, source=str(user / "profiler-reports"))

    def make(placeholder):
        (user / "profiler-reports" / "CPUBottleneck.json").write_text('{"RuleTriggered": 0}')  # a writer meanwhile
        (work / "report.json").write_text(json.dumps({"t": placeholder}))
        return Page(f"<p>{placeholder}</p>")
    cached_page(make, parameters, work, cache, print)
    assert list(cache.folder.iterdir()) == []
    calls: list = []
    cached_page(_maker(work, calls), parameters, work, cache, print)
    assert len(list(cache.folder.glob("*.page"))) == 1  # left alone, the same folder's page is kept


def _compare_parameters(work: Path, **changes) -> dict:
    """compare's notebook parameters: each side's rule outputs in the run's work folder (A/, B/)."""
    side = {"name": "job", "source": "src", "description": "d", "instance_type": None, "instance_count": None,
            "instance_from": "", "region": None, "notes": []}
    base = {"a": {**side, "rule_dir": str(work / "A" / "analysis" / "profiler-reports")},
            "b": {**side, "rule_dir": str(work / "B" / "analysis" / "profiler-reports")},
            "prices_file": "", "output_dir": str(work), "standalone": True, "force": False}
    return {**base, **changes}


@pytest.fixture
def compare_work(work, tmp_path) -> Path:
    folder = tmp_path / "compare-work"
    for side in ("A", "B"):
        shutil.copytree(work, folder / side)
    return folder


@pytest.mark.parametrize("change", ["a's rule byte", "b's rule byte", "b's extra", "a's parameter", "force",
                                    "sides swapped", "prices"])
def test_a_comparisons_key_covers_both_sides_and_nothing_of_the_work_folder(compare_work, tmp_path, change):
    key = page_key(_compare_parameters(compare_work), compare_work, ENV)
    assert key is not None and key != page_key(_parameters(compare_work / "A"), compare_work / "A", ENV)
    other = tmp_path / "other-compare-work"
    shutil.copytree(compare_work, other)
    assert page_key(_compare_parameters(other), other, ENV) == key
    parameters = _compare_parameters(compare_work)
    if change == "a's rule byte":
        (compare_work / "A" / "analysis" / "profiler-reports" / "CPUBottleneck.json").write_text('{"RuleTriggered": 2}')
    elif change == "b's rule byte":
        (compare_work / "B" / "analysis" / "profiler-reports" / "CPUBottleneck.json").write_text('{"RuleTriggered": 2}')
    elif change == "b's extra":
        (compare_work / "B" / "analysis" / "kineto.json").write_text('{"ranks": {"0": {}}}')
    elif change == "a's parameter":
        parameters["a"]["instance_type"] = "ml.p3.2xlarge"
    elif change == "force":
        parameters["force"] = True
    elif change == "sides swapped":
        parameters["a"], parameters["b"] = parameters["b"], parameters["a"]
    else:
        prices = tmp_path / "prices.toml"
        prices.write_text("[a]\n")
        parameters["prices_file"] = str(prices)
        with_prices = page_key(parameters, compare_work, ENV)
        prices.write_text("[b]\n")
        assert with_prices not in (None, key, page_key(parameters, compare_work, ENV))
    assert page_key(parameters, compare_work, ENV) not in (None, key)


def test_no_comparison_key_without_both_sides_rule_outputs(compare_work):
    parameters = _compare_parameters(compare_work)
    del parameters["b"]
    assert page_key(parameters, compare_work, ENV) is None
    parameters = _compare_parameters(compare_work)
    parameters["b"]["rule_dir"] = str(compare_work / "missing")
    assert page_key(parameters, compare_work, ENV) is None


def test_the_forecast_of_several_sources_follows_each(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "x.json").write_text("1")
    (b / "y.json").write_text("2")
    stamp = sources_stamp([str(a), str(b)], "s")
    assert stamp is not None and stamp == sources_stamp([str(a), str(b)], "s")
    assert stamp not in (sources_stamp([str(b), str(a)], "s"), sources_stamp([str(a), str(b)], "t"))
    (b / "y.json").write_text("22")
    assert sources_stamp([str(a), str(b)], "s") != stamp
    assert sources_stamp([str(a), "s3://bucket/job"], "s") is None
